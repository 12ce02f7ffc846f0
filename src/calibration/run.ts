/**
 * An identification run: one joint at a time, the others holding the robot's calibration pose, each joint through
 * its excitation (excitation.ts), every command and reading logged. The rig is the bus and a clock: the real
 * backend on the wall clock (the CLI), or an emulated bus on a manual clock (tests, bench).
 */
import type { MotorBus } from '../core/backend.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { userToJoint } from '../core/frames.ts';
import { degToPosition, modelSpec, positionToDeg } from '../dynamixel/registers.ts';
import { type Command, type Excitation, excitation } from './excitation.ts';

const DEG = Math.PI / 180;

export interface Rig {
  readonly bus: MotorBus;
  /** Seconds on the robot's clock. */
  now(): number;
  /** Lets `seconds` of robot time pass. */
  wait(seconds: number): Promise<void>;
  /** True once the run should stop (Ctrl-C): the run returns what it has, the caller leaves the servos safe. */
  stopped?(): boolean;
}

export interface MotorLog {
  readonly motor: string;
  readonly id: number;
  /** The other joints' raw angles (degrees, by joint name) while this one moved: the load's geometry. */
  readonly pose: Readonly<Record<string, number>>;
  /** Samples: time from the excitation's start (s), the command, the position read (raw degrees). */
  readonly t: number[];
  readonly command: Command[];
  readonly position: number[];
  readonly segments: readonly [string, number, number][];
  /** Where the joint was told to start (raw degrees). */
  readonly start: number;
  /**
   * Every joint's reading (raw degrees, by joint name) as the excitation began: where the settle left them, which
   * from a folded robot is not the pose told (the Ergo Jr's m2 stays 6-9 degrees short). Absent in older logs.
   */
  readonly startReadings?: Readonly<Record<string, number>>;
}

/**
 * The pose the other joints hold during a run, user degrees (arms clear of the table and of each other): the Torso's
 * arms 20 degrees out, or the bust's lean and a released shoulder bring a forearm onto its base (clearance.ts).
 */
export const CALIBRATION_POSES: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  'ergo-jr': { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
  torso: { l_shoulder_x: 20, r_shoulder_x: -20 },
  humanoid: {},
};

/** Sample period of the log (s): the sync loop's 50 Hz. */
export const SAMPLE = 0.02;
/** Seconds the robot settles in the calibration pose before a joint's excitation starts. */
export const SETTLE = 1.5;

/**
 * The gains of a run, whatever a server left in the servos: P 32 (AX: compliance slope 32, margin 1), no I or D, no
 * speed profile. The forward model (forward.ts) sets the same. (Stiffer holding joints were tried: P 128 halved the
 * bias their servos put on a one-joint fit but doubled its residual; decision 0065.)
 */
export async function runGains(bus: MotorBus, config: RobotConfig): Promise<void> {
  const of = (kind: 'pid' | 'compliance') =>
    config.motors.filter((m) => modelSpec(m.model).control === kind).map((m) => m.id);
  const all = <T>(ids: number[], v: T) => new Map(ids.map((id) => [id, v]));
  if (of('pid').length) await bus.write('pid', all(of('pid'), [0, 0, 32]));
  if (of('compliance').length) {
    await bus.write('compliance_slope', all(of('compliance'), [32, 32]));
    await bus.write('compliance_margin', all(of('compliance'), [1, 1]));
  }
  await bus.write(
    'moving_speed',
    all(
      config.motors.map((m) => m.id),
      0,
    ),
  );
}

/** The calibration pose in raw degrees by motor name, within each motor's angle limits. */
export function calibrationPose(config: RobotConfig): Record<string, number> {
  const userPose = CALIBRATION_POSES[config.name] ?? config.startup.pose;
  const pose: Record<string, number> = {};
  for (const m of config.motors) {
    const [lo, hi] = m.angleLimit;
    const user = userPose[m.name] ?? config.startup.pose[m.name] ?? 0;
    pose[m.name] = Math.min(hi, Math.max(lo, userToJoint(m, user) / DEG));
  }
  return pose;
}

/** What a joint's run does: the pose every joint is put in (raw degrees by name), and the joint's excitation. */
export function runPlan(
  config: RobotConfig,
  motorName: string,
  chosen?: Excitation,
): { pose: Record<string, number>; ex: Excitation } {
  const motor = config.motors.find((m) => m.name === motorName)!;
  const pose = calibrationPose(config);
  return { pose, ex: chosen ?? excitation(pose[motor.name]!, motor.angleLimit) };
}

/**
 * Runs `motorName`'s excitation (by default the widest; clearance.ts chooses one the twin predicts clear of
 * contacts) from the calibration pose, logging every sample.
 */
export async function runMotor(
  rig: Rig,
  config: RobotConfig,
  motorName: string,
  onProgress?: (line: string) => void,
  chosen?: Excitation,
): Promise<MotorLog> {
  const motor = config.motors.find((m) => m.name === motorName)!;
  const spec = modelSpec(motor.model);
  const { pose, ex } = runPlan(config, motorName, chosen);
  const ids = config.motors.map((m) => m.id);
  const goals = new Map(config.motors.map((m) => [m.id, degToPosition(modelSpec(m.model), pose[m.name]!)]));
  goals.set(motor.id, degToPosition(spec, ex.start));
  await runGains(rig.bus, config);
  await rig.bus.write('torque_limit', new Map(ids.map((id) => [id, 1023])));
  await rig.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
  await rig.bus.write('goal_position', goals);
  await rig.wait(SETTLE);
  const settled = await rig.bus.read(ids, 'present_position');
  // A motor that did not answer is left out: the fit's twin puts it where it was told to be.
  const startReadings = Object.fromEntries(
    config.motors.flatMap((m) => {
      const raw = settled.get(m.id);
      return typeof raw === 'number' ? [[m.name, positionToDeg(modelSpec(m.model), raw)]] : [];
    }),
  );
  const log: MotorLog = {
    motor: motor.name,
    id: motor.id,
    pose,
    t: [],
    command: [],
    position: [],
    segments: ex.segments,
    start: ex.start,
    startReadings,
  };
  let last: Command | undefined;
  const steps = Math.round(ex.duration / SAMPLE);
  for (let k = 0; k < steps; k++) {
    if (rig.stopped?.()) break;
    const t = k * SAMPLE;
    const cmd = ex.at(t);
    if (!last || cmd.torqueLimit !== last.torqueLimit)
      await rig.bus.write('torque_limit', new Map([[motor.id, cmd.torqueLimit]]));
    if (!last || cmd.torqueOn !== last.torqueOn)
      await rig.bus.write('torque_enable', new Map([[motor.id, cmd.torqueOn ? 1 : 0]]));
    if (cmd.torqueOn && (!last || cmd.goal !== last.goal || !last.torqueOn))
      await rig.bus.write('goal_position', new Map([[motor.id, degToPosition(spec, cmd.goal)]]));
    last = cmd;
    const read = (await rig.bus.read([motor.id], 'present_position')).get(motor.id) as number;
    log.t.push(t);
    log.command.push(cmd);
    log.position.push(positionToDeg(spec, read));
    if (k % Math.round(5 / SAMPLE) === 0)
      onProgress?.(`${motor.name}: ${Math.round((100 * k) / steps)} % of ${ex.duration.toFixed(0)} s`);
    await rig.wait(SAMPLE);
  }
  onProgress?.(`${motor.name}: run done, ${log.t.length} samples`);
  return log;
}

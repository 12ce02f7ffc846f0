/**
 * The guard (`--guard`, with `--shadow`): before a move starts on the real robot, a scratch physics world predicts
 * it from the measured state, as fast as it can run, and a move whose prediction brings two links, or a link and the
 * table, into a contact that was not there at its start (pressing: the solver keeps them a fraction of a millimetre
 * apart, so any impulse counts) is refused (409) before anything is sent to the servos.
 * The servos' registers (torque, speed, limits, gains) are the twin's, which takes every write the real ones take.
 */
import type { ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { conflict } from '../core/errors.ts';
import { orientRaw } from '../core/frames.ts';
import type { Motor } from '../robot/motor.ts';
import type { MovePath } from '../robot/trajectory.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { type BusRegister, degToPosition } from '../dynamixel/registers.ts';
import { SimBackend } from '../sim/backend.ts';
import type { FirmwareState } from '../sim/servo.ts';
import { newPressingContact, pairKey } from '../sim/contacts.ts';
import type { MotorBus } from '../core/backend.ts';
import type { ShadowTwin } from './twin.ts';

/** The registers the scratch world takes from the twin before each prediction. */
const COPIED: readonly BusRegister[] = [
  'torque_enable',
  'moving_speed',
  'torque_limit',
  'pid',
  'compliance_margin',
  'compliance_slope',
  'goal_position',
];
/** The prediction runs on past the move's end this long (s): a joint still settling may yet touch. */
const SETTLE_S = 0.2;

export interface PredictedContact {
  /** The two links (or a link and "table"). */
  readonly links: readonly [string, string];
  /** Seconds after the move's start. */
  readonly time: number;
  readonly depthM: number;
  /** Every motor's position then, degrees (user frame). */
  readonly positions: Readonly<Record<string, number>>;
}

export interface Prediction {
  readonly contact: PredictedContact | undefined;
  /** Wall time the prediction took, ms (the bench's figure), and the CPU time of this thread meanwhile. */
  readonly wallMs: number;
  readonly cpuMs: number;
}

export interface GuardOptions {
  readonly config: RobotConfig;
  readonly urdf: UrdfRobot;
  /** The servos' own parameters (a calibration), by motor id: the scratch twin predicts that robot. */
  readonly servoParams?: ReadonlyMap<number, ServoParams>;
  /** Where the measured pose and the servos' registers come from (twinState: the shadow twin's). */
  readonly state: GuardState;
  readonly motors: readonly Motor[];
  /** The control loop's rate (Hz): the goals are written at its ticks, as the Robot does. */
  readonly rate: number;
  readonly log: (line: string) => void;
}

/** The state a prediction starts from. */
export interface GuardState {
  /** The measured angles, raw degrees by motor id. */
  pose(): ReadonlyMap<number, number>;
  /** The servos' registers as the real ones hold them. */
  readonly registers: Pick<MotorBus, 'read'>;
  /**
   * The servos' firmware state no register shows (the I term, the gearbox's hold), by motor id: the twin's estimate
   * of the real ones'. Without it the scratch servos start fresh, and a held joint breaks away sooner than the real.
   */
  firmware?(): ReadonlyMap<number, FirmwareState>;
  /** The loads the real servos last reported, percent of stall in the raw frame, by motor id: they pin the I terms. */
  loads?(): ReadonlyMap<number, number>;
}

/**
 * The shadow twin's view: the last measured angle and load of each motor (the twin's angle where none; the
 * comparator's are in the user's frame, the pose raw), its servos' registers and firmware state.
 */
export function twinState(twin: ShadowTwin, motors: readonly Motor[]): GuardState {
  return {
    registers: twin.registers,
    firmware: () => twin.firmwareStates(),
    pose() {
      const readings = new Map(twin.comparator.status().map((c) => [c.motor, c]));
      const pose = new Map<number, number>();
      for (const m of motors) {
        const c = readings.get(m.name);
        const deg = c?.real?.position ?? c?.twin?.position;
        if (deg !== undefined) pose.set(m.id, m.toRaw(deg));
      }
      return pose;
    },
    loads() {
      const byName = new Map(motors.map((m) => [m.name, m]));
      const loads = new Map<number, number>();
      for (const c of twin.comparator.status()) {
        const m = byName.get(c.motor);
        // The readings are in the user's frame: an indirect motor's load has the other sign on the bus.
        if (m && c.real) loads.set(m.id, orientRaw(m.frame, c.real.load));
      }
      return loads;
    },
  };
}

const round = (v: number, digits: number) => Number(v.toFixed(digits));

export class MoveGuard {
  readonly #opts: GuardOptions;
  readonly #scratch: SimBackend;
  #opened: Promise<void> | undefined;
  /** One prediction at a time: they share the scratch world. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(opts: GuardOptions) {
    this.#opts = opts;
    this.#scratch = new SimBackend({
      config: opts.config,
      urdf: opts.urdf,
      speed: 'manual',
      servoParams: opts.servoParams,
    });
  }

  open(): Promise<void> {
    return (this.#opened ??= this.#scratch.open());
  }

  async close(): Promise<void> {
    await this.#queue.catch(() => {});
    await this.#scratch.close();
  }

  /** Predicts `path` from the measured pose, its motors stiff, the other motors holding their goals. */
  predict(path: MovePath): Promise<Prediction> {
    const run = this.#queue.then(() => this.#predict(path));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Refuses (409) a move whose prediction collides; `force` skips the prediction, which the log says. Resolves when
   * the move may start.
   */
  async check(path: MovePath, force: boolean): Promise<void> {
    const what = path.what;
    if (force) {
      this.#opts.log(`guard: skipped (?force=true) for ${what}`);
      return;
    }
    const { contact } = await this.predict(path);
    if (!contact) return;
    const [a, b] = contact.links;
    const where = Object.entries(contact.positions)
      .map(([name, deg]) => `${name} ${deg}`)
      .join(', ');
    throw conflict(
      `the guard predicts ${a} touching ${b} ${contact.time} s into this move`,
      'choose targets clear of the table and of the robot itself (?force=true moves anyway)',
      `${what}; contact of ${a} and ${b} at ${contact.time} s, ` +
        `${round(contact.depthM * 1000, 1)} mm deep, the motors then at (degrees) ${where}`,
    );
  }

  async #predict(path: MovePath): Promise<Prediction> {
    const started = performance.now();
    const cpu = process.cpuUsage();
    await this.open();
    const sim = this.#scratch;
    const { state, motors, rate } = this.#opts;
    const ids = motors.map((m) => m.id);
    const measured = state.pose();
    sim.simulation.setPose(measured);
    for (const reg of COPIED) {
      try {
        await sim.bus.write(reg, await state.registers.read(ids, reg));
      } catch {
        // A register this robot's servos lack (pid on the AX-12): the model's default stays.
      }
    }
    // The move's motors are stiff (a goto refuses compliant ones; a replay makes its motors stiff first).
    await sim.bus.write('torque_enable', new Map(path.motors.map((m) => [m.id, 1])));
    const firmware = state.firmware?.();
    if (firmware) sim.takeFirmwareStates(firmware);
    const loads = state.loads?.();
    if (loads) sim.matchLoads(loads);
    // The contacts of the measured pose (a step finds them: the arm resting on the base, the base on the table) are
    // not the move's.
    await sim.advance(sim.dt);
    const t0 = sim.clock.now();
    const before = new Set(sim.simulation.contacts().map((c) => pairKey(c.a, c.b)));
    const from = new Map(path.motors.map((m) => [m, m.toUser(measured.get(m.id) ?? 0)]));
    const tick = 1 / rate;
    const end = path.duration + SETTLE_S;
    let contact: PredictedContact | undefined;
    // A control tick at a time, as the Robot writes goals; contacts checked at every physics step, so that the time of
    // a contact is the step's (a tick's 20 ms would be a third of a goto's approach to the table).
    for (let t = 0; t < end && !contact; t = sim.clock.now() - t0) {
      const goals = new Map<number, number>();
      for (const [m, user] of path.goalsAt(Math.min(t, path.duration), from)) goals.set(m.id, m.toRaw(user));
      await sim.bus.write('goal_position', this.#counts(goals));
      const tickEnd = t0 + t + tick - sim.dt / 2;
      while (!contact && sim.clock.now() < tickEnd) {
        await sim.advance(sim.dt);
        const hit = newPressingContact(sim.simulation.contacts(), before);
        if (hit)
          contact = {
            links: [hit.a, hit.b],
            time: round(sim.clock.now() - t0, 3),
            depthM: hit.depth,
            positions: this.#positions(),
          };
      }
    }
    const used = process.cpuUsage(cpu);
    return { contact, wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
  }

  /** Raw degrees by id -> goal_position counts. */
  #counts(goals: ReadonlyMap<number, number>): Map<number, number> {
    const out = new Map<number, number>();
    for (const m of this.#opts.motors) {
      const deg = goals.get(m.id);
      if (deg !== undefined) out.set(m.id, degToPosition(m.spec, deg));
    }
    return out;
  }

  #positions(): Record<string, number> {
    const angles = this.#scratch.jointAngles();
    const out: Record<string, number> = {};
    for (const m of this.#opts.motors)
      out[m.name] = round(m.toUser(((angles.get(m.name) ?? 0) * 180) / Math.PI), 1);
    return out;
  }
}

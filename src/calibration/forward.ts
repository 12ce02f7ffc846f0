/**
 * The fit's forward model: the twin itself (the whole robot in Rapier at the manual clock), with candidate
 * parameters on the motor under test and the run's logged commands replayed on it, as the run sent them. Its
 * readings are the encoder's as present_position has it (the joint's angle plus the offset, taken at the start of the
 * step: decisions/0073), unquantised, so the fit's error is smooth.
 */
import type { ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { degToPosition, modelSpec } from '../dynamixel/registers.ts';
import { SimBackend } from '../sim/backend.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import type { Command } from './excitation.ts';
import { rmsOf } from './least-squares.ts';
import { type MotorLog, SAMPLE, SETTLE, runGains } from './run.ts';

/** Encoder readings (raw degrees) at the log's samples [from, to), the twin's servo of `log.id` with `p`. */
export async function simulate(
  config: RobotConfig,
  urdf: UrdfRobot,
  p: ServoParams,
  log: MotorLog,
  from = 0,
  to = log.t.length,
  /** Called at each sample before its command (clearance.ts watches the contacts). */
  onSample?: (k: number, sim: SimBackend) => void,
  /** The other servos' parameters (a first pass's fit of them); absent: their models'. */
  others?: ReadonlyMap<number, ServoParams>,
): Promise<Float64Array> {
  const motor = config.motors.find((m) => m.id === log.id)!;
  const spec = modelSpec(motor.model);
  const sim = new SimBackend({
    config,
    urdf,
    speed: 'manual',
    servoParams: new Map([...(others ?? []), [log.id, p]]),
    cameraRealism: false,
  });
  await sim.open();
  try {
    const ids = config.motors.map((m) => m.id);
    // Where the run told every joint to be (the goals), the joint under test at its start.
    const pose = new Map(config.motors.map((m) => [m.id, log.pose[m.name]!]));
    pose.set(log.id, log.start);
    // Every joint where the run read it as the excitation began (else where it was told to be); from a later
    // sample, the joint under test where it was read then, at rest.
    const at = new Map(config.motors.map((m) => [m.id, log.startReadings?.[m.name] ?? pose.get(m.id)!]));
    if (from > 0) at.set(log.id, log.position[from]!);
    sim.simulation.setPose(at);
    await runGains(sim.bus, config);
    await sim.bus.write('torque_limit', new Map(ids.map((id) => [id, 1023])));
    await sim.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
    const goals = new Map(
      config.motors.map((m) => [m.id, degToPosition(modelSpec(m.model), pose.get(m.id)!)]),
    );
    if (from > 0) goals.set(log.id, degToPosition(spec, log.command[from - 1]!.goal));
    await sim.bus.write('goal_position', goals);
    await sim.advance(from === 0 ? SETTLE : 0.2);
    const out = new Float64Array(to - from);
    let last: Command | undefined = from > 0 ? log.command[from - 1] : undefined;
    for (let k = from; k < to; k++) {
      onSample?.(k, sim);
      const cmd = log.command[k]!;
      if (!last || cmd.torqueLimit !== last.torqueLimit)
        await sim.bus.write('torque_limit', new Map([[log.id, cmd.torqueLimit]]));
      if (!last || cmd.torqueOn !== last.torqueOn)
        await sim.bus.write('torque_enable', new Map([[log.id, cmd.torqueOn ? 1 : 0]]));
      if (cmd.torqueOn && (!last || cmd.goal !== last.goal || !last.torqueOn))
        await sim.bus.write('goal_position', new Map([[log.id, degToPosition(spec, cmd.goal)]]));
      last = cmd;
      out[k - from] = sim.encoderDeg(log.id);
      await sim.advance(SAMPLE);
    }
    return out;
  } finally {
    await sim.close();
  }
}

/** RMS (degrees) of the twin with `servos` (by id, the logged motor's among them) replaying the whole run. */
export async function replayRms(
  config: RobotConfig,
  urdf: UrdfRobot,
  log: MotorLog,
  servos: ReadonlyMap<number, ServoParams>,
): Promise<number> {
  const replay = await simulate(config, urdf, servos.get(log.id)!, log, 0, log.t.length, undefined, servos);
  for (let k = 0; k < replay.length; k++) replay[k] = replay[k]! - log.position[k]!;
  return rmsOf(replay);
}

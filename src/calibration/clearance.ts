/**
 * A joint's excitation checked on the twin before the robot runs it (issue 45: "away from contacts, the guard's
 * prediction checks each"): the excitation replayed from the calibration pose with the models' defaults, and the
 * widest swing whose prediction brings no two links, nor a link and the table, into a contact that was not there
 * when it started; then, at that swing, the widest chirp whose prediction the other joints' starting a tenth of a
 * degree elsewhere does not change (a chirp no twin can replay teaches the fit nothing: decision 0085).
 */
import type { RobotConfig } from '../config/robot-config.ts';
import { newPressingContact, pairKey } from '../sim/contacts.ts';
import { servoModel } from '../sim/servo-models.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { type Excitation, MAX_AMPLITUDE_DEG, excitation } from './excitation.ts';
import { servoParamsAt } from './fit.ts';
import { simulate } from './forward.ts';
import { rmsOf } from './least-squares.ts';
import { type MotorLog, SAMPLE, calibrationPose } from './run.ts';

/** The swings tried, widest first (degrees each way). */
export const AMPLITUDES_DEG = [MAX_AMPLITUDE_DEG, 14, 8, 4] as const;

export interface PredictedTouch {
  readonly links: readonly [string, string];
  /** Seconds into the excitation. */
  readonly time: number;
}

/** A chirp narrowed: how far its prediction moved with the other joints disturbed (degrees RMS). */
export interface UnsteadyChirp {
  readonly chirpAmplitudeDeg: number;
  readonly spreadDeg: number;
}

/** The chirps tried at a swing, widest first (fractions of the swing). */
export const CHIRP_FRACTIONS = [1, 0.5, 0.25] as const;
/** Degrees each other joint starts away from where the run reads it, alternately below and above. */
export const DISTURB_DEG = 0.1;
/** Degrees RMS a chirp's prediction may move with that disturbance (decision 0085). */
export const STEADY_CHIRP_DEG = 0.1;

export interface ClearExcitation {
  readonly excitation: Excitation;
  readonly amplitudeDeg: number;
  readonly chirpAmplitudeDeg: number;
  /** What the wider swings would have touched, widest first. */
  readonly refused: readonly (PredictedTouch & { amplitudeDeg: number })[];
  /** The wider chirps at the chosen swing, and how far each moved. */
  readonly unsteady: readonly UnsteadyChirp[];
}

/** The log a run of `ex` on `motorName` would write, its readings left at 0: what the forward model replays. */
export function plannedLog(config: RobotConfig, motorName: string, ex: Excitation): MotorLog {
  const motor = config.motors.find((m) => m.name === motorName)!;
  const n = Math.round(ex.duration / SAMPLE);
  const t = Array.from({ length: n }, (_, k) => k * SAMPLE);
  return {
    motor: motorName,
    id: motor.id,
    pose: calibrationPose(config),
    t,
    command: t.map((s) => ex.at(s)),
    position: t.map(() => 0),
    segments: ex.segments,
    start: ex.start,
  };
}

const defaultsOf = (config: RobotConfig, motorName: string) =>
  servoParamsAt(
    servoModel(modelSpec(config.motors.find((m) => m.name === motorName)!.model)),
    [0, 0, 0, 0, 0],
  );

/** The first new contact the twin predicts while `ex` runs on `motorName`, or undefined. */
export async function predictTouch(
  config: RobotConfig,
  urdf: UrdfRobot,
  motorName: string,
  ex: Excitation,
): Promise<PredictedTouch | undefined> {
  return (await predictRun(config, urdf, motorName, ex)).touch;
}

/** The twin's run of `ex` on `motorName` with the models' figures: its readings, and its first new contact. */
async function predictRun(
  config: RobotConfig,
  urdf: UrdfRobot,
  motorName: string,
  ex: Excitation,
): Promise<{ touch?: PredictedTouch; readings: Float64Array }> {
  const log = plannedLog(config, motorName, ex);
  let before: Set<string> | undefined;
  let touch: PredictedTouch | undefined;
  const readings = await simulate(
    config,
    urdf,
    defaultsOf(config, motorName),
    log,
    0,
    log.t.length,
    (k, sim) => {
      const contacts = sim.simulation.contacts();
      // The pose's own contacts (the robot on the table, a part resting on another) are not the excitation's.
      if (!before) before = new Set(contacts.map((c) => pairKey(c.a, c.b)));
      const hit = touch ? undefined : newPressingContact(contacts, before);
      if (hit) touch = { links: [hit.a, hit.b], time: Number((k * SAMPLE).toFixed(2)) };
    },
  );
  return { touch, readings };
}

/**
 * How far the twin's prediction of `ex`'s chirps moves (degrees RMS, the worse chirp) when every other joint starts
 * DISTURB_DEG away from the pose, alternately below and above: where a run's chirp swings the rest of the robot, a
 * difference no reading resolves grows into one the fit cannot replay (the Torso's bust_y: 0.5 degree at +-20).
 */
export async function chirpSpread(
  config: RobotConfig,
  urdf: UrdfRobot,
  motorName: string,
  ex: Excitation,
  readings: Float64Array,
): Promise<number> {
  const log = plannedLog(config, motorName, ex);
  const disturbed: MotorLog = {
    ...log,
    startReadings: Object.fromEntries(
      config.motors.map((m, i) => [
        m.name,
        m.name === motorName ? log.start : log.pose[m.name]! + (i % 2 ? DISTURB_DEG : -DISTURB_DEG),
      ]),
    ),
  };
  const moved = await simulate(config, urdf, defaultsOf(config, motorName), disturbed);
  let worst = 0;
  for (const [name, from, to] of log.segments) {
    if (!name.startsWith('chirp')) continue;
    const [i, j] = [Math.round(from / SAMPLE), Math.min(moved.length, Math.round(to / SAMPLE))];
    const diff = Float64Array.from({ length: j - i }, (_, k) => moved[i + k]! - readings[i + k]!);
    worst = Math.max(worst, rmsOf(diff));
  }
  return worst;
}

/** `motorName`'s excitation from the calibration pose, swinging at most `amplitudeDeg` each way. */
export function swingExcitation(
  config: RobotConfig,
  motorName: string,
  amplitudeDeg: number,
  chirpAmplitudeDeg = amplitudeDeg,
): Excitation {
  const motor = config.motors.find((m) => m.name === motorName)!;
  return excitation(
    calibrationPose(config)[motorName]!,
    motor.angleLimit,
    5,
    amplitudeDeg,
    chirpAmplitudeDeg,
  );
}

/** What a run says of a swing it narrowed: the contact the twin predicts for it. */
export function refusedSwingLine(motor: string, r: PredictedTouch & { amplitudeDeg: number }): string {
  return (
    `${motor}: a swing of +-${r.amplitudeDeg} deg would bring ${r.links.join(' and ')} into contact ` +
    `${r.time} s in (the twin's prediction)`
  );
}

/** What a run says of a chirp it narrowed. */
export function unsteadyChirpLine(motor: string, u: UnsteadyChirp): string {
  return (
    `${motor}: a chirp of +-${u.chirpAmplitudeDeg} deg would not replay (the twin's prediction moves ` +
    `${u.spreadDeg.toFixed(2)} deg RMS with the other joints ${DISTURB_DEG} deg elsewhere): narrowed`
  );
}

/** What a run says of a joint it skipped. */
export const skippedSwingLine = (motor: string) =>
  `${motor}: skipped, every swing touches; its figures stay the model's defaults`;

/**
 * The widest excitation of `motorName` the twin predicts clear, with the widest chirp it predicts steady (the
 * narrowest tried when none is); undefined when even the narrowest swing touches.
 */
export async function clearExcitation(
  config: RobotConfig,
  urdf: UrdfRobot,
  motorName: string,
): Promise<ClearExcitation | { refused: ClearExcitation['refused']; excitation?: undefined }> {
  const refused: (PredictedTouch & { amplitudeDeg: number })[] = [];
  swings: for (const amplitudeDeg of AMPLITUDES_DEG) {
    const unsteady: UnsteadyChirp[] = [];
    for (const [i, fraction] of CHIRP_FRACTIONS.entries()) {
      const chirpAmplitudeDeg = amplitudeDeg * fraction;
      const ex = swingExcitation(config, motorName, amplitudeDeg, chirpAmplitudeDeg);
      const { touch, readings } = await predictRun(config, urdf, motorName, ex);
      if (touch) {
        refused.push({ ...touch, amplitudeDeg });
        continue swings;
      }
      const spreadDeg = await chirpSpread(config, urdf, motorName, ex, readings);
      if (spreadDeg <= STEADY_CHIRP_DEG || i === CHIRP_FRACTIONS.length - 1)
        return { excitation: ex, amplitudeDeg, chirpAmplitudeDeg, refused, unsteady };
      unsteady.push({ chirpAmplitudeDeg, spreadDeg });
    }
  }
  return { refused };
}

/**
 * A joint's excitation checked on the twin before the robot runs it (issue 45: "away from contacts, the guard's
 * prediction checks each"): the excitation replayed from the calibration pose with the models' defaults, and the
 * widest swing whose prediction brings no two links, nor a link and the table, into a contact that was not there
 * when it started.
 */
import type { RobotConfig } from '../config/robot-config.ts';
import { newPressingContact, pairKey } from '../sim/contacts.ts';
import { servoModel } from '../sim/servo-models.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { type Excitation, MAX_AMPLITUDE_DEG, excitation } from './excitation.ts';
import { servoParamsAt } from './fit.ts';
import { simulate } from './forward.ts';
import { type MotorLog, SAMPLE, calibrationPose } from './run.ts';

/** The swings tried, widest first (degrees each way). */
export const AMPLITUDES_DEG = [MAX_AMPLITUDE_DEG, 14, 8, 4] as const;

export interface PredictedTouch {
  readonly links: readonly [string, string];
  /** Seconds into the excitation. */
  readonly time: number;
}

export interface ClearExcitation {
  readonly excitation: Excitation;
  readonly amplitudeDeg: number;
  /** What the wider swings would have touched, widest first. */
  readonly refused: readonly (PredictedTouch & { amplitudeDeg: number })[];
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

/** The first new contact the twin predicts while `ex` runs on `motorName`, or undefined. */
export async function predictTouch(
  config: RobotConfig,
  urdf: UrdfRobot,
  motorName: string,
  ex: Excitation,
): Promise<PredictedTouch | undefined> {
  const log = plannedLog(config, motorName, ex);
  const model = servoModel(modelSpec(config.motors.find((m) => m.name === motorName)!.model));
  const defaults = servoParamsAt(model, [0, 0, 0, 0, 0]);
  let before: Set<string> | undefined;
  let touch: PredictedTouch | undefined;
  await simulate(config, urdf, defaults, log, 0, log.t.length, (k, sim) => {
    const contacts = sim.simulation.contacts();
    // The pose's own contacts (the robot on the table, a part resting on another) are not the excitation's.
    if (!before) before = new Set(contacts.map((c) => pairKey(c.a, c.b)));
    const hit = touch ? undefined : newPressingContact(contacts, before);
    if (hit) touch = { links: [hit.a, hit.b], time: Number((k * SAMPLE).toFixed(2)) };
  });
  return touch;
}

/** `motorName`'s excitation from the calibration pose, swinging at most `amplitudeDeg` each way. */
export function swingExcitation(config: RobotConfig, motorName: string, amplitudeDeg: number): Excitation {
  const motor = config.motors.find((m) => m.name === motorName)!;
  return excitation(calibrationPose(config)[motorName]!, motor.angleLimit, 5, amplitudeDeg);
}

/** What a run says of a swing it narrowed: the contact the twin predicts for it. */
export function refusedSwingLine(motor: string, r: PredictedTouch & { amplitudeDeg: number }): string {
  return (
    `${motor}: a swing of +-${r.amplitudeDeg} deg would bring ${r.links.join(' and ')} into contact ` +
    `${r.time} s in (the twin's prediction)`
  );
}

/** What a run says of a joint it skipped. */
export const skippedSwingLine = (motor: string) =>
  `${motor}: skipped, every swing touches; its figures stay the model's defaults`;

/** The widest excitation of `motorName` the twin predicts clear; undefined when even the narrowest touches. */
export async function clearExcitation(
  config: RobotConfig,
  urdf: UrdfRobot,
  motorName: string,
): Promise<ClearExcitation | { refused: ClearExcitation['refused']; excitation?: undefined }> {
  const refused: (PredictedTouch & { amplitudeDeg: number })[] = [];
  for (const amplitudeDeg of AMPLITUDES_DEG) {
    const ex = swingExcitation(config, motorName, amplitudeDeg);
    const touch = await predictTouch(config, urdf, motorName, ex);
    if (!touch) return { excitation: ex, amplitudeDeg, refused };
    refused.push({ ...touch, amplitudeDeg });
  }
  return { refused };
}

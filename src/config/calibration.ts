/**
 * The calibration file: what an identification run (src/calibration/) found out about one robot's servos, and what
 * the twin, shadow mode and the bus emulator load (docs/calibration.md). Each parameter is the servo model's own term
 * (src/sim/servo-models.ts) with its uncertainty; a parameter the run could not pin (notIdentifiable) carries the
 * fit's estimate while its sigma is under 100 %, else the model's default with no uncertainty (sigma null).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../core/atomic-file.ts';
import { ConfigError } from '../core/errors.ts';
import { MOTOR_MODELS } from '../dynamixel/registers.ts';
import type { RobotConfig } from './robot-config.ts';

/** A fitted figure: its value and one standard deviation (null: not identified, the model's default kept). */
const estimate = z.strictObject({
  value: z.number().refine(Number.isFinite, 'must be finite'),
  sigma: z.number().nonnegative().nullable(),
});

/** The friction terms of the servo model (FrictionParams) a run may identify; absent terms keep the model's. */
export const FRICTION_TERMS = ['kc', 'kv', 'kcs'] as const;
export type FrictionTerm = (typeof FRICTION_TERMS)[number];

const motorCalibration = z.strictObject({
  /** Servo id on the bus, and its firmware model: both must match the robot config. */
  id: z.number().int().min(0).max(252),
  model: z.enum(MOTOR_MODELS),
  /** Degrees the encoder reads above the joint (raw frame): encoder = joint + offset. */
  offset: estimate,
  /** Gearbox friction terms, absolute (N.m, N.m.s/rad), the model's own names. */
  friction: z.strictObject({ kc: estimate.optional(), kv: estimate.optional(), kcs: estimate.optional() }),
  /** Reflected motor inertia, kg.m^2. */
  armature: estimate,
  /** The firmware's effective error gain (the model's errorGain: duty per rad per unit of P). */
  gain: estimate,
  /** RMS position error (degrees) of the fitted twin on the logged run; null when not fitted. */
  residualRmsDeg: z.number().nonnegative().nullable(),
  /** Parameters the run did not pin to the tolerance, e.g. "armature" (docs/calibration.md: what value they carry). */
  notIdentifiable: z.array(z.string()).default([]),
  /** Why the fit left this motor's figures as they are, when it says (a run the twin did not reproduce). */
  note: z.string().optional(),
});

export const calibrationSchema = z.strictObject({
  schema: z.literal(1),
  /** The robot config's name this calibration belongs to. */
  robot: z.string().min(1),
  bus: z.strictObject({
    port: z.string(),
    baud: z.number().int().positive(),
    protocol: z.union([z.literal(1), z.literal(2)]),
  }),
  /** When the run was made (ISO 8601). */
  date: z.iso.datetime({ offset: true }),
  /** By motor name. */
  motors: z.record(z.string(), motorCalibration),
});

export type Calibration = z.infer<typeof calibrationSchema>;
export type MotorCalibration = z.infer<typeof motorCalibration>;
export type Estimate = z.infer<typeof estimate>;

/** Parses and checks a calibration against the robot it is loaded for; throws a one-line ConfigError. */
export function parseCalibration(data: unknown, config: RobotConfig, source: string): Calibration {
  const result = calibrationSchema.safeParse(data);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.length ? issue.path.join('.') : '(top level)';
    throw new ConfigError(field, issue.message, source);
  }
  const cal = result.data;
  if (cal.robot !== config.name)
    throw new ConfigError('robot', `calibration of "${cal.robot}", not of "${config.name}"`, source);
  for (const [name, m] of Object.entries(cal.motors)) {
    const motor = config.motors.find((c) => c.name === name);
    if (!motor)
      throw new ConfigError(
        `motors.${name}`,
        `unknown motor (${config.name} has no motor of that name)`,
        source,
      );
    if (motor.id !== m.id)
      throw new ConfigError(`motors.${name}.id`, `is ${m.id}, the robot config says ${motor.id}`, source);
    if (motor.model !== m.model)
      throw new ConfigError(
        `motors.${name}.model`,
        `is ${m.model}, the robot config says ${motor.model}`,
        source,
      );
  }
  return cal;
}

/** Reads a calibration file for `config`: a missing file, bad JSON or a mismatch is a ConfigError. */
export async function loadCalibration(file: string, config: RobotConfig): Promise<Calibration> {
  const full = path.resolve(file);
  let text: string;
  try {
    text = await readFile(full, 'utf8');
  } catch (err) {
    throw new ConfigError('--calibration', `cannot read ${full}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ConfigError('(file)', `not valid JSON: ${(err as Error).message}`, full);
  }
  return parseCalibration(data, config, full);
}

/** Writes a calibration atomically (an interrupted run leaves the old file or none, never half of one). */
export async function saveCalibration(file: string, cal: Calibration): Promise<void> {
  await writeFileAtomic(path.resolve(file), `${JSON.stringify(calibrationSchema.parse(cal), null, 2)}\n`);
}

/** Why a calibration run is refused on the sim backend (the CLI's refusal and the server's route say it). */
export const SIM_RUN_REFUSAL = {
  error: 'a calibration identifies a real robot (the twin already is its own model)',
  emulator: 'npm run emulator -- --robot=<r> --servo-params=<file>',
} as const;

/** What the servo physics takes from one motor's calibration (src/sim/servo.ts). */
export interface ServoParams {
  readonly offsetDeg: number;
  readonly armature: number;
  readonly errorGain: number;
  readonly friction: Partial<Record<FrictionTerm, number>>;
}

/** The servo parameters of a calibration, by motor id. */
export function servoParamsOf(cal: Calibration): Map<number, ServoParams> {
  const out = new Map<number, ServoParams>();
  for (const m of Object.values(cal.motors)) {
    const friction: Partial<Record<FrictionTerm, number>> = {};
    for (const t of FRICTION_TERMS) if (m.friction[t]) friction[t] = m.friction[t].value;
    out.set(m.id, {
      offsetDeg: m.offset.value,
      armature: m.armature.value,
      errorGain: m.gain.value,
      friction,
    });
  }
  return out;
}

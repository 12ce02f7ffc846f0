/**
 * The fit from a log the user already has (`npm run calibrate -- --from-log=<file>`): shadow mode's cycle log
 * (`--shadow-log`, src/shadow/cycle-log.ts). Every motor's logged commands are replayed on the twin, the motor under
 * test with candidate parameters; gain, armature and friction are fitted where its goal moved with the torque on.
 * The offset needs the excitation's slow approaches (decision 0062): a log has none, so it is left at the default.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { MotorCalibration, ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { ConfigError } from '../core/errors.ts';
import { degToPosition, modelSpec, positionResolution } from '../dynamixel/registers.ts';
import { SimBackend } from '../sim/backend.ts';
import { servoModel } from '../sim/servo-models.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import {
  beyondCount,
  MAX_RELATIVE_SIGMA,
  PRIOR_OFFSET_SIGMA_DEG,
  keptEstimate,
  round,
  servoParamsAt,
  stillSamples,
  uncertainty,
} from './fit.ts';
import { meanSquareOf, nelderMead, rmsOf } from './least-squares.ts';
import { runGains } from './run.ts';

/** A motor whose goal spans less than this (degrees) with the torque on was not excited: nothing to fit. */
export const MIN_EXCITATION_DEG = 5;
/** The log's samples are grouped by this many seconds for the uncertainty's clusters. */
const CLUSTER_S = 1;

const header = z.object({ shadowLog: z.literal(1), robot: z.string() }).strict();
const motorLine = z
  .object({ position: z.number().nullable(), goal: z.number(), torque: z.boolean(), limit: z.number() })
  .strict();
const cycleLine = z.object({ t: z.number(), motors: z.record(z.string(), motorLine) }).strict();

export interface CycleLogData {
  readonly t: number[];
  /** Per motor name, per sample. */
  readonly motors: Record<string, z.infer<typeof motorLine>[]>;
}

/** Reads a cycle log of `config`'s robot; a bad line is refused naming it (`<file>:<line>: <problem>`). */
export async function readCycleLog(file: string, config: RobotConfig): Promise<CycleLogData> {
  const lines = (await readFile(file, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  const parse = <T>(schema: z.ZodType<T>, i: number): T => {
    let value: unknown;
    try {
      value = JSON.parse(lines[i]!);
    } catch {
      throw new ConfigError(`${file}:${i + 1}`, 'not a JSON line');
    }
    const r = schema.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      throw new ConfigError(`${file}:${i + 1}`, `${issue.path.join('.') || '(line)'}: ${issue.message}`);
    }
    return r.data;
  };
  if (!lines.length) throw new ConfigError(file, 'empty: no shadow log header');
  const head = parse(header, 0);
  if (head.robot !== config.name)
    throw new ConfigError(file, `a shadow log of "${head.robot}", not of "${config.name}"`);
  const data: CycleLogData = { t: [], motors: Object.fromEntries(config.motors.map((m) => [m.name, []])) };
  for (let i = 1; i < lines.length; i++) {
    const line = parse(cycleLine, i);
    data.t.push(line.t);
    for (const m of config.motors) {
      const entry = line.motors[m.name];
      if (!entry) throw new ConfigError(`${file}:${i + 1}`, `motors.${m.name}: missing`);
      data.motors[m.name]!.push(entry);
    }
  }
  if (data.t.length < 2) throw new ConfigError(file, 'fewer than two cycles logged');
  return data;
}

/** The motor's encoder readings (raw degrees) with every logged command replayed on the twin, `p` on `motor`. */
export async function replayLog(
  config: RobotConfig,
  urdf: UrdfRobot,
  log: CycleLogData,
  motor: string,
  p: ServoParams,
): Promise<Float64Array> {
  const id = config.motors.find((m) => m.name === motor)!.id;
  return (await replayAll(config, urdf, log, new Map([[id, p]]), [motor])).get(motor)!;
}

/**
 * Every logged command replayed on the twin with `servoParams` (by id; a motor not in it: the model's defaults): the
 * encoder readings (raw degrees, unquantised) of the motors `read`, by name.
 */
export async function replayAll(
  config: RobotConfig,
  urdf: UrdfRobot,
  log: CycleLogData,
  servoParams: ReadonlyMap<number, ServoParams> | undefined,
  read: readonly string[] = config.motors.map((m) => m.name),
): Promise<Map<string, Float64Array>> {
  const sim = new SimBackend({ config, urdf, speed: 'manual', servoParams, cameraRealism: false });
  await sim.open();
  try {
    const first = (name: string) => log.motors[name]![0]!;
    sim.simulation.setPose(
      new Map(config.motors.map((m) => [m.id, first(m.name).position ?? first(m.name).goal])),
    );
    await runGains(sim.bus, config);
    const out = new Map(read.map((name) => [name, new Float64Array(log.t.length)]));
    const ids = new Map(read.map((name) => [name, config.motors.find((m) => m.name === name)!.id]));
    for (let k = 0; k < log.t.length; k++) {
      for (const m of config.motors) {
        const now = log.motors[m.name]![k]!;
        const before = k > 0 ? log.motors[m.name]![k - 1] : undefined;
        const spec = modelSpec(m.model);
        if (!before || now.limit !== before.limit)
          await sim.bus.write('torque_limit', new Map([[m.id, now.limit]]));
        if (!before || now.goal !== before.goal)
          await sim.bus.write('goal_position', new Map([[m.id, degToPosition(spec, now.goal)]]));
        if (!before || now.torque !== before.torque)
          await sim.bus.write('torque_enable', new Map([[m.id, now.torque ? 1 : 0]]));
      }
      // The encoder as present_position has it (a step older than the joint: decisions/0073).
      for (const [name, series] of out) series[k] = sim.encoderDeg(ids.get(name)!);
      if (k + 1 < log.t.length) await sim.advance(Math.max(0, log.t[k + 1]! - log.t[k]!));
    }
    return out;
  } finally {
    await sim.close();
  }
}

export interface LogFitResult {
  readonly calibration: MotorCalibration;
  readonly evaluations: number;
  /** Why each figure left at its default was not identified from this log. */
  readonly reasons: Readonly<Record<string, string>>;
}

/** Fits one motor from a cycle log: gain, armature, kv and kcs where the log excited them; the offset left. */
export async function fitFromLog(
  config: RobotConfig,
  urdf: UrdfRobot,
  log: CycleLogData,
  motor: string,
  budget = 40,
): Promise<LogFitResult> {
  const m = config.motors.find((x) => x.name === motor)!;
  const base = servoModel(modelSpec(m.model));
  const samples = log.motors[motor]!;
  const reasons: Record<string, string> = {
    kc: 'below anything a position log shows (1e-6 N.m)',
    offset:
      'the log has no slow approaches of a hold from both sides (docs/decisions/0062-offsets-from-approaches.md)',
  };
  const fitted = samples.flatMap((s, k) => (s.torque && s.position !== null ? [k] : []));
  const goals = fitted.map((k) => samples[k]!.goal);
  const span = goals.length ? Math.max(...goals) - Math.min(...goals) : 0;
  const d = (value: number) => ({ value, sigma: null });
  const calibration: MotorCalibration = {
    id: m.id,
    model: m.model,
    offset: d(0),
    friction: { kc: d(base.friction.kc), kv: d(base.friction.kv), kcs: d(base.friction.kcs) },
    armature: d(base.armature),
    gain: d(base.errorGain),
    residualRmsDeg: null,
    notIdentifiable: [],
  };
  if (span < MIN_EXCITATION_DEG) {
    const why = `its goal spanned ${span.toFixed(1)} degrees with the torque on (no excitation; ${MIN_EXCITATION_DEG} needed); the default kept`;
    for (const name of ['gain', 'armature', 'kv', 'kcs']) reasons[name] = why;
    return {
      calibration: { ...calibration, notIdentifiable: Object.keys(reasons) },
      evaluations: 0,
      reasons,
    };
  }
  const params = (x: readonly number[]) => servoParamsAt(base, x);
  let evaluations = 0;
  const errors = async (x: readonly number[]): Promise<Float64Array> => {
    evaluations++;
    const sim = await replayLog(config, urdf, log, motor, params(x));
    return Float64Array.from(fitted, (k) => sim[k]! - samples[k]!.position!);
  };
  // As the run's fit: a joint at rest's error within the logged count is no error to the fit, the spread read from
  // the plain errors (decision 0083).
  const halfCount = positionResolution(modelSpec(m.model)) / 2;
  const still = stillSamples(fitted.map((k) => samples[k]!.position!));
  const residuals = async (x: readonly number[]) => beyondCount(await errors(x), halfCount, still);
  const cost = async (x: readonly number[]) => meanSquareOf(await residuals(x));
  const x = await nelderMead(cost, [0, 0, 0, 0, 0], [0, 0.15, 0.3, 0.4, 0.3], budget);
  const r0 = await errors(x);
  const clusters = clustersOf(fitted.map((k) => log.t[k]!));
  const sigmas = await uncertainty(errors, x, r0, clusters, PRIOR_OFFSET_SIGMA_DEG);
  const p = params(x);
  const values = [0, p.errorGain, p.armature, p.friction.kv!, p.friction.kcs!];
  const defaults = [0, base.errorGain, base.armature, base.friction.kv, base.friction.kcs];
  const names = ['offset', 'gain', 'armature', 'kv', 'kcs'];
  const est = (i: number) => {
    if (sigmas[i]! <= MAX_RELATIVE_SIGMA)
      return { value: round(values[i]!), sigma: round(sigmas[i]! * values[i]!) };
    const kept = keptEstimate(i, values[i]!, sigmas[i]!, defaults[i]!);
    reasons[names[i]!] =
      `its uncertainty from this log is +-${Math.round(100 * sigmas[i]!)} % (identified: at most +-${100 * MAX_RELATIVE_SIGMA} %); ` +
      (kept.sigma === null ? 'the default kept' : 'its estimate kept');
    return kept;
  };
  const gain = est(1);
  const armature = est(2);
  const kv = est(3);
  const kcs = est(4);
  return {
    evaluations,
    reasons,
    calibration: {
      ...calibration,
      friction: { kc: calibration.friction.kc, kv, kcs },
      armature,
      gain,
      residualRmsDeg: round(rmsOf(r0)),
      notIdentifiable: Object.keys(reasons),
    },
  };
}

/** Consecutive samples within CLUSTER_S of each other's start: the uncertainty's clusters, as sample ranges. */
function clustersOf(times: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  let start = 0;
  for (let k = 1; k <= times.length; k++)
    if (k === times.length || times[k]! - times[start]! >= CLUSTER_S) {
      out.push([start, k]);
      start = k;
    }
  return out;
}

/**
 * The fit of every logged motor of a robot in two passes: each alone with the other servos at their models, then
 * each again with the others as the first pass found them. A one-joint fit sees the joints that hold the pose give
 * under its swing as their own servos do; with their models instead it moved the Ergo Jr m3's armature 19-23 % off
 * (seed 2: 0.1 % with the others' true servos), so the second pass gives it the best it knows of them (decision 0065).
 */
import { type Calibration, type ServoParams, servoParamsOf } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { servoModel } from '../sim/servo-models.ts';
import { defaultCalibration } from './defaults.ts';
import {
  type FitResult,
  MAX_RELATIVE_SIGMA,
  type NeighbourSigmas,
  PRIOR_LOG_SIGMA,
  fitMotor,
  keptEstimate,
  round,
} from './fit.ts';
import type { MotorLog } from './run.ts';

export interface FitRobotOptions {
  /** 2 (default): a second pass with the others' first-pass figures; 1: each motor alone. */
  readonly passes?: 1 | 2;
  readonly budget?: Parameters<typeof fitMotor>[3];
  /** Offsets the table's touches found (touch.ts, by motor name): held in the fits, and the others' in the twin. */
  readonly touched?: ReadonlyMap<string, { value: number; sigma: number }>;
  /** After each motor's fit, with its pass. */
  readonly onFitted?: (motor: string, result: FitResult, pass: number) => void;
}

/** Fills `into` (a calibration, its other motors left as they are) with the fit of each log's motor. */
export async function fitRobot(
  config: RobotConfig,
  urdf: UrdfRobot,
  logs: readonly MotorLog[],
  into: Calibration,
  opts: FitRobotOptions = {},
): Promise<Map<string, FitResult>> {
  const results = new Map<string, FitResult>();
  const passes = logs.length > 1 ? (opts.passes ?? 2) : 1;
  for (let pass = 1; pass <= passes; pass++) {
    // The second pass's view of the others is the first pass's file: what the twin would load.
    const known = pass === 1 ? touchedParams(config, opts.touched) : servoParamsOf(into);
    for (const log of logs) {
      const others = known && new Map([...known].filter(([id]) => id !== log.id));
      // The last pass carries how well the others are known into each figure's sigma (the first's are replaced).
      const neighbours = pass === passes ? neighbourSigmas(config, into, log.id) : undefined;
      const fitted = await fitMotor(config, urdf, log, opts.budget, {
        others,
        touched: opts.touched?.get(log.motor),
        neighbours,
      });
      const first = results.get(log.motor);
      const result = first ? widened(fitted, first, config, log.motor) : fitted;
      results.set(log.motor, result);
      opts.onFitted?.(log.motor, result, pass);
    }
    for (const [motor, result] of results) into.motors[motor] = result.calibration;
  }
  return results;
}

/**
 * How well `cal` knows each servo but `ownId`: each figure's relative sigma as the sigma of its log, the prior's
 * (PRIOR_LOG_SIGMA) where it has none (a model's default, or a figure not pinned and set back to it).
 */
export function neighbourSigmas(
  config: RobotConfig,
  cal: Calibration,
  ownId: number,
): Map<number, NeighbourSigmas> {
  const out = new Map<number, NeighbourSigmas>();
  for (const m of config.motors) {
    const c = cal.motors[m.name];
    if (m.id === ownId || !c) continue;
    const log = (e: { value: number; sigma: number | null } | undefined, prior: number) =>
      e?.sigma == null || !(e.value > 0) ? prior : Math.log1p(e.sigma / e.value);
    out.set(m.id, {
      gain: log(c.gain, PRIOR_LOG_SIGMA.gain),
      armature: log(c.armature, PRIOR_LOG_SIGMA.armature),
      kv: log(c.friction.kv, PRIOR_LOG_SIGMA.kv),
      kcs: log(c.friction.kcs, PRIOR_LOG_SIGMA.kcs),
    });
  }
  return out;
}

/** The servos' models with the touched offsets: the first pass's view of the joints that hold the pose. */
function touchedParams(
  config: RobotConfig,
  touched: FitRobotOptions['touched'],
): Map<number, ServoParams> | undefined {
  if (!touched?.size) return undefined;
  const params = servoParamsOf(defaultCalibration(config));
  for (const m of config.motors) {
    const offset = touched.get(m.name);
    if (offset) params.set(m.id, { ...params.get(m.id)!, offsetDeg: offset.value });
  }
  return params;
}

/** The figures the second pass sets, by their index in the fit's unknowns (keptEstimate's). */
const FIGURES = [
  ['gain', 1],
  ['armature', 2],
  ['kv', 3],
  ['kcs', 4],
] as const;

/**
 * The second pass's figures with each sigma at least PASS_SHIFT_SIGMAS times what the others' first-pass figures
 * moved it by: the others are known no better than that, and what they still miss moves it again (the Ergo Jr's m1
 * armature went +31.5 to +19.6 % with a sigma under 1 %, seed 2; in a run with the touched offsets, +31.8 to +23.0 %,
 * still 23 % off: the miss left was 2.6 times the pass's move). A figure so widened past the tolerance is said not
 * identifiable.
 */
/** A second pass's move of a figure, in its sigmas (widened): one that moved over 3.75 % is not identified at 15 %. */
export const PASS_SHIFT_SIGMAS = 2;

export function widened(second: FitResult, first: FitResult, config: RobotConfig, motor: string): FitResult {
  const model = servoModel(modelSpec(config.motors.find((m) => m.name === motor)!.model));
  const defaults = {
    gain: model.errorGain,
    armature: model.armature,
    kv: model.friction.kv,
    kcs: model.friction.kcs,
  };
  const estimates = { ...second.estimates };
  const c = second.calibration;
  const notIdentifiable = new Set(c.notIdentifiable);
  const figure: Record<string, { value: number; sigma: number | null }> = {};
  for (const [name, i] of FIGURES) {
    const e = second.estimates[name];
    const sigma = Math.max(e.sigma, PASS_SHIFT_SIGMAS * Math.abs(e.value - first.estimates[name].value));
    estimates[name] = { value: e.value, sigma: round(sigma) };
    const relative = sigma / e.value;
    if (relative <= MAX_RELATIVE_SIGMA && !notIdentifiable.has(name)) {
      figure[name] = { value: e.value, sigma: round(sigma) };
      continue;
    }
    notIdentifiable.add(name);
    figure[name] = keptEstimate(i, e.value, relative, defaults[name]);
  }
  return {
    ...second,
    estimates,
    calibration: {
      ...c,
      gain: figure.gain!,
      armature: figure.armature!,
      friction: { ...c.friction, kv: figure.kv!, kcs: figure.kcs! },
      notIdentifiable: ['kc', 'offset', ...FIGURES.map(([n]) => n)].filter((n) => notIdentifiable.has(n)),
    },
  };
}

/**
 * The fit of one motor's parameters from its run's log: the forward model (forward.ts) replays the logged commands
 * with candidate parameters; Nelder-Mead minimises the RMS position error, the offset first from the holds. Each
 * figure's uncertainty comes from the curvature of the error about the optimum (Gauss-Newton); a figure whose
 * uncertainty is too wide is said not identifiable and left at the model's default (docs/decisions/0059-calibration.md).
 */
import type { MotorCalibration, ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { servoModel } from '../sim/servo-models.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { simulate } from './forward.ts';
import type { MotorLog } from './run.ts';
/** The fitted figures, in the search's coordinates: offset (deg), then the logs of the others over their defaults. */
const NAMES = ['offset', 'gain', 'armature', 'kv', 'kcs'] as const;
/** A figure whose relative uncertainty (offset: degrees) is above this is not identifiable from the run. */
const MAX_RELATIVE_SIGMA = 0.15;
const MAX_OFFSET_SIGMA_DEG = 0.3;

export interface FitResult {
  readonly calibration: MotorCalibration;
  /** Forward-model runs the fit took. */
  readonly evaluations: number;
}

export async function fitMotor(
  config: RobotConfig,
  urdf: UrdfRobot,
  log: MotorLog,
  budget = { dynamics: 50, offset: 15, all: 30 },
): Promise<FitResult> {
  const motor = config.motors.find((m) => m.name === log.motor)!;
  const spec = modelSpec(motor.model);
  const base = servoModel(spec);
  const params = (x: readonly number[]): ServoParams => ({
    offsetDeg: x[0]!,
    errorGain: base.errorGain * Math.exp(x[1]!),
    armature: base.armature * Math.exp(x[2]!),
    friction: { kv: base.friction.kv * Math.exp(x[3]!), kcs: base.friction.kcs * Math.exp(x[4]!) },
  });
  let evaluations = 0;
  const residuals = async (x: readonly number[], from = 0, to = log.t.length): Promise<Float64Array> => {
    evaluations++;
    const sim = await simulate(config, urdf, params(x), log, from, to);
    for (let k = 0; k < sim.length; k++) sim[k] = sim[k]! - log.position[from + k]!;
    return sim;
  };
  const cost = (from?: number, to?: number) => async (x: readonly number[]) => {
    const r = await residuals(x, from, to);
    let s = 0;
    for (const v of r) s += v * v;
    return s / r.length;
  };
  const sample = (segment: string) =>
    Math.round(log.segments.find(([name]) => name === segment)![1] / (log.t[1]! - log.t[0]!));
  // The gain, armature and friction first, on the steps and chirps (the offset hardly shows there: gravity is a
  // small share of the torques); then the offset on the holds, where gravity against the P law shows it; then all.
  let x = [0, 0, 0, 0, 0];
  x = await nelderMead(cost(sample('steps@1023')), x, [0, 0.15, 0.3, 0.4, 0.3], budget.dynamics);
  const holds = cost(0, sample('release'));
  let best = Infinity;
  for (let o = -6; o <= 6; o += 1) {
    const c = await holds([o, ...x.slice(1)]);
    if (c < best) [best, x] = [c, [o, ...x.slice(1)]];
  }
  x = await nelderMead(holds, x, [0.4, 0, 0, 0, 0], budget.offset);
  x = await nelderMead(cost(), x, [0.2, 0.05, 0.15, 0.2, 0.1], budget.all);
  const r0 = await residuals(x);
  const rms = Math.sqrt(r0.reduce((s, v) => s + v * v, 0) / r0.length);
  const sigmas = await uncertainty(residuals, x, r0);
  const p = params(x);
  const values = [p.offsetDeg, p.errorGain, p.armature, p.friction.kv!, p.friction.kcs!];
  const defaults = [0, base.errorGain, base.armature, base.friction.kv, base.friction.kcs];
  const notIdentifiable: string[] = ['kc'];
  const est = (i: number) => {
    // Log coordinates: sigma of the log is the relative sigma of the value.
    const sigma = i === 0 ? sigmas[0]! : sigmas[i]! * values[i]!;
    const ok = i === 0 ? sigmas[0]! <= MAX_OFFSET_SIGMA_DEG : sigmas[i]! <= MAX_RELATIVE_SIGMA;
    if (ok && Number.isFinite(sigma)) return { value: round(values[i]!), sigma: round(sigma) };
    notIdentifiable.push(NAMES[i]!);
    return { value: defaults[i]!, sigma: null };
  };
  const offset = est(0);
  const gain = est(1);
  const armature = est(2);
  const kv = est(3);
  const kcs = est(4);
  return {
    evaluations,
    calibration: {
      id: motor.id,
      model: motor.model,
      offset,
      friction: { kc: { value: base.friction.kc, sigma: null }, kv, kcs },
      armature,
      gain,
      residualRmsDeg: round(rms),
      notIdentifiable,
    },
  };
}

const round = (v: number) => Number(v.toPrecision(4));

/** One standard deviation of each coordinate: s^2 (J^T J)^-1, J by central differences. */
async function uncertainty(
  residuals: (x: readonly number[]) => Promise<Float64Array>,
  x: readonly number[],
  r0: Float64Array,
): Promise<number[]> {
  const n = x.length;
  const h = [0.02, 0.01, 0.01, 0.01, 0.01];
  const J: Float64Array[] = [];
  for (let i = 0; i < n; i++) {
    const up = [...x];
    const down = [...x];
    up[i]! += h[i]!;
    down[i]! -= h[i]!;
    const a = await residuals(up);
    const b = await residuals(down);
    J.push(a.map((v, k) => (v - b[k]!) / (2 * h[i]!)));
  }
  const JtJ = J.map((ji) => J.map((jj) => ji.reduce((s, v, k) => s + v * jj[k]!, 0)));
  const dof = Math.max(1, r0.length - n);
  // The samples' errors are not independent (50 Hz, the same friction band for seconds): the variance is inflated
  // by (1 + rho) / (1 - rho), rho their lag-one correlation, as for an AR(1) series.
  let c0 = 0;
  let c1 = 0;
  for (let k = 0; k < r0.length; k++) {
    c0 += r0[k]! * r0[k]!;
    if (k > 0) c1 += r0[k]! * r0[k - 1]!;
  }
  const rho = Math.min(0.995, Math.max(0, c1 / c0));
  const s2 = (c0 / dof) * ((1 + rho) / (1 - rho));
  const inv = invert(JtJ);
  return inv ? inv.map((row, i) => Math.sqrt(Math.max(0, row[i]! * s2))) : x.map(() => Infinity);
}

/** Gauss-Jordan inverse of a small symmetric matrix; undefined when singular. */
function invert(a: number[][]): number[][] | undefined {
  const n = a.length;
  const m = a.map((row, i) => [...row, ...a.map((_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    if (Math.abs(m[p]![c]!) < 1e-300) return undefined;
    [m[c], m[p]] = [m[p]!, m[c]!];
    const d = m[c]![c]!;
    for (let k = 0; k < 2 * n; k++) m[c]![k]! /= d;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]!;
      for (let k = 0; k < 2 * n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row) => row.slice(n));
}

/** Nelder-Mead from x0 with initial steps `step`, at most `maxEval` evaluations. */
export async function nelderMead(
  f: (x: number[]) => Promise<number>,
  x0: number[],
  step: number[],
  maxEval: number,
): Promise<number[]> {
  // Coordinates with a zero step are held where they are.
  const free = step.flatMap((s, i) => (s !== 0 ? [i] : []));
  const n = free.length;
  const full = (y: number[]) => x0.map((v, i) => (free.includes(i) ? y[free.indexOf(i)]! : v));
  const g = (y: number[]) => f(full(y));
  const y0 = free.map((i) => x0[i]!);
  const simplex: { x: number[]; f: number }[] = [];
  for (const y of [y0, ...y0.map((_, i) => y0.map((v, j) => (i === j ? v + step[free[i]!]! : v)))])
    simplex.push({ x: y, f: await g(y) });
  let evals = n + 1;
  const comb = (a: number[], b: number[], t: number) => a.map((v, i) => v + t * (b[i]! - v));
  while (evals < maxEval) {
    simplex.sort((a, b) => a.f - b.f);
    const best = simplex[0]!;
    const worst = simplex[n]!;
    if (Math.abs(worst.f - best.f) <= 1e-10 * (Math.abs(best.f) + 1e-12)) break;
    const centroid = y0.map((_, i) => simplex.slice(0, n).reduce((s, p) => s + p.x[i]!, 0) / n);
    const xr = comb(centroid, worst.x, -1);
    const fr = await g(xr);
    evals++;
    if (fr < best.f) {
      const xe = comb(centroid, worst.x, -2);
      const fe = await g(xe);
      evals++;
      simplex[n] = fe < fr ? { x: xe, f: fe } : { x: xr, f: fr };
    } else if (fr < simplex[n - 1]!.f) {
      simplex[n] = { x: xr, f: fr };
    } else {
      const xc = comb(centroid, worst.x, 0.5);
      const fc = await g(xc);
      evals++;
      if (fc < worst.f) simplex[n] = { x: xc, f: fc };
      else {
        for (let i = 1; i <= n; i++) {
          const y = comb(best.x, simplex[i]!.x, 0.5);
          simplex[i] = { x: y, f: await g(y) };
        }
        evals += n;
      }
    }
  }
  simplex.sort((a, b) => a.f - b.f);
  return full(simplex[0]!.x);
}

// Over 400 lines: one motor's fit in its stages and the sigmas they carry, all in one coordinate layout (NAMES, FREE).
/**
 * The fit of one motor's parameters from its run's log: the forward model (forward.ts) replays the logged commands
 * with candidate parameters; Nelder-Mead minimises the position error (a joint at rest's beyond its logged count:
 * beyondCount), the offset first from the holds. Each figure's uncertainty comes from the curvature of the error about
 * the optimum (Gauss-Newton); a figure whose uncertainty is too wide is said not identifiable and left at the model's
 * default (docs/decisions/0059-calibration.md).
 */
import type { MotorCalibration, ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { modelSpec, positionResolution } from '../dynamixel/registers.ts';
import { servoModel } from '../sim/servo-models.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { defaultMotorCalibration } from './defaults.ts';
import { simulate } from './forward.ts';
import { APPROACH_HOLD_SECONDS } from './excitation.ts';
import { invert, jacobian, meanSquareOf, nelderMead, normal, polish, rmsOf } from './least-squares.ts';
import type { MotorLog } from './run.ts';
/** The fitted figures, in the search's coordinates: offset (deg), then the logs of the others over their defaults. */
const NAMES = ['offset', 'gain', 'armature', 'kv', 'kcs'] as const;
/**
 * A figure is identified when two sigmas (a 95 % interval) lie within issue 45's tolerance: 15 % (offset: 0.3
 * degree); else it is not identifiable from the run and left at the model's default (decision 0062).
 */
export const MAX_RELATIVE_SIGMA = 0.15 / 2;
const MAX_OFFSET_SIGMA_DEG = 0.3 / 2;
/**
 * Above this RMS residual (degrees) the twin did not reproduce the run at its best figures, and none is kept: a run of
 * a servo the model describes is replayed within 0.03-0.23 degree at the true figures (the Torso's, two seeds), and a
 * run with a contact or slip the twin does not follow left 4.2 at the fit's best (decision 0082).
 */
export const MAX_REPRODUCED_RESIDUAL_DEG = 1;
/** What is known of an offset before any fit: a horn within +-5 degrees, uniform (sigma 5 / sqrt 3). */
export const PRIOR_OFFSET_SIGMA_DEG = 5 / Math.sqrt(3);
/**
 * What is known of a servo's dynamic figures before any fit, as sigmas of their logs: a servo of a model within
 * friction x0.5-x2 (log-uniform), armature x0.7-x1.5 and gain x0.8-x1.2 of it (uniform in the log: range / sqrt 12).
 */
export const PRIOR_LOG_SIGMA: Readonly<NeighbourSigmas> = {
  gain: Math.log(1.2 / 0.8) / Math.sqrt(12),
  armature: Math.log(1.5 / 0.7) / Math.sqrt(12),
  kv: Math.log(4) / Math.sqrt(12),
  kcs: Math.log(4) / Math.sqrt(12),
};

/**
 * How well another servo is known: the sigma of each dynamic figure's log (its relative sigma), and its offset's
 * sigma in degrees (absent: not carried).
 */
export interface NeighbourSigmas {
  readonly gain: number;
  readonly armature: number;
  readonly kv: number;
  readonly kcs: number;
  readonly offsetDeg?: number;
}

/** What a motor's fit knows of the rest of the robot. */
export interface FitContext {
  /** The other servos as an earlier pass fitted them (fitRobot's later passes); absent: their models. */
  readonly others?: ReadonlyMap<number, ServoParams>;
  /** The offset the table's touches found (touch.ts): held there, the approaches not fitted. */
  readonly touched?: { value: number; sigma: number };
  /**
   * How well each other servo is known (by id): the shift of this motor's figures when one of them is one sigma off
   * is part of their sigmas. The joints that carry the swing give under it as their own servos do, and a fit that
   * takes them for known pins this one's figures where they are not (the Torso's r_shoulder_x kv, +205 % at 4 %).
   */
  readonly neighbours?: ReadonlyMap<number, NeighbourSigmas>;
}

export interface FitResult {
  readonly calibration: MotorCalibration;
  /** Forward-model runs the fit took. */
  readonly evaluations: number;
  /** Every figure as the fit found it with its sigma, identifiable or not (the bench's recovered-vs-true table). */
  readonly estimates: Readonly<Record<(typeof NAMES)[number], { value: number; sigma: number }>>;
  /** The twin did not reproduce the run (MAX_REPRODUCED_RESIDUAL_DEG): the file keeps the model's figures. */
  readonly notReproduced?: boolean;
}

/**
 * The fit's unknowns as servo parameters: x = [offset (degrees), then the logs of gain, armature, kv and kcs over the
 * servo model's own], so that each figure stays positive and its steps are relative.
 */
export function servoParamsAt(base: ReturnType<typeof servoModel>, x: readonly number[]): ServoParams {
  return {
    offsetDeg: x[0]!,
    errorGain: base.errorGain * Math.exp(x[1]!),
    armature: base.armature * Math.exp(x[2]!),
    friction: { kv: base.friction.kv * Math.exp(x[3]!), kcs: base.friction.kcs * Math.exp(x[4]!) },
  };
}

export async function fitMotor(
  config: RobotConfig,
  urdf: UrdfRobot,
  log: MotorLog,
  budget = { dynamics: 50, offset: 15, all: 30 },
  { others, touched, neighbours }: FitContext = {},
): Promise<FitResult> {
  const motor = config.motors.find((m) => m.name === log.motor)!;
  const spec = modelSpec(motor.model);
  const base = servoModel(spec);
  const params = (x: readonly number[]) => servoParamsAt(base, x);
  let evaluations = 0;
  /** The twin's readings less the logged ones (degrees), over samples [from, to). */
  const errors = async (
    x: readonly number[],
    from = 0,
    to = log.t.length,
    around = others,
  ): Promise<Float64Array> => {
    evaluations++;
    const sim = await simulate(config, urdf, params(x), log, from, to, undefined, around);
    for (let k = 0; k < sim.length; k++) sim[k] = sim[k]! - log.position[from + k]!;
    return sim;
  };
  // What the fit minimises: a joint at rest's errors beyond the logged count's band, so the figures are not bent to
  // place it where its reading rounds (decision 0083).
  const halfCount = positionResolution(spec) / 2;
  const still = stillSamples(log.position);
  const residuals = async (...args: Parameters<typeof errors>) =>
    beyondCount(await errors(...args), halfCount, still, args[1] ?? 0);
  const cost = (from?: number, to?: number) => async (x: readonly number[]) =>
    meanSquareOf(await residuals(x, from, to));
  const dt = log.t[1]! - log.t[0]!;
  const sampleAt = (seconds: number) => Math.min(log.t.length, Math.round(seconds / dt));
  const sample = (segment: string) => sampleAt(log.segments.find(([name]) => name === segment)![1]);
  // The gain, armature and friction first, on the steps and chirps (the offset hardly shows there: gravity is a
  // small share of the torques); then the offset with the gain on the approaches' midpoints, where the gearbox's
  // band cancels and gravity's sag is left (decision 0062); then the others on the whole run, the offset held.
  const pairs = approachPairs(log, sampleAt);
  const from = pairs[0]!.from;
  const to = pairs[pairs.length - 1]!.to;
  let x = [0, 0, 0, 0, 0];
  x = await nelderMead(cost(sample('steps@1023'), from), x, [0, 0.15, 0.3, 0.4, 0.3], budget.dynamics);
  const mids = (series: ArrayLike<number>, offset: number) =>
    pairs.map((p) => (mean(series, p.below, offset) + mean(series, p.above, offset)) / 2);
  const logged = mids(log.position, 0);
  const midResiduals = async (y: readonly number[]): Promise<number[]> => {
    const sim = await simulate(config, urdf, params(y), log, from, to, undefined, others);
    evaluations++;
    return mids(sim, from).map((v, i) => v - logged[i]!);
  };
  const midCost = async (y: readonly number[]) => (await midResiduals(y)).reduce((a, v) => a + v * v, 0);
  const dynamics = x;
  let offsetSd: number;
  if (touched) {
    x = [touched.value, ...x.slice(1)];
    offsetSd = touched.sigma;
  } else {
    let best = Infinity;
    for (let o = -6; o <= 6; o += 1.5) {
      const c = await midCost([o, ...x.slice(1)]);
      if (c < best) [best, x] = [c, [o, ...x.slice(1)]];
    }
    x = await nelderMead(midCost, x, [0.75, 0.05, 0, 0, 0], budget.offset);
    offsetSd = await offsetSigma(midResiduals, x, positionResolution(spec));
  }
  // An offset the approaches do not pin is reported as 0 (keptEstimate): the others are fitted with that 0, so the
  // file's figures agree with each other, and their sigmas carry the prior's offset range (uncertainty()). A touched
  // offset is kept while its sigma is under the prior's: the table placed it better than no figure.
  const foundOffset = x[0]!;
  const keepOffset =
    offsetSd <= MAX_OFFSET_SIGMA_DEG || (touched !== undefined && offsetSd < PRIOR_OFFSET_SIGMA_DEG);
  x = afterOffsetStage(dynamics, x, keepOffset);
  x = await frictionStart(cost(), x);
  x = await nelderMead(cost(), x, [0, 0.05, 0.15, 0.2, 0.1], budget.all);
  const polished = await polish(residuals, x, FREE);
  x = polished.x;
  // The spread is read from the plain errors: within a count the twin is not known to be right, only not shown wrong,
  // and errors beyond it alone would call the figures known to a percent (decision 0083).
  const r0 = await errors(x);
  const rms = rmsOf(r0);
  if (rms > MAX_REPRODUCED_RESIDUAL_DEG) {
    // Figures fitted to a run the twin cannot follow fit the contact or slip, not the servo: the model's are written,
    // with the touched offset (the table placed it, not this run), and the residual the twin leaves with them.
    const model = defaultMotorCalibration(motor);
    const offset = touched ? { value: touched.value, sigma: touched.sigma } : model.offset;
    const r = await errors([offset.value, 0, 0, 0, 0]);
    const p = params(x);
    const values = [foundOffset, p.errorGain, p.armature, p.friction.kv!, p.friction.kcs!];
    return {
      evaluations,
      notReproduced: true,
      estimates: Object.fromEntries(
        NAMES.map((name, i) => [name, { value: round(values[i]!), sigma: Infinity }]),
      ) as FitResult['estimates'],
      calibration: {
        ...model,
        offset,
        residualRmsDeg: round(rmsOf(r)),
        notIdentifiable: ['kc', ...NAMES.filter((n) => n !== 'offset' || !touched)],
        note:
          `the twin did not reproduce its run (${round(rms)} degrees RMS at the best figures, over ` +
          `${MAX_REPRODUCED_RESIDUAL_DEG}): the model's figures kept; a contact or a slip the twin does not follow?`,
      },
    };
  }
  const heldSd = keepOffset ? offsetSd : PRIOR_OFFSET_SIGMA_DEG;
  const around = await neighbourShifts(config, motor.id, neighbours, others, (o) =>
    errors(x, 0, log.t.length, o),
  );
  const sigmas = await uncertainty(errors, x, r0, clusters(log, sampleAt), heldSd, around);
  // Not yet at the optimum: the step still proposed is an error of the figure the sigma must cover.
  for (const i of FREE) sigmas[i] = Math.max(sigmas[i]!, Math.abs(polished.lastStep[i]!));
  sigmas[0] = offsetSd;
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
    if (i === 0 && keepOffset && Number.isFinite(sigma))
      return { value: round(values[0]!), sigma: round(sigma) };
    return keptEstimate(i, values[i]!, sigmas[i]!, defaults[i]!);
  };
  const offset = est(0);
  const gain = est(1);
  const armature = est(2);
  const kv = est(3);
  const kcs = est(4);
  const estimates = Object.fromEntries(
    NAMES.map((name, i) => [
      name,
      i === 0
        ? { value: round(foundOffset), sigma: round(sigmas[0]!) }
        : { value: round(values[i]!), sigma: round(sigmas[i]! * values[i]!) },
    ]),
  ) as FitResult['estimates'];
  return {
    evaluations,
    estimates,
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

/**
 * For each other servo of `neighbours` (by id), the change of the residuals at the optimum when its dynamic figures are
 * all one sigma higher than the fit took them (`others`, else its model's): one run of the forward model each. One
 * joint perturbation per servo, not one per figure: a servo stiffer, slower and holding harder at once is the
 * direction a joint that carries the swing errs in, and it costs a twelfth of the Torso's fit, not a third. And,
 * where its offset's sigma is given, the change when its offset is one sigma off, another run: the links it puts
 * elsewhere move the gravity the swing works against (the Ergo Jr's m2, its others' touched offsets 0.1-0.9 degree
 * off: kv -8.7 % where the true offsets give +5.6 %; decision 0077).
 */
export async function neighbourShifts(
  config: RobotConfig,
  ownId: number,
  neighbours: FitContext['neighbours'],
  others: FitContext['others'],
  residualsAround: (others: ReadonlyMap<number, ServoParams>) => Promise<Float64Array>,
): Promise<Float64Array[]> {
  if (!neighbours?.size) return [];
  const base = new Map(
    config.motors
      .filter((m) => m.id !== ownId)
      .map((m) => [
        m.id,
        others?.get(m.id) ?? servoParamsAt(servoModel(modelSpec(m.model)), [0, 0, 0, 0, 0]),
      ]),
  );
  const r0 = await residualsAround(base);
  const out: Float64Array[] = [];
  for (const [id, s] of neighbours) {
    const p = base.get(id);
    if (!p) continue;
    const up = (v: number | undefined, sigma: number) => (v === undefined ? v : v * Math.exp(sigma));
    const moved = new Map(base).set(id, {
      ...p,
      errorGain: p.errorGain * Math.exp(s.gain),
      armature: p.armature * Math.exp(s.armature),
      friction: { ...p.friction, kv: up(p.friction.kv, s.kv), kcs: up(p.friction.kcs, s.kcs) },
    });
    const change = async (around: ReadonlyMap<number, ServoParams>) => {
      const r = await residualsAround(around);
      for (let k = 0; k < r.length; k++) r[k] = r[k]! - r0[k]!;
      out.push(r);
    };
    await change(moved);
    if (s.offsetDeg) await change(new Map(base).set(id, { ...p, offsetDeg: p.offsetDeg + s.offsetDeg }));
  }
  return out;
}

/**
 * Where the whole run's fit starts: `x`, or `x` with its friction (kv and kcs together) anywhere in the prior's
 * x0.5-x2 of the model, whichever replays the whole run best. The release (torque off) turns on the friction, whose
 * cost is flat wherever the gearbox holds the link through it: the steps' optimum can sit on that plateau, far from
 * the truth (the Torso's l_elbow_y, seed 2: kv +312 %, kcs +200 %, 1.7 degrees RMS, where half the model's friction
 * replays it within 0.46; decision 0077). Five runs of the forward model.
 */
export async function frictionStart(
  cost: (x: readonly number[]) => Promise<number>,
  x: readonly number[],
): Promise<number[]> {
  let best = [...x];
  let lowest = await cost(x);
  for (const scale of FRICTION_SCAN) {
    const y = [x[0]!, x[1]!, x[2]!, scale, scale];
    const c = await cost(y);
    if (c < lowest) [lowest, best] = [c, y];
  }
  return best;
}
/** The friction's log over the model's, the prior's range (x0.5-x2) in five steps. */
const FRICTION_SCAN = [-Math.LN2, -Math.LN2 / 2, 0, Math.LN2 / 2, Math.LN2];

/** The coordinates Levenberg-Marquardt moves and the sandwich covers: all but the offset. */
const FREE = [1, 2, 3, 4] as const;

export const round = (v: number) => Number(v.toPrecision(4));

/**
 * Where the whole run's fit starts after the offset's stage (`staged`, its offset and gain fitted on the approaches):
 * there, or with the offset not kept, the dynamics' point (`dynamics`) with the offset at 0: the gain the approaches
 * moved to suit an offset that is dropped goes back with it (the Torso's head_y, seed 3: kv +153 % where +28 % with
 * it back; docs/decisions/0084-the-gain-goes-with-its-offset.md).
 */
export function afterOffsetStage(
  dynamics: readonly number[],
  staged: readonly number[],
  keepOffset: boolean,
): number[] {
  return keepOffset ? [...staged] : [0, ...dynamics.slice(1)];
}

/**
 * Each error of a joint at rest (`still`, from sample `from`; all when absent) less the half count a rounded reading
 * leaves unknown, in place: a twin within the logged count reads as that robot did. A joint at rest sits anywhere in
 * its count for seconds, and a figure that moves where it rests by a fraction of a count otherwise wins a hold's whole
 * error (the Torso's head_z, an AX-12A: kcs +30 % at 7 %). A moving joint's readings sweep through the counts: their
 * rounding is noise, and each of its errors is kept whole.
 */
export function beyondCount(
  errors: Float64Array,
  halfCount: number,
  still?: Uint8Array,
  from = 0,
): Float64Array {
  for (let k = 0; k < errors.length; k++) {
    if (still && !still[from + k]) continue;
    const e = errors[k]!;
    errors[k] = e > halfCount ? e - halfCount : e < -halfCount ? e + halfCount : 0;
  }
  return errors;
}

/** A motor's fit as its progress line says it (after the motor's name), the note's reason last if there is one. */
export function fitLine(c: MotorCalibration, evaluations: number): string {
  const notIdentifiable = c.notIdentifiable.join(', ') || 'none';
  return (
    `offset ${c.offset.value} deg, residual ${c.residualRmsDeg} deg RMS, ${evaluations} simulations; ` +
    `not identifiable: ${notIdentifiable}${c.note ? `; ${c.note}` : ''}`
  );
}

/** Above this relative sigma a figure not identified is left at the default; under it, its estimate is kept. */
export const MAX_KEPT_RELATIVE_SIGMA = 1;

/**
 * A figure not identified to the tolerance: its estimate, with its sigma, while that sigma is under
 * MAX_KEPT_RELATIVE_SIGMA (the twin predicts the robot better with it than with the default: decision 0064); the
 * model's default (sigma null) beyond, and always for the offset (index 0), whose estimates are no better than 0.
 */
export function keptEstimate(
  i: number,
  value: number,
  relativeSigma: number,
  fallback: number,
): { value: number; sigma: number | null } {
  if (i === 0 || !Number.isFinite(relativeSigma) || relativeSigma > MAX_KEPT_RELATIVE_SIGMA)
    return { value: fallback, sigma: null };
  return { value: round(value), sigma: round(relativeSigma * value) };
}

/** A target's two approaches: the samples of each one's stopping point, and the samples the pair spans. */
interface ApproachPair {
  readonly below: readonly [number, number];
  readonly above: readonly [number, number];
  readonly from: number;
  readonly to: number;
}

function approachPairs(log: MotorLog, sampleAt: (s: number) => number): ApproachPair[] {
  const pairs: ApproachPair[] = [];
  for (const [name, start, end] of log.segments) {
    if (!name.startsWith('approach-below@')) continue;
    const above = log.segments.find(([n]) => n === name.replace('below', 'above'));
    if (!above || sampleAt(above[2]) > log.t.length) continue;
    pairs.push({
      below: [sampleAt(end - APPROACH_HOLD_SECONDS), sampleAt(end)],
      above: [sampleAt(above[2] - APPROACH_HOLD_SECONDS), sampleAt(above[2])],
      from: sampleAt(start),
      to: sampleAt(above[2]),
    });
  }
  if (!pairs.length) throw new Error(`${log.motor}: the log has no approach pair (a run stopped early?)`);
  return pairs;
}

/** Mean of series[k - shift] over the samples [a, b). */
function mean(series: ArrayLike<number>, [a, b]: readonly [number, number], shift: number): number {
  let s = 0;
  for (let k = a; k < b; k++) s += series[k - shift]!;
  return s / (b - a);
}

/** The log's segments as sample ranges: the clusters of the uncertainty's sandwich. */
function clusters(log: MotorLog, sampleAt: (s: number) => number): [number, number][] {
  return log.segments
    .map(([, a, b]): [number, number] => [sampleAt(a), Math.min(log.t.length, sampleAt(b))])
    .filter(([a, b]) => b > a);
}

/**
 * The offset's standard deviation from the approaches' midpoints (offset and gain free): s^2 (J^T J)^-1, s the
 * midpoints' residual or, if smaller, the encoder's quantisation (one count, uniform, halved by the pair's mean).
 */
async function offsetSigma(
  midResiduals: (x: readonly number[]) => Promise<number[]>,
  x: readonly number[],
  countDeg: number,
): Promise<number> {
  const h = [0.3, 0.02];
  const J: number[][] = [];
  for (let i = 0; i < 2; i++) {
    const up = [...x];
    const down = [...x];
    up[i]! += h[i]!;
    down[i]! -= h[i]!;
    const a = await midResiduals(up);
    const b = await midResiduals(down);
    J.push(a.map((v, k) => (v - b[k]!) / (2 * h[i]!)));
  }
  const r = await midResiduals(x);
  const s2 = Math.max(
    r.reduce((a, v) => a + v * v, 0) / Math.max(1, r.length - 2),
    (countDeg * countDeg) / 24,
  );
  const inv = invert(J.map((ji) => J.map((jj) => ji.reduce((a, v, k) => a + v * jj[k]!, 0))));
  return inv ? Math.sqrt(Math.max(0, inv[0]![0]! * s2)) : Infinity;
}

/**
 * One standard deviation of each coordinate but the offset (index 0, its own: offsetSigma), J by central
 * differences. The residuals are correlated within a segment (the same friction band for seconds) and are model
 * error as much as noise, so the covariance is the cluster-robust sandwich (J^T J)^-1 (sum_c J_c^T r_c r_c^T J_c)
 * (J^T J)^-1 over the segments, not s^2 (J^T J)^-1 (decision 0062).
 */
export async function uncertainty(
  residuals: (x: readonly number[]) => Promise<Float64Array>,
  x: readonly number[],
  r0: Float64Array,
  segments: readonly [number, number][],
  offsetSigmaDeg: number,
  /** The residuals' change when each other servo is one sigma off (neighbourShifts): more error to carry. */
  around: readonly Float64Array[] = [],
): Promise<number[]> {
  const free = FREE;
  const J = await jacobian(residuals, x, free);
  const inv = invert(normal(J));
  if (!inv) return x.map(() => Infinity);
  const n = free.length;
  // The offset held where the fit left it trades against the others (gravity against friction and gain): each
  // figure's best value moves by shift = -(J^T J)^-1 J^T j_offset per degree, times the offset's sigma.
  const hOffset = 0.5;
  const up = await residuals([x[0]! + hOffset, ...x.slice(1)]);
  const down = await residuals([x[0]! - hOffset, ...x.slice(1)]);
  const jOffset = up.map((v, k) => (v - down[k]!) / (2 * hOffset));
  // What a change dr of the residuals moves the best figures by: -(J^T J)^-1 J^T dr.
  const moveBy = (dr: ArrayLike<number>): number[] => {
    const projected = J.map((ji) => ji.reduce((s, v, k) => s + v * dr[k]!, 0));
    return inv.map((row) => -row.reduce((s, v, k) => s + v * projected[k]!, 0));
  };
  const shift = moveBy(jOffset);
  const offsetVariance = Math.min(offsetSigmaDeg, PRIOR_OFFSET_SIGMA_DEG) ** 2;
  const meat = free.map(() => new Array<number>(n).fill(0));
  for (const [a, b] of segments) {
    const score = J.map((ji) => {
      let s = 0;
      for (let k = a; k < b; k++) s += ji[k]! * r0[k]!;
      return s;
    });
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) meat[i]![j]! += score[i]! * score[j]!;
  }
  const g = segments.length;
  const correction = g > 1 ? g / (g - 1) : 1;
  // Each other servo one sigma off moves the best figures: added as independent errors.
  const moves = around.map(moveBy);
  const variance = (i: number) => {
    let sandwich = 0;
    for (let k = 0; k < n; k++)
      for (let l = 0; l < n; l++) sandwich += inv[i]![k]! * meat[k]![l]! * inv[l]![i]!;
    const neighbours = moves.reduce((s, m) => s + m[i]! * m[i]!, 0);
    return sandwich * correction + neighbours + shift[i]! * shift[i]! * offsetVariance;
  };
  return [Infinity, ...free.map((_, i) => Math.sqrt(Math.max(0, variance(i))))];
}

/** 1 where a reading equals both its neighbours' (a joint at rest in its count), else 0. */
export function stillSamples(position: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(position.length);
  for (let k = 1; k + 1 < position.length; k++)
    out[k] = position[k] === position[k - 1] && position[k] === position[k + 1] ? 1 : 0;
  return out;
}

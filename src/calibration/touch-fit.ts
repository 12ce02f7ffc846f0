/**
 * The offsets from the table's touches (touch.ts; decisions 0068, 0089): least squares on the gaps between each
 * touch's link and the table at the touch's readings less the offsets, geometry alone (src/sim/table-gap.ts), less the
 * sink the twin's press showed; what the sink and the counts leave is an error a touch's readings share.
 */
import type { RobotConfig } from '../config/robot-config.ts';
import { type TableGeometry, tableGeometry } from '../sim/table-gap.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { PRIOR_OFFSET_SIGMA_DEG } from './fit.ts';
import { invert } from './least-squares.ts';
import { type TouchLog, carried, resinkTouches } from './touch.ts';

const DEG = Math.PI / 180;

export interface TouchFit {
  /** Offsets found (degrees, by motor name) with their sigma; those the touches do not pin are absent. */
  readonly offsets: ReadonlyMap<string, { value: number; sigma: number }>;
  /** Motors whose offset moves no touching link's height (a yaw, the head): not identifiable by touch. */
  readonly unseen: readonly string[];
  /** How far the table's top sat above the config's (mm): the robot's mounting, and the press's small sink. */
  readonly liftMm: number;
  /** RMS of the fitted contacts' gaps (mm), each touch by its weight. */
  readonly residualMm: number;
  /** Touches whose sink moved on the twin with the offsets found (weight under a half; decision 0090). */
  readonly shifted?: number;
  /**
   * Why the offsets were not taken: the touches disagree beyond what a press's sink explains (another link met the
   * table, or the table is not where the config says): `offsets` is then empty.
   */
  readonly rejected?: string;
}

/** A column of the contacts' Jacobian smaller than this (m per degree) moves no touch: that offset is unseen. */
const UNSEEN_M_PER_DEG = 2e-5;
/** Equations kept per touch, evenly spaced over its distinct readings (a joint turning through a press gives many). */
const PER_TOUCH = 60;

/**
 * One equation: one of `links` on the table at these readings (the lowest of them), in the touch of that index. The
 * links: the one the twin's plan met the table with, and any other the pressing joint carries as near the table
 * (a bust leaning lowers both forearms: on the robot the other may be the one that lands).
 */
type Contact = {
  readonly links: readonly string[];
  readonly readings: Readonly<Record<string, number>>;
  readonly touch: number;
  /** The gap the touch's plan expects at its readings (m): its sink on the twin. */
  readonly sink: number;
};

/** Links within this of the planned one's height at a touch's readings (m) may be the ones that met the table. */
const NEAR_M = 0.03;

/**
 * The offsets (and the table's lift) that put each touch's link on the table: least squares on the gaps over every
 * distinct set of readings. A touch sinks into the table by its own press, so its readings share an error their
 * counts do not show: the sigmas count it (touchSigmas). Touches run from a plan are then pressed again on a twin with
 * the offsets found and fitted once more with the sinks it shows, each weighted by how far its sink moved (decision
 * 0090): a sink that turns with the pose says less.
 */
export async function fitTouches(
  config: RobotConfig,
  urdf: UrdfRobot,
  logs: readonly TouchLog[],
  geometry?: TableGeometry,
): Promise<TouchFit> {
  const table = config.world.table;
  if (!table) throw new Error(`${config.name}: no table in its world to touch`);
  const geo = geometry ?? (await tableGeometry(urdf, table));
  const first = fitOnce(config, urdf, logs, geo);
  if (first.rejected || !logs.some((log) => log.plan && log.samples.length)) return first;
  const offsets = new Map([...first.offsets].map(([name, o]) => [name, o.value]));
  return fitOnce(config, urdf, await resinkTouches(config, urdf, logs, offsets, geo), geo);
}

/** One fit of the touches as logged, each weighted by how far its sink moved (touchWeight). */
function fitOnce(
  config: RobotConfig,
  urdf: UrdfRobot,
  logs: readonly TouchLog[],
  geo: TableGeometry,
): TouchFit {
  const names = config.motors.map((m) => m.name);
  // The unknowns at no offset and the config's table: where the fit starts, and the links' heights are first read.
  const zero = new Array<number>(names.length + 1).fill(0);
  // One equation per distinct set of readings: a joint at rest repeats its count, which says nothing new.
  const pressed = logs.filter((log) => log.samples.length > 0);
  const weights = pressed.map(touchWeight);
  const touches: Contact[][] = pressed.map((log, touch) => {
    const distinct = [...new Map(log.samples.map((s) => [JSON.stringify(s), s])).values()];
    const every = Math.max(1, distinct.length / PER_TOUCH);
    const first = { links: [log.link], readings: distinct[0]!, touch, sink: log.sinkMm / 1000 };
    const own = gapAt(geo, names, first, zero);
    const links = carried(urdf, log.motor).filter(
      (l) => l === log.link || gapAt(geo, names, { ...first, links: [l] }, zero) < own + NEAR_M,
    );
    const kept: Contact[] = [];
    for (let i = 0; i < distinct.length; i += every)
      kept.push({ links, readings: distinct[Math.floor(i)]!, touch, sink: first.sink });
    return kept;
  });
  const all = touches.flat();
  const J0 = columnsAt(geo, names, all, zero, 0.5);
  const seen = J0.map((col, i) => i >= names.length || col.some((v) => Math.abs(v) > UNSEEN_M_PER_DEG));
  const free = zero.map((_, i) => i).filter((i) => seen[i]);
  const unseen = names.filter((_, i) => !seen[i]);
  if (touches.length <= free.length)
    return {
      offsets: new Map(),
      unseen,
      liftMm: 0,
      residualMm: NaN,
      rejected: `${touches.length} touches pressed, too few for the ${free.length - 1} offsets they see and the table's height`,
    };
  const x = gaussNewton(geo, names, all, free, zero, weights);
  const r = all.map((c) => gapAt(geo, names, c, x));
  const J = columnsAt(geo, names, all, x, 0.2);
  const sigmas = touchSigmas(J, r, all, free, weights, priorWeights(names, free));
  const offsets = new Map<string, { value: number; sigma: number }>();
  free.forEach((i, k) => {
    if (i < names.length) offsets.set(names[i]!, { value: x[i]!, sigma: sigmas[k]! });
  });
  const weighed = all.reduce((s, c) => s + weights[c.touch]!, 0);
  const residualMm =
    1000 * Math.sqrt(r.reduce((s, v, k) => s + weights[all[k]!.touch]! * v * v, 0) / weighed);
  const shifted = weights.filter((w) => w < 0.5).length;
  if (residualMm > MAX_RESIDUAL_SINKS * SINK_SIGMA_M * 1000)
    return {
      offsets: new Map(),
      unseen,
      liftMm: x[names.length]!,
      residualMm,
      rejected: `the touches disagree (gaps ${residualMm.toFixed(2)} mm RMS where a press sinks ${(SINK_SIGMA_M * 1000).toFixed(2)}): another link met the table, or the table is not where the robot's config says`,
    };
  return {
    offsets,
    unseen,
    liftMm: x[names.length]!,
    residualMm,
    shifted,
  };
}

/**
 * How far a press may sink its link into the table, one sigma (m): up to a millimetre, uniform (on a robot a table's
 * give and the gearboxes' backlash): the unit of the prior's weights and of a fit too far off to be one geometry.
 */
const SINK_SIGMA_M = 0.001 / Math.sqrt(12);

/**
 * What is known before the touches, as weights beside the squared gaps (m^2 per unit^2): an offset within +-5 degrees
 * (PRIOR_OFFSET_SIGMA_DEG), the table's top within 3 mm of the config's. They keep a fit that the touches leave loose
 * from wandering off (a Torso fit went 12 mm into the table without them) and bound the sigmas by the prior's.
 */
function priorWeights(names: readonly string[], free: readonly number[]): number[] {
  return free.map((i) => (SINK_SIGMA_M / (i < names.length ? PRIOR_OFFSET_SIGMA_DEG : LIFT_PRIOR_MM)) ** 2);
}
const LIFT_PRIOR_MM = 3;
/**
 * The least error a touch's readings share once its sink is the twin's (m): a joint held still through the press
 * rounds each of its readings alike, an XL-320's count spreading 0.084 degree (a count over sqrt 12), 0.1 mm at the
 * 7 cm from the wrist to the tip. The touches' own mean gaps say more when they leave more.
 */
const SHARED_FLOOR_M = 0.0001;
/** A fit whose gaps are further off than this many sinks' sigmas is not one geometry: its offsets are not taken. */
const MAX_RESIDUAL_SINKS = 2.5;

/**
 * The unknowns' sigmas (degrees, or mm for the lift) with an error each touch's readings share (what the twin's sink
 * did not predict, the counts of the joints held still):
 * (J^T J)^-1 (sum_t s^2 J_t^T 1 1^T J_t) (J^T J)^-1, s the larger of SHARED_FLOOR_M and what the touches' mean gaps
 * left (over the touches less the unknowns).
 */
function touchSigmas(
  J: readonly number[][],
  r: readonly number[],
  eqs: readonly Contact[],
  free: readonly number[],
  weights: readonly number[],
  w: readonly number[],
): number[] {
  const touches = weights.length;
  const ew = eqs.map((c) => weights[c.touch]!);
  const inv = invert(weightedNormal(J, free, ew, w));
  if (!inv) return free.map(() => Infinity);
  // Per touch: the weighted sum of its rows (w_t J_t^T 1); what the weighted mean gaps left.
  const sums = Array.from({ length: touches }, () => free.map(() => 0));
  eqs.forEach((c, k) => free.forEach((i, m) => (sums[c.touch]![m]! += ew[k]! * J[i]![k]!)));
  const means = touchMeans(r, eqs, touches);
  const weight = weights.reduce((s, v) => s + v, 0);
  const left = means.reduce((s, v, t) => s + weights[t]! * v * v, 0) / Math.max(1, weight - free.length);
  const s2 = Math.max(SHARED_FLOOR_M ** 2, left);
  // The prior's rows are observations too, each with the sink's sigma as its unit.
  const meat = free.map((_, a) =>
    free.map(
      (_, b) =>
        sums.reduce((s, row) => s + row[a]! * row[b]!, 0) * s2 + (a === b ? w[a]! * SINK_SIGMA_M ** 2 : 0),
    ),
  );
  return free.map((_, a) => {
    let v = 0;
    for (let k = 0; k < free.length; k++)
      for (let l = 0; l < free.length; l++) v += inv[a]![k]! * meat[k]![l]! * inv[l]![a]!;
    return Math.sqrt(Math.max(0, v));
  });
}

/**
 * The gap of a contact's link with offsets x (degrees by motor index) and the lift x[names.length] (mm), less the sink
 * its plan expects: 0 where the readings put the link as deep as the twin's press sank it.
 */
function gapAt(geo: TableGeometry, names: readonly string[], c: Contact, x: readonly number[]): number {
  const angles = new Map(names.map((n, i) => [n, (c.readings[n]! - x[i]!) * DEG]));
  const gap = Math.min(...c.links.map((link) => geo.gap(link, angles, x[names.length]! / 1000)));
  return Number.isFinite(gap) ? gap - c.sink : 0.5;
}

/** d gap / d x_i for every unknown, by central differences of h. */
function columnsAt(
  geo: TableGeometry,
  names: readonly string[],
  eqs: readonly Contact[],
  x: readonly number[],
  h: number,
): number[][] {
  return x.map((_, i) => {
    const up = [...x];
    const down = [...x];
    up[i]! += h;
    down[i]! -= h;
    return eqs.map((c) => (gapAt(geo, names, c, up) - gapAt(geo, names, c, down)) / (2 * h));
  });
}

/**
 * The spread of presses' mean gaps about their twins' sinks at the true offsets (m, one sigma): 0.2 mm on the
 * emulated Ergo Jr and Torso (decision 0090). A touch whose sink moved by `s` on the twin with the offsets found weighs
 * 1 / (1 + (s / PRESS_SPREAD_M)^2): its sink is that uncertain.
 */
const PRESS_SPREAD_M = 0.0002;

/** A touch's weight in the fit: 1 until a twin pressed it again (resinkTouches), then by how far its sink moved. */
function touchWeight(log: TouchLog): number {
  return 1 / (1 + ((log.sinkShiftMm ?? 0) / 1000 / PRESS_SPREAD_M) ** 2);
}

/** J^T W J over the `free` columns of J (one per unknown), W the equations' weights, plus the prior's on its diagonal. */
function weightedNormal(
  J: readonly number[][],
  free: readonly number[],
  weights: readonly number[],
  prior: readonly number[],
): number[][] {
  return free.map((i, a) =>
    free.map(
      (j, b) => J[i]!.reduce((s, v, k) => s + weights[k]! * v * J[j]![k]!, 0) + (a === b ? prior[a]! : 0),
    ),
  );
}

/** Each touch's mean gap over its equations. */
function touchMeans(r: readonly number[], eqs: readonly Contact[], touches: number): number[] {
  const sums = new Array<number>(touches).fill(0);
  const counts = new Array<number>(touches).fill(0);
  eqs.forEach((c, k) => {
    sums[c.touch]! += r[k]!;
    counts[c.touch]!++;
  });
  return sums.map((v, t) => v / Math.max(1, counts[t]!));
}

/**
 * Levenberg-Marquardt over the `free` unknowns, steps of at most 2 degrees (or mm): far off, the gaps are not
 * linear, and a step that does not lower the squared gaps is damped until it does.
 */
function gaussNewton(
  geo: TableGeometry,
  names: readonly string[],
  eqs: readonly Contact[],
  free: readonly number[],
  x0: readonly number[],
  weights: readonly number[],
): number[] {
  let x = [...x0];
  const w = priorWeights(names, free);
  const cost = (y: readonly number[]) =>
    eqs.reduce((s, c) => s + weights[c.touch]! * gapAt(geo, names, c, y) ** 2, 0) +
    free.reduce((s, i, k) => s + w[k]! * y[i]! ** 2, 0);
  let current = cost(x);
  for (let it = 0; it < 20; it++) {
    const J = columnsAt(geo, names, eqs, x, 0.2);
    const r = eqs.map((c) => gapAt(geo, names, c, x));
    const ew = eqs.map((c) => weights[c.touch]!);
    const A = weightedNormal(J, free, ew, w);
    const g = free.map((i, a) => J[i]!.reduce((s, v, k) => s + ew[k]! * v * r[k]!, 0) + w[a]! * x[i]!);
    let moved = 0;
    for (const lambda of [0, 1e-3, 1e-2, 1e-1, 1, 10]) {
      const inv = invert(A.map((row, i) => row.map((v, j) => (i === j ? v * (1 + lambda) : v))));
      if (!inv) continue;
      const step = inv.map((row) => Math.max(-2, Math.min(2, -row.reduce((s, v, k) => s + v * g[k]!, 0))));
      const y = [...x];
      free.forEach((i, k) => (y[i]! += step[k]!));
      const c = cost(y);
      if (c < current) {
        [x, current, moved] = [y, c, Math.max(...step.map(Math.abs))];
        break;
      }
    }
    if (moved < 1e-3) break;
  }
  return x;
}

/** The fit's line for the CLI and the route: each offset with its sigma, and those no touch could see. */
export function touchFitLine(fit: TouchFit): string {
  if (fit.rejected) return `offsets from the table: not taken, ${fit.rejected}`;
  const found = [...fit.offsets].map(([n, o]) => `${n} ${o.value.toFixed(2)} +- ${o.sigma.toFixed(2)}`);
  const unseen = fit.unseen.length ? `; not identifiable by touch: ${fit.unseen.join(', ')}` : '';
  const left = fit.shifted ? `; ${fit.shifted} touches weighed less, their sinks turning with the pose` : '';
  return `offsets from the table (deg): ${found.join(', ')}; residual ${fit.residualMm.toFixed(2)} mm${left}${unseen}`;
}

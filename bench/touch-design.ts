/**
 * How the Ergo Jr's touches of the table were chosen (src/calibration/touch.ts TOUCHES; decision 0089): candidate
 * poses on a grid, each pressing joint lowered on the geometry until a link it carries meets the table, each contact's
 * row of d gap / d offset; then, greedily, the candidate that most lowers the worst sigma of the offsets the table
 * sees (m2-m6), each pressing 0.3 mm of error of its own, with the fit's prior; each pick planned on the twin
 * (planTouch), a refused one dropped for the next. Geometry alone: no physics but the plans.
 * Usage: npx tsx bench/touch-design.ts [touches=24] > design.json (the list, as TOUCHES takes it; progress on stderr)
 */
import { invert } from '../src/calibration/least-squares.ts';
import { calibrationPose } from '../src/calibration/run.ts';
import { type TouchSpec, carried, planTouch } from '../src/calibration/touch.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { tableGeometry } from '../src/sim/table-gap.ts';
import { loadUrdf } from '../src/urdf/parse.ts';

const DEG = Math.PI / 180;
/** The error a touch's readings share, for the design (m): about what the fit's touches leave (decision 0089). */
const TOUCH_SIGMA_M = 0.0003;
/** What is known before: an offset within +-5 degrees, the table's top within 3 mm; a start's least clearance (m). */
const PRIOR_DEG = 5;
const LIFT_PRIOR_MM = 3;
const CLEAR_M = 0.01;

const count = Number(process.argv[2] ?? 24);
const config = await loadRobotConfig('ergo-jr');
const urdf = await loadUrdf(config.urdfPath);
const geo = await tableGeometry(urdf, config.world.table!);
const names = config.motors.map((m) => m.name);
const limits = new Map(config.motors.map((m) => [m.name, m.angleLimit]));
const base = calibrationPose(config);

/** The lowest of `links` and its gap at a pose (raw degrees), the offsets `off` (degrees by index) taken off. */
function lowest(links: readonly string[], pose: Record<string, number>, off = names.map(() => 0), lift = 0) {
  const angles = new Map(names.map((n, i) => [n, (pose[n]! - off[i]!) * DEG]));
  let best = { gap: Infinity, link: '' };
  for (const link of links) {
    const gap = geo.gap(link, angles, lift);
    if (gap < best.gap) best = { gap, link };
  }
  return best;
}

const steps = (from: number, to: number, by: number) =>
  Array.from({ length: Math.floor((to - from) / by) + 1 }, (_, k) => from + k * by);
/** Each pressing joint and the grid of the others' goals it presses from (raw degrees). */
const GRIDS: Record<string, Record<string, number[]>> = {
  m2: { m3: steps(-60, 60, 15), m4: steps(-90, 90, 45), m5: steps(-80, 80, 20), m6: steps(-80, 80, 20) },
  m3: { m2: steps(-30, 30, 10), m4: steps(-90, 90, 45), m5: steps(-80, 80, 20), m6: steps(-80, 80, 20) },
  m5: { m2: steps(-30, 30, 15), m3: steps(-45, 45, 15), m4: steps(-90, 90, 45), m6: steps(-80, 80, 20) },
};

interface Candidate {
  readonly spec: TouchSpec;
  /** d gap / d unknown: each offset (m per degree), then the lift (m per mm). */
  readonly row: number[];
}

const candidates: Candidate[] = [];
for (const [press, grid] of Object.entries(GRIDS)) {
  const links = carried(urdf, press);
  const rest = carried(urdf, names[0]!).filter((l) => !links.includes(l));
  let poses: Record<string, number>[] = [{}];
  for (const [joint, values] of Object.entries(grid))
    poses = poses.flatMap((p) => values.map((v) => ({ ...p, [joint]: v })));
  for (const change of poses) {
    const pose = { ...base, ...change };
    if (Object.entries(pose).some(([n, v]) => v < limits.get(n)![0] || v > limits.get(n)![1])) continue;
    if (lowest(links, pose).gap < CLEAR_M || lowest(rest, pose).gap < CLEAR_M) continue;
    // Down a degree at a time to the first overlap, then bisection to the contact.
    const [lo] = limits.get(press)!;
    let above = pose[press]!;
    let below: number | undefined;
    for (let v = above; v >= lo; v -= 1) {
      if (lowest(links, { ...pose, [press]: v }).gap <= 0) {
        below = v;
        break;
      }
      above = v;
    }
    if (below === undefined) continue;
    let inside: number = below;
    for (let k = 0; k < 30; k++) {
      const mid = (above + inside) / 2;
      if (lowest(links, { ...pose, [press]: mid }).gap <= 0) inside = mid;
      else above = mid;
    }
    const at = { ...pose, [press]: above };
    const { link } = lowest(links, at);
    const row = names.map((_, i) => {
      const up = names.map((__, j) => (j === i ? 0.2 : 0));
      const down = names.map((__, j) => (j === i ? -0.2 : 0));
      return (lowest([link], at, up).gap - lowest([link], at, down).gap) / 0.4;
    });
    const lift = (lowest([link], at, undefined, 2e-4).gap - lowest([link], at, undefined, -2e-4).gap) / 0.4;
    candidates.push({ spec: { motor: press, direction: -1, pose: change }, row: [...row, lift] });
  }
}
console.error(`${candidates.length} candidate touches`);

// The unknowns the table sees: m2-m6's offsets and the lift (m1, a yaw, moves no height).
const free = [1, 2, 3, 4, 5, names.length];
const offsets = free.length - 1;
const priors = free.map((i) => (i < names.length ? PRIOR_DEG ** -2 : LIFT_PRIOR_MM ** -2));
let information = free.map((_, a) => free.map((__, b) => (a === b ? priors[a]! : 0)));
const plus = (m: number[][], c: Candidate) =>
  m.map((r, a) => r.map((v, b) => v + (c.row[free[a]!]! * c.row[free[b]!]!) / TOUCH_SIGMA_M ** 2));
const sigmas = (m: number[][]) => {
  const inv = invert(m);
  return inv ? inv.slice(0, offsets).map((r, a) => Math.sqrt(r[a]!)) : [Infinity];
};
const chosen: TouchSpec[] = [];
const left = new Set(candidates);
while (chosen.length < count && left.size) {
  let best: Candidate | undefined;
  let bestWorst = Infinity;
  for (const c of left) {
    const worst = Math.max(...sigmas(plus(information, c)));
    if (worst < bestWorst) [best, bestWorst] = [c, worst];
  }
  left.delete(best!);
  const plan = await planTouch(config, urdf, best!.spec);
  if ('refused' in plan) {
    console.error(`  refused ${JSON.stringify(best!.spec)}: ${plan.refused}`);
    continue;
  }
  information = plus(information, best!);
  chosen.push(best!.spec);
  const s = sigmas(information).map((v) => v.toFixed(2));
  console.error(
    `${chosen.length}: ${JSON.stringify(best!.spec)} (${plan.link}); sigmas m2-m6 ${s.join(' ')}`,
  );
}
console.log(JSON.stringify(chosen));

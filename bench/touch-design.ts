/**
 * How each robot's touches of the table were chosen (src/calibration/touch.ts TOUCHES; decision 0089): candidate
 * poses (the Ergo Jr's on a grid, the Torso's drawn about its first hand-chosen touches), each pressing joint turned
 * on the geometry until a link it carries meets the table, each contact's row of d gap / d offset; then, greedily, the
 * candidate that most lowers the worst sigma of the offsets the table sees, each touch 0.3 mm of error of its own,
 * offsets within +-5 degrees and the table's top within 3 mm; each pick planned on the twin (planTouch), one refused
 * or whose link the twin sinks deeper than a millimetre dropped for the next. Geometry alone but for the plans.
 * Usage: npx tsx bench/touch-design.ts [ergo-jr|torso] > design.json (TOUCHES' list; progress on stderr)
 */
import { invert } from '../src/calibration/least-squares.ts';
import { calibrationPose } from '../src/calibration/run.ts';
import { type TouchSpec, carried, planTouch } from '../src/calibration/touch.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { mulberry32 } from '../src/core/prng.ts';
import { tableGeometry } from '../src/sim/table-gap.ts';
import { loadUrdf } from '../src/urdf/parse.ts';

const DEG = Math.PI / 180;
/** The error a touch's readings share, for the design (m): about what the fit's touches leave (decision 0089). */
const TOUCH_SIGMA_M = 0.0003;
/** What is known before: an offset within +-5 degrees, the table's top within 3 mm. */
const PRIOR_DEG = 5;
const LIFT_PRIOR_MM = 3;
/** The deepest sink of a pick's link on the twin (mm): a deeper one is predicted less well. */
const MAX_SINK_MM = 1;

const robot = process.argv[2] ?? 'ergo-jr';
const config = await loadRobotConfig(robot);
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

/** The Ergo Jr's arm: each pressing joint and the grid of the others' goals it presses from (raw degrees). */
function ergoJrSpecs(): TouchSpec[] {
  const grids: Record<string, Record<string, number[]>> = {
    m2: { m3: steps(-60, 60, 15), m4: steps(-90, 90, 45), m5: steps(-80, 80, 20), m6: steps(-80, 80, 20) },
    m3: { m2: steps(-30, 30, 10), m4: steps(-90, 90, 45), m5: steps(-80, 80, 20), m6: steps(-80, 80, 20) },
    m5: { m2: steps(-30, 30, 15), m3: steps(-45, 45, 15), m4: steps(-90, 90, 45), m6: steps(-80, 80, 20) },
  };
  return Object.entries(grids).flatMap(([motor, grid]) => {
    let poses: Record<string, number>[] = [{}];
    for (const [joint, values] of Object.entries(grid))
      poses = poses.flatMap((p) => values.map((v) => ({ ...p, [joint]: v })));
    return poses.map((pose) => ({ motor, direction: -1 as const, pose }));
  });
}

/** The Torso's first touches, by hand (decision 0068): the poses the candidates are drawn about. */
const TORSO_SEEDS: TouchSpec[] = [
  { motor: 'bust_y', direction: -1, pose: { l_shoulder_y: 60 } },
  { motor: 'l_shoulder_x', direction: -1, pose: { bust_y: -15, l_arm_z: 45 } },
  { motor: 'bust_y', direction: -1 },
  { motor: 'bust_x', direction: 1, pose: { bust_y: -15 } },
  { motor: 'bust_y', direction: -1, pose: { bust_x: 15, l_elbow_y: -45 } },
  {
    motor: 'bust_y',
    direction: -1,
    pose: { bust_x: -15, l_shoulder_x: 90, l_elbow_y: -45, l_shoulder_y: 60 },
  },
  { motor: 'l_elbow_y', direction: 1, pose: { bust_y: -15, bust_x: 15, l_arm_z: 45, r_elbow_y: 140 } },
  {
    motor: 'l_elbow_y',
    direction: 1,
    pose: { bust_y: -15, bust_x: 15, l_shoulder_x: 90, l_shoulder_y: 60, r_elbow_y: 140 },
  },
  { motor: 'r_elbow_y', direction: -1, pose: { bust_y: -15, bust_x: 15, r_arm_z: -45, r_shoulder_y: -60 } },
  {
    motor: 'r_elbow_y',
    direction: -1,
    pose: { bust_y: -15, r_shoulder_x: -90, r_arm_z: -45, r_shoulder_y: -60 },
  },
  { motor: 'r_elbow_y', direction: -1, pose: { bust_y: -15, r_shoulder_x: -50, r_shoulder_y: -120 } },
  { motor: 'r_elbow_y', direction: -1, pose: { bust_y: -5, bust_x: -15, r_arm_z: -45, r_shoulder_y: -120 } },
  { motor: 'r_elbow_y', direction: -1, pose: { bust_x: 15, r_arm_z: 45 } },
  {
    motor: 'r_shoulder_x',
    direction: -1,
    pose: { bust_y: -15, bust_x: -15, r_elbow_y: 45, r_shoulder_y: -120, l_elbow_y: -140 },
  },
  { motor: 'r_elbow_y', direction: -1, pose: { r_shoulder_x: -50, r_shoulder_y: -120 } },
];

/** Each seed touch and 150 drawn about it: every other joint within +-15 degrees (the bust) or +-40 (the arms). */
function torsoSpecs(): TouchSpec[] {
  const rnd = mulberry32(1);
  const joints = ['bust_y', 'bust_x', 'l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y'].concat([
    'r_shoulder_y',
    'r_shoulder_x',
    'r_arm_z',
    'r_elbow_y',
  ]);
  return TORSO_SEEDS.flatMap((seed) => [
    seed,
    ...Array.from({ length: 150 }, () => {
      const pose: Record<string, number> = { ...seed.pose };
      for (const j of joints) {
        if (j === seed.motor) continue;
        const [lo, hi] = limits.get(j)!;
        const span = j.startsWith('bust') ? 15 : 40;
        pose[j] = Math.round(Math.min(hi, Math.max(lo, (pose[j] ?? base[j]!) + (rnd() * 2 - 1) * span)));
      }
      return { ...seed, pose };
    }),
  ]);
}

/**
 * Per robot: the candidates, how many touches, a start's least clearance of the table (m), how far above the table
 * the pressing joint's other links must stay at the contact (m: the Torso's bust carries both forearms, and one that
 * comes near may be the one that lands), and the offsets the fit says no touch sees (a yaw about the vertical, the
 * head: at most a few tenths of a millimetre a degree on a candidate, where the others move one by millimetres).
 */
const ROBOTS: Record<
  string,
  { specs: () => TouchSpec[]; count: number; clearM: number; othersM: number; unseen: string[] }
> = {
  'ergo-jr': { specs: ergoJrSpecs, count: 24, clearM: 0.01, othersM: 0, unseen: ['m1'] },
  torso: { specs: torsoSpecs, count: 45, clearM: 0.02, othersM: 0.06, unseen: ['abs_z', 'head_z', 'head_y'] },
};
const setup = ROBOTS[robot];
if (!setup) throw new Error(`no touch design for ${robot}: ${Object.keys(ROBOTS).join(', ')}`);

interface Candidate {
  readonly spec: TouchSpec;
  /** d gap / d unknown: each offset (m per degree), then the lift (m per mm). */
  readonly row: number[];
}

const candidates: Candidate[] = [];
const specs = setup.specs();
for (const spec of specs) {
  const press = spec.motor;
  const links = carried(urdf, press);
  const rest = carried(urdf, names[0]!).filter((l) => !links.includes(l));
  const pose = { ...base, ...spec.pose };
  if (Object.entries(pose).some(([n, v]) => v < limits.get(n)![0] || v > limits.get(n)![1])) continue;
  if (lowest(links, pose).gap < setup.clearM || lowest(rest, pose).gap < setup.clearM) continue;
  // A degree at a time to the first overlap, then bisection to the contact.
  const [lo, hi] = limits.get(press)!;
  const end = spec.direction < 0 ? lo : hi;
  let above = pose[press]!;
  let below: number | undefined;
  for (let v = above; (end - v) * spec.direction >= 0; v += spec.direction) {
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
  if (links.some((l) => l !== link && lowest([l], at).gap < setup.othersM)) continue;
  const row = names.map((_, i) => {
    const up = names.map((__, j) => (j === i ? 0.2 : 0));
    const down = names.map((__, j) => (j === i ? -0.2 : 0));
    return (lowest([link], at, up).gap - lowest([link], at, down).gap) / 0.4;
  });
  const lift = (lowest([link], at, undefined, 2e-4).gap - lowest([link], at, undefined, -2e-4).gap) / 0.4;
  candidates.push({ spec, row: [...row, lift] });
}
console.error(`${candidates.length} candidate touches of ${specs.length}`);
// Each offset's largest effect on a touch (a shape query far off gives no finite gap: not counted).
const reach = names.map((_, i) =>
  Math.max(...candidates.map((c) => (Number.isFinite(c.row[i]!) ? Math.abs(c.row[i]!) : 0))),
);
console.error(
  `each offset's largest effect on a touch (mm/deg): ${names.map((n, i) => `${n} ${(reach[i]! * 1000).toFixed(3)}`).join(', ')}`,
);

// The unknowns the table sees, then the lift.
const seen = names.map((_, i) => i).filter((i) => !setup.unseen.includes(names[i]!));
const free = [...seen, names.length];
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
const left = new Set(candidates.filter((c) => free.every((i) => Number.isFinite(c.row[i]!))));
while (chosen.length < setup.count && left.size) {
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
  if (plan.sinkMm < -MAX_SINK_MM) {
    console.error(`  refused ${JSON.stringify(best!.spec)}: its link sinks ${plan.sinkMm.toFixed(2)} mm`);
    continue;
  }
  information = plus(information, best!);
  chosen.push(best!.spec);
  const s = sigmas(information).map((v) => v.toFixed(2));
  console.error(`${chosen.length}: ${JSON.stringify(best!.spec)} (${plan.link}); sigmas ${s.join(' ')}`);
}
console.log(JSON.stringify(chosen));

/**
 * Measures the Poppy robots' meshes as 26-sided bounding polytopes and writes the numbers to
 * urdf/collision-fit.json, which urdf/generate.ts turns into the generated URDFs' collision shapes.
 *
 * Run: npx tsx urdf/fit-collisions.ts <humanoid-meshes-dir> <torso-meshes-dir> <ergo-jr-meshes-dir>
 * with the `hardware/URDF/meshes` folders of poppy-project/poppy-humanoid (commit d66c8fb) and poppy-project/poppy-torso
 * (commit 8073e69): their "*_respondable" STL files are the V-REP collision shapes of each link, in the link frame
 * (the Torso), and the "*_visual" ones the parts as printed (the Humanoid, measured in pieces: urdf/pieces.ts);
 * and the `meshes` folder of poppy-project/poppy_ergo_jr_description (commit 7eb32bd): the Ergo Jr's COLLADA parts
 * (its own repository's STL files are Git LFS pointers), placed by that package's URDF (lamp effector) and carried
 * into our link frames. The meshes are not part of this repository; only these measurements are: for each link (or
 * piece of a link), how far its shape reaches along each of 26 directions (the faces, edges and corners of a cube),
 * in millimetres.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseStl } from '../src/urdf/stl.ts';
import { parseUrdf } from '../src/urdf/parse.ts';
import { linkPoses } from '../src/sim/link-poses.ts';
import { IDENTITY, qconj, qmul, qrotate, qrpy, vadd, type Quat, type V3 } from '../src/sim/quat.ts';
import { colladaVertices } from './collada.ts';
import { fitPieces } from './pieces.ts';
import { initRapier } from '../src/sim/build-world.ts';
import { userToJoint } from '../src/core/frames.ts';
import { DOP_DIRECTIONS } from './polytope.ts';

/** Links of each robot whose respondable mesh is measured (the Torso's base is its own part). */
const ROBOTS: Record<string, { links: Record<string, string> }> = {};

function links(names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [n, `${n}_respondable`]));
}

const UPPER_BODY = [
  'bust_motors', 'chest', 'neck', 'head',
  'l_shoulder', 'l_shoulder_motor', 'l_upper_arm', 'l_forearm',
  'r_shoulder', 'r_shoulder_motor', 'r_upper_arm', 'r_forearm',
];
// Not the spine: its mesh reaches 25 mm up into the chest's, so the two would be a designed overlap that never
// collides, and nothing would stop a limp bust (the twin has no joint stops: a link stops on another link). Measured
// on the twin, a limp Torso's trunk then folded over (bust_x -170 degrees) under its arms. It keeps its generated box,
// which the chest's polytope is cut back to clear across the bust's angle limits (generate.ts), so that the chest
// still comes to rest on it beyond them.
ROBOTS.torso = { links: links(['base', ...UPPER_BODY]) };
// The Humanoid is measured in pieces from its visual meshes (fitHumanoid): its respondable meshes are each one convex
// shape, and at the start pose the forearm's sits 3.6 mm in the thigh, the abdomen's 30 mm in the pelvis by design.

/**
 * The Ergo Jr (lamp effector) in poppy_ergo_jr_description's urdf/poppy_ergo_jr.urdf.xacro (lamp:=true): per link of
 * ours, its parent there, joint origin xyz/rpy, visual mesh and visual rpy. Its frames are not ours (section_3's sits
 * 15 mm further along m4's axis, turned), but at zero angles both put every joint on the same axis line (m1, m2, m3,
 * m5 and m6 at the same point to 0.1 mm): the meshes are carried into our frames through the two zero poses.
 */
const H = Math.PI / 2;
const ERGO_DESCRIPTION: readonly (readonly [string, string | null, V3, V3, string, V3])[] = [
  ['base_link', null, [0, 0, 0], [0, 0, 0], 'base', [0, 0, 0]],
  ['long_U', 'base_link', [0, 0, 0.0327993216120967], [0, 0, 0], 'long_U', [0, 0, 0]],
  ['section_1', 'long_U', [0, 0, 0.0240006783879033], [0, -H, 0], 'section_1', [0, H, 0]],
  ['section_2', 'section_1', [0.054, 0, 0], [0, 0, 0], 'section_2', [0, H, 0]],
  ['section_3', 'section_2', [0.045, 0, 0], [0, -H, 0], 'section_3', [0, 3.14159268, 0]],
  ['section_4', 'section_3', [0, -0.048, 0], [0, -H, 0], 'section_1', [0, -H, H]],
  ['tip', 'section_4', [0, -0.054, 0], [0, 0, 0], 'lamp', [0, 0, H]],
];
/**
 * The base's mesh is the 150 mm disc it stands on (with its rivets), the printed plate on the disc and the m1 servo on
 * the plate: one convex shape around them would fill the air above the disc up to m1's horn, so it is measured as two
 * pieces cut at the plate's top face (4.1 mm above the base frame): disc and plate, then m1 with its holder.
 */
const ERGO_PIECES: Record<string, readonly (readonly [number, number])[]> = {
  base_link: [
    [-Infinity, 0.00412],
    [0.00412, Infinity],
  ],
};

/** Each Ergo Jr link's reaches (one list per piece) in our link frame, from poppy_ergo_jr_description's meshes. */
function fitErgoJr(dir: string): Record<string, number[] | number[][]> {
  const pose = new Map<string, { p: V3; q: Quat }>();
  for (const [link, parent, xyz, rpy] of ERGO_DESCRIPTION) {
    const up = parent ? pose.get(parent)! : { p: [0, 0, 0] as V3, q: IDENTITY };
    pose.set(link, { p: vadd(up.p, qrotate(up.q, xyz)), q: qmul(up.q, qrpy(rpy)) });
  }
  const ours = linkPoses(parseUrdf(readFileSync(path.join(import.meta.dirname, 'ergo-jr.urdf'), 'utf8')));
  const out: Record<string, number[] | number[][]> = {};
  for (const [link, , , , mesh, visualRpy] of ERGO_DESCRIPTION) {
    const theirs = pose.get(link)!;
    const mine = ours.get(link);
    if (!mine) throw new Error(`ergo-jr.urdf: no link ${link}`);
    const q = qmul(theirs.q, qrpy(visualRpy));
    const back = qconj(mine.q);
    const vertices = colladaVertices(readFileSync(path.join(dir, `${mesh}.dae`), 'utf8'));
    const local: V3[] = [];
    for (let i = 0; i < vertices.length; i += 3) {
      const w = vadd(theirs.p, qrotate(q, [vertices[i]!, vertices[i + 1]!, vertices[i + 2]!]));
      local.push(qrotate(back, [w[0] - mine.p[0], w[1] - mine.p[1], w[2] - mine.p[2]]));
    }
    const pieces = ERGO_PIECES[link];
    out[link] = pieces ? pieces.map(([lo, hi]) => reaches(local.filter((v) => v[2] >= lo && v[2] < hi))) : reaches(local);
  }
  return out;
}

/** How far points reach along each polytope direction, in mm to 0.1 mm. */
function reaches(points: readonly V3[]): number[] {
  if (points.length === 0) throw new Error('no vertices to measure');
  return DOP_DIRECTIONS.map((n) => {
    let reach = -Infinity;
    for (const p of points) reach = Math.max(reach, n[0] * p[0] + n[1] * p[1] + n[2] * p[2]);
    return Math.round(reach * 1e4) / 10;
  });
}

/** Clearance (m) of two Humanoid links three joints apart or more (less where the parts are closer); most pieces a link may have. */
const HUMANOID_CLEAR = 0.003;
const HUMANOID_MAX_PIECES = 12;
/** Every motor this far (user degrees) either way from the start pose: poses a moving robot passes near its start. */
const HUMANOID_AROUND_START = [-10, -5, 5, 10];

/**
 * The Humanoid's links in pieces (urdf/pieces.ts), from poppy-humanoid's `*_visual` meshes (the parts as printed, in
 * the link frames), clear of each other at the zero pose, at the start pose (every motor at 0 degrees) and with every
 * motor a few degrees either way from it.
 */
function fitHumanoid(dir: string): Record<string, number[][]> {
  const root = path.join(import.meta.dirname, '..');
  const urdf = parseUrdf(readFileSync(path.join(root, 'urdf', 'humanoid.urdf'), 'utf8'));
  const config = JSON.parse(readFileSync(path.join(root, 'robots', 'humanoid.json'), 'utf8')) as {
    motors: { name: string; orientation: 'direct' | 'indirect'; offset: number; angleLimit: [number, number] }[];
  };
  const at = (user: number) =>
    new Map(
      config.motors.map((m) => {
        const raw = userToJoint(m, user);
        const [lo, hi] = m.angleLimit.map((d) => (d * Math.PI) / 180) as [number, number];
        return [m.name, Math.min(hi, Math.max(lo, raw))];
      }),
    );
  const poses = [new Map<string, number>(), at(0), ...HUMANOID_AROUND_START.map(at)];
  const meshes = new Map([...urdf.links.keys()].map((link) => [link, parseStl(readFileSync(findMesh(dir, `${link}_visual`)))]));
  return fitPieces(urdf, meshes, poses, HUMANOID_CLEAR, HUMANOID_MAX_PIECES, (line) => console.log(line));
}

function findMesh(dir: string, base: string): string {
  const file = readdirSync(dir).find((f) => f.toLowerCase() === `${base.toLowerCase()}.stl`);
  if (!file) throw new Error(`${dir}: no ${base}.stl`);
  return path.join(dir, file);
}

async function main(): Promise<void> {
  await initRapier();
  const [humanoidDir, torsoDir, ergoDir] = process.argv.slice(2);
  if (!humanoidDir || !torsoDir || !ergoDir)
    throw new Error('usage: npx tsx urdf/fit-collisions.ts <humanoid-meshes-dir> <torso-meshes-dir> <ergo-jr-meshes-dir>');
  const out: Record<string, Record<string, number[] | number[][]>> = { 'ergo-jr': fitErgoJr(ergoDir), humanoid: fitHumanoid(humanoidDir) };
  for (const [robot, spec] of Object.entries(ROBOTS)) {
    out[robot] = {};
    for (const [link, mesh] of Object.entries(spec.links)) {
      // The Torso's upper body is the Humanoid's (same parts); only its base has a file of its own that is complete
      // in the Torso repository (its other meshes there are Git LFS pointers).
      const dir = robot === 'torso' && link === 'base' ? torsoDir : humanoidDir;
      const t = parseStl(readFileSync(findMesh(dir, mesh)));
      const points: V3[] = [];
      for (let i = 0; i < t.length; i += 3) points.push([t[i]!, t[i + 1]!, t[i + 2]!]);
      out[robot]![link] = reaches(points);
    }
  }
  const target = path.join(import.meta.dirname, 'collision-fit.json');
  // One line per link.
  const robots = Object.entries(out).map(
    ([robot, reach]) =>
      `  "${robot}": {\n${Object.entries(reach)
        .map(([link, r]) => `   "${link}": ${JSON.stringify(r)}`)
        .join(',\n')}\n  }`,
  );
  const header =
    `"source": "poppy-humanoid d66c8fb: hardware/URDF/meshes/*_visual in pieces (Humanoid), ` +
    `poppy-humanoid d66c8fb, poppy-torso 8073e69: hardware/URDF/meshes/*_respondable (Torso); ` +
    `poppy_ergo_jr_description 7eb32bd: meshes/*.dae, lamp effector (urdf/fit-collisions.ts)"`;
  writeFileSync(target, `{\n ${header},\n "unit": "mm",\n "directions": "DOP_DIRECTIONS of urdf/polytope.ts",\n "pieces": "a link measured in pieces (ERGO_PIECES of urdf/fit-collisions.ts, urdf/pieces.ts) has one list per piece",\n "robots": {\n${robots.join(',\n')}\n }\n}\n`);
  console.log(`wrote ${path.relative(process.cwd(), target)}`);
}

await main();

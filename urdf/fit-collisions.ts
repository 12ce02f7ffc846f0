/**
 * Measures the Poppy robots' collision meshes as 26-sided bounding polytopes and writes the numbers to
 * urdf/collision-fit.json, which urdf/generate.ts turns into the generated URDFs' collision shapes.
 *
 * Run: npx tsx urdf/fit-collisions.ts <humanoid-meshes-dir> <torso-meshes-dir>
 * with the `hardware/URDF/meshes` folders of poppy-project/poppy-humanoid (commit d66c8fb) and poppy-project/poppy-torso
 * (commit 8073e69): their "*_respondable" STL files are the V-REP collision shapes of each link, in the link frame.
 * The meshes are not part of this repository; only these measurements are: for each link, how far its shape reaches
 * along each of 26 directions (the faces, edges and corners of a cube), in millimetres.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseStl } from '../src/urdf/stl.ts';
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
// Not the Humanoid yet: at its start pose (arms down) the forearms' polytopes sit 12 mm into the thighs (the meshes'
// own hulls 4 mm), the polytope's 45-degree cuts being too coarse for the long, slanted forearm; wedged there, the
// limp robot never comes apart. Its upper body without the forearms, tried (2026-11-23): the limp trunk folded back
// past the bust's limits, the chest 4.2 mm into the spine box and the pelvis 3.2 mm into the abdomen, and crept at
// 0.1 deg/s until 16 s (the boxes rest from 7 s). It keeps its boxes until a closer fit.

function findMesh(dir: string, base: string): string {
  const file = readdirSync(dir).find((f) => f.toLowerCase() === `${base.toLowerCase()}.stl`);
  if (!file) throw new Error(`${dir}: no ${base}.stl`);
  return path.join(dir, file);
}

function main(): void {
  const [humanoidDir, torsoDir] = process.argv.slice(2);
  if (!humanoidDir || !torsoDir) throw new Error('usage: npx tsx urdf/fit-collisions.ts <humanoid-meshes-dir> <torso-meshes-dir>');
  const out: Record<string, Record<string, number[]>> = {};
  for (const [robot, spec] of Object.entries(ROBOTS)) {
    out[robot] = {};
    for (const [link, mesh] of Object.entries(spec.links)) {
      // The Torso's upper body is the Humanoid's (same parts); only its base has a file of its own that is complete
      // in the Torso repository (its other meshes there are Git LFS pointers).
      const dir = robot === 'torso' && link === 'base' ? torsoDir : humanoidDir;
      const t = parseStl(readFileSync(findMesh(dir, mesh)));
      out[robot][link] = DOP_DIRECTIONS.map((n) => {
        let reach = -Infinity;
        for (let i = 0; i < t.length; i += 3) reach = Math.max(reach, n[0] * t[i]! + n[1] * t[i + 1]! + n[2] * t[i + 2]!);
        return Math.round(reach * 1e4) / 10; // mm, to 0.1 mm
      });
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
  const header = `"source": "poppy-humanoid d66c8fb, poppy-torso 8073e69: hardware/URDF/meshes/*_respondable (urdf/fit-collisions.ts)"`;
  writeFileSync(target, `{\n ${header},\n "unit": "mm",\n "directions": "DOP_DIRECTIONS of urdf/polytope.ts",\n "robots": {\n${robots.join(',\n')}\n }\n}\n`);
  console.log(`wrote ${path.relative(process.cwd(), target)}`);
}

main();

/**
 * Scenario: before a lesson, check on the twin that every IK target of a list is reachable and that the physics
 * actually gets there. Run: npx tsx scenarios/ik-targets.ts [robot] [chain] [targets.json]
 * targets.json: [{"xyz": [x, y, z], "duration": 1.5}, ...] (metres, URDF base frame). Exits 1 when one fails.
 */
import { readFile } from 'node:fs/promises';
import { openTwin } from '../src/scenario/twin.ts';

const [robot = 'ergo-jr', chain = robot === 'torso' ? 'l_arm_chain' : 'chain', file] = process.argv.slice(2);
const defaults: Record<string, { xyz: number[]; duration: number }[]> = {
  'ergo-jr': [
    { xyz: [0, -0.15, 0.12], duration: 1.5 },
    { xyz: [0.08, -0.1, 0.1], duration: 1.5 },
    { xyz: [-0.05, -0.12, 0.2], duration: 1.5 },
  ],
  torso: [
    { xyz: [0.15, -0.15, 0.1], duration: 2 },
    { xyz: [0.2, -0.1, 0.2], duration: 2 },
  ],
};
const targets = file
  ? (JSON.parse(await readFile(file, 'utf8')) as { xyz: number[]; duration: number }[])
  : (defaults[robot] ?? []);
const TOLERANCE_M = 0.003;

const twin = await openTwin(robot);
let failures = 0;
try {
  for (const m of twin.robot.motors)
    await twin.post(`/motors/${m.name}/registers/compliant/value.json`, false);
  await twin.advance(0.2);
  for (const t of targets) {
    const res = await twin.untilAnswered(
      twin.post(`/ik/${chain}/goto.json`, { xyz: t.xyz, duration: t.duration, wait: true }),
    );
    if (res.statusCode !== 200) {
      console.log(`FAIL ${t.xyz.join(',')}: ${res.statusCode} ${res.body}`);
      failures++;
      continue;
    }
    await twin.advance(0.5);
    const reached = String((res.json() as { xyz: string }).xyz)
      .split(',')
      .map(Number);
    const now = String(((await twin.get(`/ik/${chain}/value.json`)).json() as { xyz: string }).xyz)
      .split(',')
      .map(Number);
    const solverErr = Math.hypot(...reached.map((v, i) => v - t.xyz[i]!));
    const physicsErr = Math.hypot(...now.map((v, i) => v - t.xyz[i]!));
    const ok = solverErr <= TOLERANCE_M && physicsErr <= TOLERANCE_M;
    if (!ok) failures++;
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${t.xyz.join(',')}: solver ${(solverErr * 1000).toFixed(2)} mm, twin ${(physicsErr * 1000).toFixed(2)} mm`,
    );
  }
} finally {
  await twin.close();
}
console.log(`${targets.length - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);

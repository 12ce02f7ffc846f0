/**
 * `npm run bench -- limp-rest [robot] [starts] [seconds]`: when a limp robot left alone comes to rest (src/sim/rest.ts),
 * from its start pose and from starts a little off it (every joint within +-0.2 degree, seeded), as a line per robot.
 * test/sim/rest.test.ts checks the start pose alone; the other starts say whether its figure is a margin or luck
 * (docs/decisions/0034-humanoid-measured-shapes.md). A start that never rests names the joint that moved most in its
 * last 0.5 s: how far it went and where it ended (a creep ends far, a chatter near where it began).
 */
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { SimBackend } from '../src/sim/backend.ts';
import { loadUrdf } from '../src/urdf/parse.ts';
import { mulberry32, uniform } from '../src/core/prng.ts';

const DEG = 180 / Math.PI;
/** How far off the start pose the other starts put each joint (degrees). */
const SPREAD = 0.2;
/** The window a start is watched in once it ran out of time (s): rest.ts's REST_STEPS of 2 ms. */
const LAST_WINDOW = 0.5;

/** When the world started resting (s), or why it did not within `seconds`. */
async function restOf(robot: string, seed: number, seconds: number): Promise<string> {
  const config = await loadRobotConfig(robot);
  const urdf = await loadUrdf(config.urdfPath);
  const rand = mulberry32(seed);
  const initialPose =
    seed === 0
      ? undefined
      : Object.fromEntries(config.motors.map((m) => [m.name, uniform(rand, -SPREAD, SPREAD)]));
  const sim = new SimBackend({ config, urdf, speed: 'manual', initialPose });
  await sim.open();
  try {
    for (let t = 0; t < seconds; t += 0.1) {
      await sim.advance(0.1);
      const s = sim.simulation.stats();
      if (s.restingSteps > 0) return (s.simTime - s.restingSteps * (s.simTime / s.steps)).toFixed(2);
    }
    const from = sim.jointAngles();
    const most = new Map<string, number>();
    for (let t = 0; t < LAST_WINDOW; t += 0.002) {
      await sim.advance(0.002);
      for (const [name, q] of sim.jointAngles())
        most.set(name, Math.max(most.get(name) ?? 0, Math.abs(q - from.get(name)!)));
    }
    const [name, reach] = [...most].sort((a, b) => b[1] - a[1])[0]!;
    const net = sim.jointAngles().get(name)! - from.get(name)!;
    return `never (${name} ${(reach * DEG).toFixed(3)} / ${(net * DEG).toFixed(3)} deg)`;
  } finally {
    await sim.close();
  }
}

export async function runLimpRestBench(
  robots: readonly string[],
  starts: number,
  seconds: number,
): Promise<void> {
  console.log(
    `\n== A limp robot left alone: at rest from (s), start pose then ${starts - 1} starts within +-${SPREAD} degree, ${seconds} s each (bench/limp-rest.ts) ==`,
  );
  for (const robot of robots) {
    const out: string[] = [];
    for (let seed = 0; seed < starts; seed++) out.push(await restOf(robot, seed, seconds));
    const rested = out.filter((r) => !r.startsWith('never')).length;
    console.log(`      ${robot.padEnd(9)} ${rested}/${starts} at rest: ${out.join(', ')}`);
  }
}

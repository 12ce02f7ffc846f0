/**
 * `npm run bench -- step-cost [robot or config.json ...] [seconds]`: what a step of the moving robot costs (the fast
 * bench's moving case: every motor stiff, goals -15 and -10 degrees every 0.4 s), in 0.05 s chunks of sim time. The fastest
 * quarter of the chunks is reported, the figure the other sessions' load on this machine spoils least (the fast bench's
 * factor moves by 2x under it), with Rapier's own profile of those steps: collision detection, solver and the rest of
 * its step (moving the colliders). A config path measures a variant of a robot's shapes
 * (docs/decisions/0034-humanoid-measured-shapes.md). BENCH_STEP_HZ and BENCH_STEP_ITERATIONS: the physics rate and the
 * solver's substeps a step (the shadow twin's on a small core: 400 and 1; default the sim's, 500 and 4).
 */
import path from 'node:path';
import RAPIER from '@dimforge/rapier3d-simd-compat';
import { createRobotServer } from '../src/server.ts';
import { keepMoving } from './server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const CHUNK = 0.05;
const HZ = process.env.BENCH_STEP_HZ ? Number(process.env.BENCH_STEP_HZ) : undefined;
const ITERATIONS = process.env.BENCH_STEP_ITERATIONS ? Number(process.env.BENCH_STEP_ITERATIONS) : undefined;
const PHASES = ['timingStep', 'timingCollisionDetection', 'timingSolver'] as const;
type Phases = Record<(typeof PHASES)[number], number>;

/** The cost of a step (us): wall, and Rapier's step and phases, over the fastest quarter of the chunks. */
async function stepCost(robot: string, seconds: number): Promise<string> {
  const chunks: { wall: number; steps: number; rapier: Phases }[] = [];
  let rapier: Phases = { timingStep: 0, timingCollisionDetection: 0, timingSolver: 0 };
  // Rapier's profiler is read on the world after each of its steps: the bench wraps World.step for its own run only.
  const step = RAPIER.World.prototype.step;
  RAPIER.World.prototype.step = function (this: RAPIER.World, ...args: Parameters<typeof step>) {
    this.profilerEnabled = true;
    if (ITERATIONS !== undefined) this.integrationParameters.numSolverIterations = ITERATIONS;
    step.apply(this, args);
    for (const k of PHASES) rapier[k] += this[k]();
  };
  const server = await createRobotServer({
    backend: 'sim',
    robot,
    speed: 'manual',
    dt: HZ === undefined ? undefined : 1 / HZ,
    recordsDir: path.join(ROOT, 'tmp', 'bench-records'),
  });
  try {
    const sim = server.simulation!;
    const stopMoving = keepMoving(server);
    await sim.advance(0.5);
    for (let t = 0; t < seconds; t += CHUNK) {
      rapier = { timingStep: 0, timingCollisionDetection: 0, timingSolver: 0 };
      const [wall0, steps0] = [performance.now(), sim.stats().steps];
      await sim.advance(CHUNK);
      chunks.push({ wall: performance.now() - wall0, steps: sim.stats().steps - steps0, rapier });
    }
    await stopMoving();
  } finally {
    await server.close();
    RAPIER.World.prototype.step = step;
  }
  const best = chunks.sort((a, b) => a.wall - b.wall).slice(0, Math.ceil(chunks.length / 4));
  const steps = best.reduce((s, c) => s + c.steps, 0);
  /** Per step over the best chunks, in us (wall and Rapier's timings are in ms). */
  const us = (f: (c: (typeof best)[number]) => number) => (best.reduce((s, c) => s + f(c), 0) / steps) * 1000;
  const wall = us((c) => c.wall);
  const [all, cd, solver] = PHASES.map((k) => us((c) => c.rapier[k]));
  return (
    `${((best.length * CHUNK) / (best.reduce((s, c) => s + c.wall, 0) / 1000)).toFixed(1)}x, ${wall.toFixed(0)} us a step: Rapier ${all!.toFixed(0)} ` +
    `(collisions ${cd!.toFixed(0)}, solver ${solver!.toFixed(0)}, the rest ${(all! - cd! - solver!).toFixed(0)}); ` +
    `ours ${(wall - all!).toFixed(0)}`
  );
}

export async function runStepCostBench(robots: readonly string[], seconds: number): Promise<void> {
  console.log(
    `\n== A step of the moving robot, the fastest quarter of ${CHUNK} s chunks over ${seconds} s (bench/step-cost.ts)` +
      `${(HZ ?? ITERATIONS) ? `, ${HZ ?? 500} Hz with ${ITERATIONS ?? 4} substeps` : ''} ==`,
  );
  for (const robot of robots) console.log(`      ${robot.padEnd(9)} ${await stepCost(robot, seconds)}`);
}

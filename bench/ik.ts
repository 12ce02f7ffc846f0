/**
 * IK bench: for each chain and target kind, 1000 reachable targets (FK of seeded random poses within limits), solved from another
 * random pose within limits. Run: npx tsx bench/ik.ts
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { KinematicChain } from '../src/ik/chain.ts';
import { mulberry32, uniform } from '../src/core/prng.ts';
import { rpyMatrix, solve, type IkTarget } from '../src/ik/solver.ts';
import { loadUrdf } from '../src/urdf/parse.ts';
import { mat3Column, matrixToRpy } from '../src/urdf/transform.ts';

export type IkBenchMode = 'position' | 'rot' | 'rpy';

export interface IkBenchResult {
  readonly robot: string;
  readonly chain: string;
  readonly mode: IkBenchMode;
  readonly targets: number;
  /** Fraction of targets reached within 1 mm (and 1 degree when an orientation is asked). */
  readonly successRate: number;
  /** Fraction the solver itself reported as converged. */
  readonly convergedRate: number;
  /** Millimetres. */
  readonly positionErrorMm: { readonly median: number; readonly p99: number };
  /** Degrees; null for position-only targets. */
  readonly orientationErrorDeg: { readonly median: number; readonly p99: number } | null;
  readonly timeMs: { readonly median: number; readonly p99: number; readonly max: number };
}

const CASES: readonly { robot: 'ergo-jr' | 'torso'; chain: string; modes: readonly IkBenchMode[] }[] = [
  { robot: 'ergo-jr', chain: 'chain', modes: ['position', 'rot', 'rpy'] },
  { robot: 'torso', chain: 'l_arm_chain', modes: ['position', 'rot'] },
  { robot: 'torso', chain: 'r_arm_chain', modes: ['position', 'rot'] },
];

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

function randomPose(chain: KinematicChain, rand: () => number): number[] {
  return chain.toUser(chain.lower.map((lo, j) => uniform(rand, lo, chain.upper[j]!)));
}

function benchChain(
  chain: KinematicChain,
  robot: string,
  mode: IkBenchMode,
  count: number,
  seed: number,
): IkBenchResult {
  const rand = mulberry32(seed);
  const posErr: number[] = [];
  const oriErr: number[] = [];
  const times: number[] = [];
  let success = 0;
  let converged = 0;
  for (let i = 0; i < count; i++) {
    const goal = randomPose(chain, rand);
    const start = randomPose(chain, rand);
    // Passive motors stay where they are during a solve, so the target is made with the seed's passive values.
    chain.passive.forEach((p, j) => {
      if (p) goal[j] = start[j]!;
    });
    const pose = chain.forward(goal);
    let target: IkTarget = { position: pose.position };
    if (mode === 'rot') target = { position: pose.position, rot: mat3Column(pose.rotation, 0) };
    if (mode === 'rpy') {
      const [r, p, y] = matrixToRpy(pose.rotation);
      target = { position: pose.position, rotation: rpyMatrix(r, p, y) };
    }
    const t0 = performance.now();
    const sol = solve(chain, target, start);
    times.push(performance.now() - t0);
    posErr.push(sol.positionError * 1000);
    oriErr.push(sol.orientationError);
    if (sol.positionError <= 1e-3 && (mode === 'position' || sol.orientationError <= 1)) success++;
    if (sol.converged) converged++;
  }
  const sortedPos = [...posErr].sort((a, b) => a - b);
  const sortedOri = [...oriErr].sort((a, b) => a - b);
  const sortedTime = [...times].sort((a, b) => a - b);
  return {
    robot,
    chain: chain.name,
    mode,
    targets: count,
    successRate: success / count,
    convergedRate: converged / count,
    positionErrorMm: { median: quantile(sortedPos, 0.5), p99: quantile(sortedPos, 0.99) },
    orientationErrorDeg:
      mode === 'position' ? null : { median: quantile(sortedOri, 0.5), p99: quantile(sortedOri, 0.99) },
    timeMs: {
      median: quantile(sortedTime, 0.5),
      p99: quantile(sortedTime, 0.99),
      max: sortedTime[sortedTime.length - 1]!,
    },
  };
}

export async function runIkBench(count = 1000): Promise<IkBenchResult[]> {
  const results: IkBenchResult[] = [];
  let seed = 20240601;
  for (const c of CASES) {
    const cfg = await loadRobotConfig(c.robot);
    const urdf = await loadUrdf(cfg.urdfPath);
    const chainCfg = cfg.chains[c.chain];
    if (!chainCfg) throw new Error(`${c.robot} has no chain ${c.chain}`);
    const chain = KinematicChain.fromUrdf(urdf, c.chain, chainCfg, cfg.motors);
    for (const mode of c.modes) {
      benchChain(chain, c.robot, mode, 100, 1); // JIT warm-up, not reported
      results.push(benchChain(chain, c.robot, mode, count, seed++));
    }
  }
  return results;
}

function printTable(results: readonly IkBenchResult[]): void {
  const rows = results.map((r) => ({
    chain: `${r.robot}/${r.chain}`,
    mode: r.mode,
    n: r.targets,
    'success %': (100 * r.successRate).toFixed(1),
    'converged %': (100 * r.convergedRate).toFixed(1),
    'pos err mm med/p99': `${r.positionErrorMm.median.toExponential(1)} / ${r.positionErrorMm.p99.toExponential(1)}`,
    'ori err deg med/p99': r.orientationErrorDeg
      ? `${r.orientationErrorDeg.median.toExponential(1)} / ${r.orientationErrorDeg.p99.toExponential(1)}`
      : '-',
    'time ms med/p99/max': `${r.timeMs.median.toFixed(3)} / ${r.timeMs.p99.toFixed(3)} / ${r.timeMs.max.toFixed(2)}`,
  }));
  console.table(rows);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printTable(await runIkBench());
}

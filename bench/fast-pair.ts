/**
 * Fast mode of two trees in turns, on the moving workload of `npm run bench` (keepMoving in bench/server.ts): whether
 * a change kept the fast-mode speeds within a share of an older tree's, on the same machine at the same moment, where
 * a figure from another day says little (this VM's fast-mode figures swing 30 % within an evening).
 *
 *   git worktree add ../old <commit> && (cd ../old && npm ci)
 *   npx tsx bench/fast-pair.ts ../old [. [rounds [seconds]]]
 *
 * Each run is a process of its own that imports that tree's src/server.ts (--speed max, in-process, as the bench).
 * Prints each run, then per robot the median of each tree and their ratio.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { keepMoving, median, type FastModeTarget } from './server.ts';

const ROBOTS = ['ergo-jr', 'torso', 'humanoid'] as const;

interface SimStats {
  stats(): { readonly simTime: number };
}

/** A tree's server: the controls are on the server (since the sim types left core/) or on its backend (before). */
interface TreeServer extends FastModeTarget {
  readonly simulation?: SimStats;
  readonly backend: FastModeTarget['backend'] & { readonly simulation?: SimStats };
  close(): Promise<void>;
}

interface RunFigures {
  /** Sim seconds per wall second, and per second of this process's CPU time. */
  readonly wall: number;
  readonly cpu: number;
}

/** One run in this process: the tree's server at --speed max, every motor moving, for `seconds`. */
async function runChild(tree: string, robot: string, seconds: number): Promise<RunFigures> {
  const { createRobotServer } = (await import(pathToFileURL(path.join(tree, 'src', 'server.ts')).href)) as {
    createRobotServer(opts: Record<string, unknown>): Promise<TreeServer>;
  };
  const server = await createRobotServer({
    backend: 'sim',
    robot,
    speed: 'max',
    recordsDir: path.join(tree, 'tmp', 'bench-records'),
  });
  try {
    const sim = server.simulation ?? server.backend.simulation;
    if (!sim) throw new Error(`${tree}: no simulation controls`);
    const stop = keepMoving(server);
    await new Promise((r) => setTimeout(r, 500));
    const a = sim.stats().simTime;
    const wall0 = performance.now();
    const cpu0 = process.cpuUsage();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const simSeconds = sim.stats().simTime - a;
    const cpu = process.cpuUsage(cpu0);
    await stop();
    return {
      wall: simSeconds / ((performance.now() - wall0) / 1000),
      cpu: simSeconds / ((cpu.user + cpu.system) / 1e6),
    };
  } finally {
    await server.close();
  }
}

export async function runFastPair(trees: readonly [string, string], rounds = 3, seconds = 4): Promise<void> {
  const figures = new Map<string, RunFigures[]>();
  for (let round = 0; round < rounds; round++) {
    // Each round in the other order, so that neither tree always runs first.
    const order = round % 2 === 0 ? trees : ([trees[1], trees[0]] as const);
    for (const robot of ROBOTS)
      for (const tree of order) {
        const out = execFileSync(
          process.execPath,
          ['--import', 'tsx', import.meta.filename, '--child', tree, robot, String(seconds)],
          { cwd: tree, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
        );
        const run = JSON.parse(out.trim().split('\n').pop()!) as RunFigures;
        const key = `${robot} ${tree}`;
        figures.set(key, [...(figures.get(key) ?? []), run]);
        console.log(
          `round ${round + 1}  ${robot.padEnd(9)} ${tree.padEnd(24)} ${run.wall.toFixed(1).padStart(6)}x wall  ${run.cpu.toFixed(1).padStart(6)}x per CPU second`,
        );
      }
  }
  console.log(`\nmedians of ${rounds} rounds (${trees[1]} / ${trees[0]}):`);
  for (const robot of ROBOTS) {
    const [a, b] = trees.map((t) => figures.get(`${robot} ${t}`)!);
    const wall = [median(a!.map((r) => r.wall)), median(b!.map((r) => r.wall))];
    const cpu = [median(a!.map((r) => r.cpu)), median(b!.map((r) => r.cpu))];
    console.log(
      `  ${robot.padEnd(9)} wall ${wall[0]!.toFixed(1)}x -> ${wall[1]!.toFixed(1)}x (${(wall[1]! / wall[0]!).toFixed(2)}), per CPU second ${cpu[0]!.toFixed(1)}x -> ${cpu[1]!.toFixed(1)}x (${(cpu[1]! / cpu[0]!).toFixed(2)})`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const run = await runChild(path.resolve(args[1]!), args[2]!, Number(args[3]));
    console.log(JSON.stringify(run));
    process.exit(0);
  }
  if (!args[0]) {
    console.error('usage: npx tsx bench/fast-pair.ts <old tree> [<new tree> [rounds [seconds]]]');
    process.exit(2);
  }
  await runFastPair(
    [path.resolve(args[0]), path.resolve(args[1] ?? '.')],
    Number(args[2] ?? 3),
    Number(args[3] ?? 4),
  );
}

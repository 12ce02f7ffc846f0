/**
 * Server benchmarks (issue 2): HTTP throughput and latency with the sim holding real time, the real-time factor kept
 * under that load, the fast-mode real-time factor per robot, and the time from start to the first answer.
 * The server runs in its own process; autocannon runs here (wrk, where installed, for the edge against a trivial
 * route: bench/wrk.ts): both share this machine's cores, client included.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { createRobotServer } from '../src/server.ts';
import { wrk, wrkInstalled } from './wrk.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

export interface LoadResult {
  readonly name: string;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  readonly non2xx: number;
  /** Sim seconds per wall second while the load ran. */
  readonly realTimeFactor: number;
}

interface RunningServer {
  readonly url: string;
  readonly child: ChildProcess;
  readonly startMs: number;
}

/**
 * The server as `npm start` runs it (bin/poppy-twin.js: the built files, rebuilt first when src/ changed) in its own
 * process, saving moves in a scratch folder. Not the sources through tsx: its transform names every closure made per
 * request, which cost a goto 49 us of CPU against the build's 40 (7,000 fewer gotos a second).
 */
function spawnServer(args: readonly string[], stdio: StdioOptions): ChildProcess {
  const records = path.join(ROOT, 'tmp', 'bench-records');
  return spawn(process.execPath, ['bin/poppy-twin.js', '--records-dir', records, ...args], {
    cwd: ROOT,
    stdio,
  });
}

/** Starts the built server in its own process on a free port; resolves once the start-up line names the URL. */
export async function startServerProcess(args: readonly string[]): Promise<RunningServer> {
  const started = performance.now();
  const child = spawnServer(['--port', '0', ...args], ['ignore', 'pipe', 'pipe']);
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+?)\/? /.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return { url, child, startMs: performance.now() - started };
}

/** The framework's ceiling: bench/trivial-server.ts (one trivial fastify route) in its own process. */
export async function startTrivialServer(
  kind: 'get' | 'post' | 'param' | 'node-post' = 'get',
): Promise<RunningServer> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/trivial-server.ts', kind], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+?)\/? /.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`trivial server exited with ${code}: ${out}`)));
  });
  return { url, child, startMs: performance.now() - started };
}

export async function stopServerProcess(server: RunningServer): Promise<void> {
  if (server.child.exitCode !== null) return;
  server.child.kill('SIGTERM');
  await once(server.child, 'exit');
}

async function simStatus(url: string): Promise<{ sim_time: number; wall_time: number }> {
  const res = await fetch(`${url}/sim/status.json`);
  return (await res.json()) as { sim_time: number; wall_time: number };
}

async function load(
  name: string,
  base: string,
  path: string,
  opts: Partial<autocannon.Options>,
  seconds: number,
): Promise<LoadResult> {
  const before = await simStatus(base);
  const result = await autocannon({
    url: base + path,
    connections: 10,
    duration: seconds,
    pipelining: 1,
    ...opts,
  });
  const after = await simStatus(base);
  if (result.non2xx || result.errors)
    console.warn(`${name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    realTimeFactor: (after.sim_time - before.sim_time) / (after.wall_time - before.wall_time),
  };
}

/** A goto moves a stiff motor only (a compliant one answers 409). */
async function stiffen(url: string, motor: string): Promise<void> {
  await fetch(`${url}/motors/${motor}/registers/compliant/value.json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: 'false',
  });
}

/** autocannon options for one-motor gotos (no wait), each client's requests alternating between -20 and 20 degrees. */
function gotoRequests(): Partial<autocannon.Options> {
  let flip = 0;
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    setupClient: (client) => {
      client.setBody(JSON.stringify({ position: (flip++ % 2) * 40 - 20, duration: 0.5 }));
    },
  };
}

export interface EdgeResult {
  /** Requests per second of each round, per target. */
  readonly rounds: {
    readonly trivial: number[];
    /** fastify's trivial POST with the goto's body: the framework's own cost of a POST (a reference, no goal). */
    readonly trivialPost: number[];
    /** fastify's trivial GET on the register read's two-parameter path (a reference, no goal). */
    readonly trivialParam: number[];
    /** node's own http server answering the goto's body, no framework: the floor of a POST on node (a reference). */
    readonly nodePost: number[];
    readonly register: number[];
    readonly robot: number[];
    readonly goto: number[];
  };
  /** The p99 latency (ms) of every run, all targets. */
  readonly p99Ms: { readonly target: string; readonly ms: number }[];
  /** The robot server's own event-loop delay over each of its runs (its /metrics), ms beyond the monitor's interval. */
  readonly loopDelayMs: { readonly target: string; readonly p99: number; readonly max: number }[];
  readonly seconds: number;
  readonly client: EdgeClient;
}

/** The edge bench's HTTP client: wrk where installed (the issue's), else autocannon; BENCH_HTTP_CLIENT chooses. */
export type EdgeClient = 'wrk' | 'autocannon';

export function edgeClient(): EdgeClient {
  const asked = process.env.BENCH_HTTP_CLIENT;
  if (asked === 'wrk' || asked === 'autocannon') return asked;
  if (asked) throw new Error(`BENCH_HTTP_CLIENT=${asked}: wrk or autocannon`);
  return wrkInstalled() ? 'wrk' : 'autocannon';
}

/** The goto's two bodies: wrk sends them in turn, autocannon's connections one each (gotoRequests). */
const GOTO_BODIES = [-20, 20].map((position) => JSON.stringify({ position, duration: 0.5 }));

/** prom-client's event-loop monitor samples every 10 ms: its figures include that interval. */
const LOOP_MONITOR_INTERVAL_MS = 10;

/**
 * The robot server's event-loop delay since its last scrape, from its /metrics (the process's own figures): p99 and
 * max, ms beyond the monitor's sampling interval.
 */
async function loopDelay(url: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string): number => {
    const m = new RegExp(`^${name} ([\\d.e+-]+)$`, 'm').exec(text);
    if (!m) throw new Error(`${name} is not in ${url}/metrics`);
    return Math.max(0, Number(m[1]) * 1000 - LOOP_MONITOR_INTERVAL_MS);
  };
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

/** One run of `seconds` against `url`, 10 connections: a GET, or gotos to -20 and 20 degrees. */
async function edgeRun(
  client: EdgeClient,
  url: string,
  kind: 'get' | 'goto',
  seconds: number,
): Promise<{ requestsPerSecond: number; p99Ms: number; errors: number }> {
  if (client === 'wrk')
    return wrk(url, seconds, kind === 'get' ? { method: 'GET' } : { method: 'POST', bodies: GOTO_BODIES });
  const result = await autocannon({
    url,
    connections: 10,
    duration: seconds,
    ...(kind === 'goto' ? gotoRequests() : {}),
  });
  return {
    requestsPerSecond: result.requests.average,
    p99Ms: result.latency.p99,
    errors: result.non2xx + result.errors,
  };
}

/**
 * The HTTP layer against the framework's ceiling (issues 14, 31): a trivial fastify route in its own process, and a
 * register read, /robot.json and a one-motor goto (no wait) on the Torso sim running at real time in another, 10
 * connections each. They take turns in short rounds (each round in another order), so that the load other
 * processes put on the machine falls on all of them alike. Every round starts its servers anew: one process of the
 * same trivial server answered 45,000 req/s and the next 62,000 for as long as it ran, a lottery the ratio of one
 * pair of processes took for the robot server's cost.
 */
export async function runEdgeBench(rounds = 7, seconds = 3, client = edgeClient()): Promise<EdgeResult> {
  const out = {
    trivial: [] as number[],
    trivialPost: [] as number[],
    trivialParam: [] as number[],
    nodePost: [] as number[],
    register: [] as number[],
    robot: [] as number[],
    goto: [] as number[],
  };
  const p99Ms: { target: string; ms: number }[] = [];
  const loopDelayMs: { target: string; p99: number; max: number }[] = [];
  for (let r = 0; r < rounds; r++) {
    const servers: RunningServer[] = [];
    const started = async (server: Promise<RunningServer>) => {
      servers.push(await server);
      return servers.at(-1)!.url;
    };
    try {
      const trivial = await started(startTrivialServer());
      const trivialPost = await started(startTrivialServer('post'));
      const trivialParam = await started(startTrivialServer('param'));
      const nodePost = await started(startTrivialServer('node-post'));
      const torso = await started(startServerProcess(['--robot', 'torso', '--speed', '1']));
      await stiffen(torso, 'head_z');
      const register = '/motors/head_z/registers/present_position/value.json';
      const targets: [keyof EdgeResult['rounds'], string, 'get' | 'goto'][] = [
        ['trivial', `${trivial}/trivial.json`, 'get'],
        ['trivialPost', `${trivialPost}/trivial-goto.json`, 'goto'],
        ['trivialParam', `${trivialParam}${register}`, 'get'],
        ['nodePost', `${nodePost}/motors/head_z/goto.json`, 'goto'],
        ['register', `${torso}${register}`, 'get'],
        ['robot', `${torso}/robot.json`, 'get'],
        ['goto', `${torso}/motors/head_z/goto.json`, 'goto'],
      ];
      for (const [, url, kind] of targets) await edgeRun(client, url, kind, 1);
      for (let k = 0; k < targets.length; k++) {
        const [name, url, kind] = targets[(r + k) % targets.length]!;
        const ours = url.startsWith(torso);
        if (ours) await loopDelay(torso); // a scrape starts the monitor's figures anew
        const result = await edgeRun(client, url, kind, seconds);
        if (ours) loopDelayMs.push({ target: name, ...(await loopDelay(torso)) });
        if (result.errors) throw new Error(`${name}: ${result.errors} errors or non-2xx answers`);
        out[name].push(result.requestsPerSecond);
        p99Ms.push({ target: name, ms: result.p99Ms });
      }
    } finally {
      for (const server of servers) await stopServerProcess(server);
    }
  }
  return { rounds: out, p99Ms, loopDelayMs, seconds, client };
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * A target against the trivial route: the median of the rounds' ratios (each round's three runs are seconds
 * apart, so the machine's other load falls on both alike), and the ratio of the best rounds. The best trivial round
 * is the likeliest to have had the machine to itself: on this 2-core VM it swung 32,600-46,300 req/s within one run,
 * which the best-rounds ratio charges to the robot server.
 */
export function edgeRatios(
  e: EdgeResult,
  target: Exclude<keyof EdgeResult['rounds'], 'trivial'>,
  against: 'trivial' | 'trivialPost' | 'trivialParam' | 'nodePost' = 'trivial',
): { paired: number; best: number; perRound: number[] } {
  const perRound = e.rounds[target].map((x, r) => x / e.rounds[against][r]!);
  return {
    paired: median(perRound),
    best: Math.max(...e.rounds[target]) / Math.max(...e.rounds[against]),
    perRound,
  };
}

/** Lines for the edge bench: each target's rounds, best and median, and its ratios to the trivial route. */
export function edgeReport(e: EdgeResult): string[] {
  const client = `      client: ${e.client}, 10 connections${e.client === 'wrk' ? ', one thread' : ''}, rounds of ${e.seconds} s`;
  const lines = (Object.entries(e.rounds) as [keyof EdgeResult['rounds'], number[]][]).map(([name, xs]) => {
    const line = `      ${name.padEnd(11)} best ${Math.max(...xs)
      .toFixed(0)
      .padStart(
        6,
      )} req/s  median ${median(xs).toFixed(0).padStart(6)}  rounds ${xs.map((x) => x.toFixed(0)).join(', ')}`;
    if (name === 'trivial') return line;
    const r = edgeRatios(e, name);
    const post =
      name === 'goto'
        ? `\n${' '.repeat(17)}against fastify's trivial POST: median ${edgeRatios(e, name, 'trivialPost').paired.toFixed(2)}x; against node's own POST: median ${edgeRatios(e, name, 'nodePost').paired.toFixed(2)}x`
        : name === 'register'
          ? `\n${' '.repeat(17)}against fastify's trivial GET on its path: median ${edgeRatios(e, name, 'trivialParam').paired.toFixed(2)}x`
          : '';
    return `${line}\n${' '.repeat(17)}against the trivial route: round by round ${r.perRound.map((x) => x.toFixed(2)).join(', ')} (median ${r.paired.toFixed(2)}x); best rounds ${r.best.toFixed(2)}x${post}`;
  });
  const slow = e.p99Ms.filter((r) => r.ms > 20).map((r) => `${r.target} ${r.ms} ms`);
  lines.unshift(client);
  if (e.loopDelayMs.length) {
    const worst = e.loopDelayMs.reduce((w, d) => (d.max > w.max ? d : w));
    lines.push(
      `      the robot server's event-loop delay under load (its /metrics, beyond the 10 ms sampling): p99 median ${median(e.loopDelayMs.map((d) => d.p99)).toFixed(1)} ms, worst ${worst.max.toFixed(1)} ms (${worst.target})`,
    );
  }
  lines.push(
    `      runs with p99 > 20 ms: ${slow.length} of ${e.p99Ms.length}${slow.length ? ` (${slow.join(', ')})` : ''}`,
  );
  return lines;
}

/** HTTP load at 10 connections with the sim running at real time. */
export async function runLoadBench(seconds = 10): Promise<LoadResult[]> {
  const results: LoadResult[] = [];
  const ergo = await startServerProcess(['--robot', 'ergo-jr', '--speed', '1']);
  try {
    await stiffen(ergo.url, 'm1');
    await load('warm-up', ergo.url, '/motors/m1/registers/present_position/value.json', {}, 2);
    results.push(
      await load(
        'GET register value (Ergo Jr)',
        ergo.url,
        '/motors/m1/registers/present_position/value.json',
        {},
        seconds,
      ),
    );
    results.push(
      await load(
        'POST single-motor goto (Ergo Jr)',
        ergo.url,
        '/motors/m1/goto.json',
        gotoRequests(),
        seconds,
      ),
    );
  } finally {
    await stopServerProcess(ergo);
  }
  const torso = await startServerProcess(['--robot', 'torso', '--speed', '1']);
  try {
    await load('warm-up', torso.url, '/robot.json', {}, 2);
    results.push(await load('GET /robot.json (Torso)', torso.url, '/robot.json', {}, seconds));
  } finally {
    await stopServerProcess(torso);
  }
  return results;
}

export interface FastModeResult {
  readonly robot: string;
  /** Every motor stepping between the MOVING_GOALS every 0.4 sim seconds: the solver runs every step. */
  readonly moving: number;
  /** The same robot left stiff and still: the world at rest skips the solver (src/sim/rest.ts). */
  readonly still: number;
  /** Share of the steps of the still run taken at rest (the solver skipped). */
  readonly stillResting: number;
}

/** A motor as the fast-mode workload drives it. */
interface MovingMotor {
  set(name: 'compliant', value: boolean): void;
  set(name: 'goalPosition', value: number): void;
}

/** What the fast-mode workload needs of a robot server: the same in every tree since issue 2 (bench/fast-pair.ts). */
export interface FastModeTarget {
  readonly robot: { readonly motors: readonly MovingMotor[] };
  readonly backend: { readonly clock: { sleep(seconds: number, signal?: AbortSignal): Promise<void> } };
}

/**
 * The moving workload's two goals, user degrees, every motor alike: a path the real robots can take without their
 * printed parts meeting (test/sim/moving-workload.test.ts). The Humanoid's forearms meet its hips from -5 on, its
 * thighs its pelvis from -20 (docs/decisions/0034-humanoid-measured-shapes.md).
 */
export const MOVING_GOALS = [-15, -10] as const;

/**
 * Every motor stiff and stepping between the MOVING_GOALS every 0.4 sim seconds, in sim time so that the robot never
 * comes to rest whatever the speed: the solver runs every step. Returns how to stop it.
 */
export function keepMoving(server: FastModeTarget): () => Promise<void> {
  for (const m of server.robot.motors) m.set('compliant', false);
  const stepping = new AbortController();
  const mover = (async () => {
    for (let k = 0; !stepping.signal.aborted; k++) {
      for (const m of server.robot.motors) m.set('goalPosition', MOVING_GOALS[k % 2]!);
      await server.backend.clock.sleep(0.4, stepping.signal).catch(() => undefined);
    }
  })();
  return async () => {
    stepping.abort();
    await mover;
  };
}

/** Sim seconds per wall second with --speed max, control loop and servo models included. */
export async function runFastModeBench(seconds = 4): Promise<FastModeResult[]> {
  const out: FastModeResult[] = [];
  for (const robot of ['ergo-jr', 'torso', 'humanoid']) {
    const server = await createRobotServer({
      backend: 'sim',
      robot,
      speed: 'max',
      recordsDir: path.join(ROOT, 'tmp', 'bench-records'),
    });
    const sim = server.simulation!;
    /** Sim seconds per wall second over `seconds`, and the share of those steps taken at rest. */
    const measure = async (): Promise<{ factor: number; resting: number }> => {
      const a = sim.stats();
      const wall0 = performance.now();
      await new Promise((r) => setTimeout(r, seconds * 1000));
      const b = sim.stats();
      return {
        factor: (b.simTime - a.simTime) / ((performance.now() - wall0) / 1000),
        resting: (b.restingSteps - a.restingSteps) / Math.max(1, b.steps - a.steps),
      };
    };
    try {
      const stopMoving = keepMoving(server);
      await new Promise((r) => setTimeout(r, 500));
      const moving = await measure();
      await stopMoving();
      for (const m of server.robot.motors) m.set('goalPosition', 0);
      await new Promise((r) => setTimeout(r, 2000));
      const still = await measure();
      out.push({ robot, moving: moving.factor, still: still.factor, stillResting: still.resting });
    } finally {
      await server.close();
    }
  }
  return out;
}

export interface LoopDelayResult {
  readonly robot: string;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * How long the event loop of an idle server at real time is held (perf_hooks.monitorEventLoopDelay, 1 ms resolution,
 * so about 1 ms is the floor): the wait any request may meet before it is read. Physics steps, control ticks and the
 * camera's renders for the marker detector all run on it.
 */
export async function runLoopDelayBench(seconds = 10): Promise<LoopDelayResult[]> {
  const out: LoopDelayResult[] = [];
  for (const robot of ['ergo-jr', 'torso', 'humanoid']) {
    const server = await createRobotServer({
      backend: 'sim',
      robot,
      speed: 1,
      recordsDir: path.join(ROOT, 'tmp', 'bench-records'),
    });
    try {
      for (const m of server.robot.motors) m.set('compliant', false);
      await new Promise((r) => setTimeout(r, 1000));
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      await new Promise((r) => setTimeout(r, seconds * 1000));
      h.disable();
      out.push({ robot, p50Ms: h.percentile(50) / 1e6, p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6 });
    } finally {
      await server.close();
    }
  }
  return out;
}

/**
 * The web view's stream under load (issue 13): ten viewers at 50 Hz on the WebSocket stream while a REST client
 * polls a register at a steady rate, against the same REST load without viewers and against a trivial fastify route
 * (the latency floor of this machine and client). The robot server runs in its own process (src/main.ts, Ergo Jr sim
 * at real time, marker detector on), the viewers in another (bench/ui-viewers.ts), autocannon here: all on the
 * same cores. The three take turns in rounds, so the load other processes put on the machine falls on all alike.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { startServerProcess, startTrivialServer, stopServerProcess } from './server.ts';

export interface UiLoadResult {
  /** 'trivial route', '0 viewers' or '10 viewers'. */
  readonly name: string;
  readonly viewers: number;
  /** Frames each viewer received per second (mean over viewers and rounds). */
  readonly framesPerSecond: number;
  readonly requestsPerSecond: number;
  /** Median over rounds of each round's p50 and p99. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Each round's p99. */
  readonly p99Rounds: number[];
  readonly errors: number;
  /** Sim seconds per wall second, worst round (NaN for the trivial route). */
  readonly realTimeFactor: number;
  /** Server process CPU (user + system) per wall second, percent of one core; NaN where /proc is missing. */
  readonly serverCpuPercent: number;
}

/** CPU seconds a process has used (Linux /proc; NaN elsewhere). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

async function simStatus(url: string): Promise<{ sim_time: number; wall_time: number }> {
  return (await (await fetch(`${url}/sim/status.json`)).json()) as { sim_time: number; wall_time: number };
}

export interface Viewers {
  start(): void;
  /** Frames each viewer received since start; closes them and ends their process. */
  stop(): Promise<number[]>;
}

/** Viewers in their own process, so their frames never delay the load generator's clock. */
export async function openViewers(url: string, count: number, rate: number): Promise<Viewers> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(import.meta.dirname, 'ui-viewers.ts'),
      `${url.replace('http', 'ws')}/stream/state`,
      String(count),
      String(rate),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error('the viewer process ended early');
    return line.value as string;
  };
  if ((await next()) !== 'open') throw new Error('the viewers did not open');
  return {
    start: () => child.stdin!.write('start\n'),
    stop: async () => {
      const exited = once(child, 'exit');
      child.stdin!.write('stop\n');
      const frames = JSON.parse(await next()) as number[];
      await exited;
      return frames;
    },
  };
}

interface Round {
  readonly frames: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly rtf: number;
  readonly cpu: number;
}

/** One round: REST at `requestRate` req/s over 10 connections for `seconds`, with `viewers` viewers at 50 Hz. */
async function round(
  target: { url: string; path: string; pid: number; sim: boolean },
  viewers: number,
  seconds: number,
  requestRate: number,
): Promise<Round> {
  const stream = viewers ? await openViewers(target.url, viewers, 50) : undefined;
  await new Promise((r) => setTimeout(r, 500)); // viewers settled
  stream?.start();
  const before = target.sim ? await simStatus(target.url) : undefined;
  const cpu0 = cpuSeconds(target.pid);
  const t0 = performance.now();
  const result = await autocannon({
    url: `${target.url}${target.path}`,
    connections: 10,
    overallRate: requestRate,
    duration: seconds,
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(target.pid) - cpu0;
  const after = target.sim ? await simStatus(target.url) : undefined;
  const received = (await stream?.stop()) ?? [];
  return {
    frames: viewers ? received.reduce((a, b) => a + b, 0) / viewers / wall : 0,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    rtf: before && after ? (after.sim_time - before.sim_time) / (after.wall_time - before.wall_time) : NaN,
    cpu: (100 * cpu) / wall,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export async function runUiBench(rounds = 3, seconds = 5, requestRate = 1000): Promise<UiLoadResult[]> {
  const trivial = await startTrivialServer();
  const server = await startServerProcess(['--robot', 'ergo-jr', '--speed', '1']);
  try {
    await fetch(`${server.url}/motors/m1/registers/compliant/value.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'false',
    });
    const kinds = [
      {
        name: 'trivial route',
        viewers: 0,
        url: trivial.url,
        path: '/trivial.json',
        pid: trivial.child.pid!,
        sim: false,
      },
      ...[0, 10].map((viewers) => ({
        name: `${viewers} viewers`,
        viewers,
        url: server.url,
        path: '/motors/m1/registers/present_position/value.json',
        pid: server.child.pid!,
        sim: true,
      })),
    ];
    for (const k of kinds) await round(k, 0, 2, requestRate); // warm-up
    const results = kinds.map(() => [] as Round[]);
    for (let r = 0; r < rounds; r++)
      for (const [i, k] of kinds.entries()) results[i]!.push(await round(k, k.viewers, seconds, requestRate));
    return kinds.map((k, i) => {
      const rs = results[i]!;
      return {
        name: k.name,
        viewers: k.viewers,
        framesPerSecond: mean(rs.map((r) => r.frames)),
        requestsPerSecond: mean(rs.map((r) => r.rps)),
        p50Ms: median(rs.map((r) => r.p50)),
        p99Ms: median(rs.map((r) => r.p99)),
        p99Rounds: rs.map((r) => r.p99),
        errors: rs.reduce((a, r) => a + r.errors, 0),
        realTimeFactor: Math.min(...rs.map((r) => r.rtf)),
        serverCpuPercent: mean(rs.map((r) => r.cpu)),
      };
    });
  } finally {
    await stopServerProcess(trivial);
    await stopServerProcess(server);
  }
}

export interface EncodeCost {
  readonly robot: string;
  /** Building and encoding one state, microseconds. */
  readonly encodeMedianUs: number;
  readonly encodeP99Us: number;
  readonly bytes: number;
}

/** What one tick of the stream costs the server: building the state and JSON-encoding it (in-process). */
export async function runEncodeBench(samples = 2000): Promise<EncodeCost[]> {
  const { openTwin } = await import('../src/scenario/twin.ts');
  const { robotState } = await import('../src/ui/state.ts');
  const out: EncodeCost[] = [];
  for (const robot of ['ergo-jr', 'humanoid']) {
    const twin = await openTwin(robot, { recordsDir: 'tmp/bench-records' });
    try {
      await twin.advance(0.1);
      const times: number[] = [];
      let text = '';
      for (let i = 0; i < samples; i++) {
        const t0 = performance.now();
        text = JSON.stringify(robotState(i, twin.robot, twin.primitives, undefined));
        times.push((performance.now() - t0) * 1000);
      }
      times.sort((a, b) => a - b);
      out.push({
        robot,
        encodeMedianUs: times[Math.floor(samples / 2)]!,
        encodeP99Us: times[Math.floor(samples * 0.99)]!,
        bytes: text.length,
      });
    } finally {
      await twin.close();
    }
  }
  return out;
}

/**
 * The web view's stream under load (issue 13): ten viewers at 50 Hz on the WebSocket stream while a REST client
 * polls a register, against the same REST load without viewers. The server runs in its own process (src/main.ts,
 * sim at real time, marker detector on); the viewers and autocannon run here, on the same cores.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { startServerProcess, stopServerProcess } from './server.ts';

export interface UiLoadResult {
  readonly viewers: number;
  /** Frames each viewer received per second (mean over viewers). */
  readonly framesPerSecond: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** Sim seconds per wall second over the run. */
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

async function openViewers(
  url: string,
  count: number,
  rate: number,
): Promise<{ sockets: WebSocket[]; frames: number[] }> {
  const frames = new Array<number>(count).fill(0);
  const sockets = await Promise.all(
    Array.from({ length: count }, (_, i) => {
      const socket = new WebSocket(`${url.replace('http', 'ws')}/stream/state?rate=${rate}`);
      socket.on('message', () => frames[i]!++);
      return new Promise<WebSocket>((resolve, reject) => {
        socket.once('open', () => resolve(socket));
        socket.once('error', reject);
      });
    }),
  );
  return { sockets, frames };
}

/** REST at `requestRate` req/s over 10 connections for `seconds`, with `viewers` WebSocket viewers at 50 Hz. */
async function run(
  url: string,
  pid: number,
  viewers: number,
  seconds: number,
  requestRate: number,
): Promise<UiLoadResult> {
  const { sockets, frames } = await openViewers(url, viewers, 50);
  await new Promise((r) => setTimeout(r, 500)); // viewers settled
  const counted = [...frames];
  const before = await simStatus(url);
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const result = await autocannon({
    url: `${url}/motors/m1/registers/present_position/value.json`,
    connections: 10,
    overallRate: requestRate,
    duration: seconds,
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  const after = await simStatus(url);
  const received = frames.map((f, i) => f - counted[i]!);
  for (const s of sockets) s.close();
  return {
    viewers,
    framesPerSecond: viewers ? received.reduce((a, b) => a + b, 0) / viewers / wall : 0,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    realTimeFactor: (after.sim_time - before.sim_time) / (after.wall_time - before.wall_time),
    serverCpuPercent: (100 * cpu) / wall,
  };
}

export async function runUiBench(seconds = 10, requestRate = 1000): Promise<UiLoadResult[]> {
  const server = await startServerProcess(['--robot', 'ergo-jr', '--speed', '1']);
  try {
    await fetch(`${server.url}/motors/m1/registers/compliant/value.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'false',
    });
    const pid = server.child.pid!;
    await run(server.url, pid, 0, 2, requestRate); // warm-up
    return [
      await run(server.url, pid, 0, seconds, requestRate),
      await run(server.url, pid, 10, seconds, requestRate),
    ];
  } finally {
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

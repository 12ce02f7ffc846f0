/**
 * `npm run bench -- classroom`: thirty Ergo Jr twins in one process (in worker threads, a shard of the class each:
 * BENCH_CLASSROOM_WORKERS, default auto = one per core; 1 steps them all on the main thread) under a student's load each (a viewer on the
 * state stream at 10 Hz, a register read at 5 Hz, a goto every 2 s, one twin in three running a primitive): each
 * twin's real-time factor over each minute, REST p99, the process's RSS, start to all ready; then the capacity (how
 * many Ergo Jr and Torso twins keep a real-time factor >= 0.99). BENCH_CLASSROOM_SECONDS sets the load's length
 * (default 600), BENCH_CAPACITY=0 skips the capacity search. The load clients run in this process, on the same cores.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import WebSocket from 'ws';
import { startServerProcess, stopServerProcess } from './server.ts';

interface Listed {
  name: string;
  port: number;
  sim_time: number;
}

const WINDOW_S = 60;
/** `--workers` of every classroom started here. */
const WORKERS = process.env.BENCH_CLASSROOM_WORKERS ?? 'auto';

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The machine's 1, 5 and 15 minute load averages: other sessions may share its cores. */
const loadAverage = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

const p99 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]! : NaN;
};

async function list(url: string): Promise<Listed[]> {
  return ((await (await fetch(`${url}/twins/list.json`)).json()) as { twins: Listed[] }).twins;
}

/** Starts a classroom of `n` twins of `robot`; time from spawn to /readyz 200. */
async function startClassroom(robot: string, n: number) {
  const started = performance.now();
  // startServerProcess reads the address from the info line: the log level stays at info.
  const server = await startServerProcess(['--classroom', String(n), '--robot', robot, '--workers', WORKERS]);
  for (;;) {
    const res = await fetch(`${server.url}/readyz`).catch(() => undefined);
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { server, readyMs: performance.now() - started };
}

/**
 * One student's load on each twin, its motor made stiff first (a compliant motor refuses a goto); returns a stop
 * function, the latencies of REST calls and the count of answers that were not 2xx.
 */
async function studentLoad(twins: Listed[], host: string, motor: string, primitive: string) {
  for (const t of twins) {
    const res = await fetch(`http://${host}:${t.port}/motors/${motor}/registers/compliant/value.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'false',
    });
    if (!res.ok) throw new Error(`${t.name}: making ${motor} stiff answered ${res.status}`);
  }
  const latencies: number[] = [];
  let errors = 0;
  const timers: NodeJS.Timeout[] = [];
  const sockets: WebSocket[] = [];
  const timed = async (url: string, init?: RequestInit) => {
    const t = performance.now();
    try {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (!res.ok) errors++;
    } catch {
      errors++;
    }
    latencies.push(performance.now() - t);
  };
  for (const [i, t] of twins.entries()) {
    const base = `http://${host}:${t.port}`;
    sockets.push(new WebSocket(`ws://${host}:${t.port}/stream/state?rate=10`));
    timers.push(
      setInterval(() => void timed(`${base}/motors/${motor}/registers/present_position/value.json`), 200),
    );
    let up = false;
    timers.push(
      setInterval(() => {
        up = !up;
        void timed(`${base}/motors/${motor}/goto.json`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ position: up ? 20 : -20, duration: 1 }),
        });
      }, 2000),
    );
    if (i % 3 === 0) void timed(`${base}/primitives/${primitive}/start.json`);
  }
  return {
    latencies,
    errors: () => errors,
    stop() {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.close();
    },
  };
}

/** Per twin and per window, sim seconds per wall second. */
async function measureRtf(url: string, seconds: number, window: number): Promise<number[][]> {
  const windows: number[][] = [];
  let before = await list(url);
  let wall = performance.now();
  for (let left = seconds; left > 0; left -= window) {
    const span = Math.min(window, left);
    await new Promise((r) => setTimeout(r, span * 1000));
    const after = await list(url);
    const now = performance.now();
    const wallS = (now - wall) / 1000;
    windows.push(after.map((t, i) => (t.sim_time - before[i]!.sim_time) / wallS));
    before = after;
    wall = now;
  }
  return windows;
}

export async function runClassroomBench(): Promise<void> {
  const seconds = Number(process.env.BENCH_CLASSROOM_SECONDS ?? 600);
  console.log(
    `== classroom: 30 Ergo Jr twins (--workers=${WORKERS}), a student's load each, ${seconds} s; load average ${loadAverage()} ==`,
  );
  const { server, readyMs } = await startClassroom('ergo-jr', 30);
  const host = new URL(server.url).hostname;
  try {
    const twins = await list(server.url);
    const load = await studentLoad(twins, host, 'm2', 'dance');
    const windows = await measureRtf(server.url, seconds, WINDOW_S);
    load.stop();
    const rss = rssMb(server.child.pid!);
    for (const [k, w] of windows.entries())
      console.log(
        `  minute ${k + 1}: RTF per twin min ${Math.min(...w).toFixed(3)} median ${[...w].sort((a, b) => a - b)[w.length >> 1]!.toFixed(3)} max ${Math.max(...w).toFixed(3)}`,
      );
    const minRtf = Math.min(...windows.flat());
    console.log(`  every twin's RTF over each minute >= ${minRtf.toFixed(3)}   target >= 0.99`);
    console.log(
      `  REST p99 ${p99(load.latencies).toFixed(1)} ms over ${load.latencies.length} calls, ${load.errors()} errors   target <= 20 ms`,
    );
    console.log(`  RSS (the one process) ${rss.toFixed(0)} MB   target <= 2560 MB`);
    console.log(`  start to all 30 ready ${(readyMs / 1000).toFixed(1)} s   target <= 10 s`);
    console.log(`  load average at the end ${loadAverage()} (${os.cpus().length} cores)`);
  } finally {
    await stopServerProcess(server);
  }
  if (process.env.BENCH_CAPACITY === '0') return;
  console.log(
    `\n== capacity (--workers=${WORKERS}): twins that keep RTF >= 0.99 over 30 s under a student load each ==`,
  );
  for (const [robot, motor, primitive, sizes] of [
    ['ergo-jr', 'm2', 'dance', [30, 45, 60, 80]],
    ['torso', 'r_shoulder_y', 'tinsel_demo', [5, 10, 15, 20]],
  ] as const) {
    let best = 0;
    for (const n of sizes) {
      const { server } = await startClassroom(robot, n);
      try {
        const twins = await list(server.url);
        const load = await studentLoad(twins, new URL(server.url).hostname, motor, primitive);
        await new Promise((r) => setTimeout(r, 5000)); // past start-up's compilation
        const windows = await measureRtf(server.url, 30, 30);
        load.stop();
        const min = Math.min(...windows.flat());
        console.log(
          `  ${robot} x${n}: min RTF ${min.toFixed(3)}, RSS ${rssMb(server.child.pid!).toFixed(0)} MB`,
        );
        if (min < 0.99) break;
        best = n;
      } finally {
        await stopServerProcess(server);
      }
    }
    console.log(`  ${robot}: ${best} twins keep >= 0.99 (sizes tried: ${sizes.join(', ')})`);
  }
}

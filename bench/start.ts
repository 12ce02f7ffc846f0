/**
 * `npm run bench -- start`: wall time from spawning a server to its first 200 on GET /motors/list.json, for
 * `npm start`, `node dist/main.js` and `node --import tsx src/main.ts`, against a bare `node -e` HTTP server that
 * answers the same path at once (node's own floor on this machine). The starts take turns, so the machine's other
 * load spreads over all of them; each figure is the median over the rounds, with its ratio to the floor.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildIfStale } from '../scripts/build.js';
import { median } from './server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const BARE =
  "require('node:http').createServer((q, s) => s.end('{}')).listen(Number(process.argv[1]), '127.0.0.1')";

export interface StartFigure {
  readonly name: string;
  readonly runsMs: number[];
  readonly medianMs: number;
  /** Median of each round's own ratio to the bare node start of that round. */
  readonly ratioToNode: number;
}

const KINDS: Record<string, (port: number, records: string) => [string, string[]]> = {
  'node -e (bare HTTP server)': (port) => [process.execPath, ['-e', BARE, String(port)]],
  'npm start': (port, records) => [
    'npm',
    ['start', '--silent', '--', '--port', String(port), '--records-dir', records],
  ],
  'node dist/main.js': (port, records) => [
    process.execPath,
    ['dist/main.js', '--port', String(port), '--records-dir', records],
  ],
  'npm start, Torso': (port, records) => [
    'npm',
    ['start', '--silent', '--', '--robot', 'torso', '--port', String(port), '--records-dir', records],
  ],
  'node dist/main.js, Torso': (port, records) => [
    process.execPath,
    ['dist/main.js', '--robot', 'torso', '--port', String(port), '--records-dir', records],
  ],
  'node --import tsx src/main.ts': (port, records) => [
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--port', String(port), '--records-dir', records],
  ],
};

/** Polls GET /motors/list.json on `port` every 5 ms until a 200: the ms since `t0`. */
async function untilAnswer(port: number, t0: number, what: string): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/motors/list.json`);
      await res.arrayBuffer();
      if (res.ok) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > 60_000) throw new Error(`${what}: no answer within 60 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function firstAnswer(command: string, args: string[], port: number): Promise<number> {
  const t0 = performance.now();
  const child = spawn(command, args, { cwd: ROOT, stdio: 'ignore', detached: command === 'npm' });
  try {
    return await untilAnswer(port, t0, `${command} ${args.join(' ')}`);
  } finally {
    // npm runs the server in its own process group (detached): the signal goes to the whole group.
    if (command === 'npm') process.kill(-child.pid!, 'SIGTERM');
    else child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

export async function runStartBench(rounds = 5): Promise<StartFigure[]> {
  await buildIfStale(); // before any start is timed: no start below pays for a build
  const records = mkdtempSync(path.join(os.tmpdir(), 'poppy-start-'));
  const names = Object.keys(KINDS);
  const runs = new Map(names.map((n) => [n, [] as number[]]));
  let port = 18700;
  for (let round = 0; round < rounds; round++) {
    // A different order each round: no start always follows the same one.
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    for (const name of order) {
      const [command, args] = KINDS[name]!(++port, records);
      runs.get(name)!.push(await firstAnswer(command, args, port));
    }
  }
  const bare = runs.get(names[0]!)!;
  return names.map((name) => {
    const r = runs.get(name)!;
    return {
      name,
      runsMs: r,
      medianMs: median(r),
      ratioToNode: median(r.map((ms, i) => ms / bare[i]!)),
    };
  });
}

export interface IdleMemory {
  /** The --physics flag the server ran with. */
  readonly physics: 'auto' | 'fast';
  /** RSS (MB) of each process, `seconds` after its first answer. */
  readonly rssMb: number[];
  readonly medianMb: number;
}

/**
 * RSS of an idle Torso twin (`node dist/main.js --robot torso`), `seconds` after its first answer, in `processes`
 * processes one after the other, with the default physics code (lean at real time) and with `--physics fast`.
 */
export async function runIdleMemoryBench(processes = 3, seconds = 10): Promise<IdleMemory[]> {
  await buildIfStale();
  const records = mkdtempSync(path.join(os.tmpdir(), 'poppy-rss-'));
  const out: IdleMemory[] = [];
  let port = 18900;
  for (const physics of ['auto', 'fast'] as const) {
    const rssMb: number[] = [];
    for (let i = 0; i < processes; i++) {
      const args = ['dist/main.js', '--robot', 'torso', '--port', String(++port), '--records-dir', records];
      const child = spawn(process.execPath, [...args, '--physics', physics], { cwd: ROOT, stdio: 'ignore' });
      try {
        await untilAnswer(port, performance.now(), 'idle Torso');
        await new Promise((r) => setTimeout(r, seconds * 1000));
        const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]!;
        rssMb.push(Number(kb) / 1024);
      } finally {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
    out.push({ physics, rssMb, medianMb: median(rssMb) });
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of await runStartBench()) console.log(f);
}

/**
 * wrk (Debian's `wrk` package) as the HTTP client of the edge bench, where it is installed: a C client whose own cost
 * per request is a fraction of autocannon's, so a ratio of two servers is the servers' and not the client's. With
 * autocannon on the same 2 cores, a large answer (/robot.json) costs the client more than the server (bench/README.md,
 * "The edge with wrk as the client"). Issue 31 measured its table with wrk, 10 connections.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export interface WrkRun {
  readonly requestsPerSecond: number;
  readonly p99Ms: number;
  /** Socket errors and non-2xx/3xx answers. */
  readonly errors: number;
}

export interface WrkRequest {
  readonly method: 'GET' | 'POST';
  /** Bodies sent in turn (POST; one counter for wrk's one thread, whichever connection sends). */
  readonly bodies?: readonly string[];
}

/** Whether `wrk` runs here. */
export function wrkInstalled(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** A Lua script for wrk that sends JSON bodies in turn, in a folder of its own. */
function bodiesScript(dir: string, bodies: readonly string[]): string {
  const file = path.join(dir, 'bodies.lua');
  writeFileSync(
    file,
    [
      'wrk.method = "POST"',
      'wrk.headers["Content-Type"] = "application/json"',
      `local bodies = { ${bodies.map((b) => `[[${b}]]`).join(', ')} }`,
      'local n = 0',
      'request = function()',
      '  n = n + 1',
      '  return wrk.format(nil, nil, nil, bodies[(n % #bodies) + 1])',
      'end',
      '',
    ].join('\n'),
  );
  return file;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

/** Reads wrk's report: "Requests/sec:", the 99 % line of --latency, and its error lines. */
export function parseWrk(out: string): WrkRun {
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const p99 = /^\s*99%\s+([\d.]+)(us|ms|s|m)\b/m.exec(out);
  if (!rate || !p99) throw new Error(`wrk printed no rate or p99:\n${out}`);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const errors =
    (socket ? socket.slice(1).reduce((s, x) => s + Number(x), 0) : 0) + (non2xx ? Number(non2xx[1]) : 0);
  return { requestsPerSecond: Number(rate[1]), p99Ms: Number(p99[1]) * UNIT_MS[p99[2]!]!, errors };
}

/** One wrk run: one thread, `connections` connections, `seconds` long. */
export async function wrk(
  url: string,
  seconds: number,
  request: WrkRequest,
  connections = 10,
): Promise<WrkRun> {
  const dir = mkdtempSync(path.join(tmpdir(), 'poppy-wrk-'));
  try {
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency'];
    if (request.method === 'POST') args.push('-s', bodiesScript(dir, request.bodies ?? ['{}']));
    const { stdout } = await promisify(execFile)('wrk', [...args, url], { encoding: 'utf8' });
    return parseWrk(stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs scenario files in parallel, one child process per core, each scenario on its own fresh twin, and reports
 * progress as they finish: a live status line on a terminal, plain lines otherwise.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_TIME_LIMIT, type TimeLimit, resolveLimit } from './limits.ts';
import { type CheckResult, type ScenarioResult, fmt, jobError } from './result.ts';
import type { Job, WorkerMessage } from './job.ts';

/** In a folder, the runner picks files named like this (other .ts files there are helpers and data makers). */
export const SCENARIO_FILE = /\.scenario\.[cm]?ts$/;

/** Scenario files of the given files and folders (folders recursively), sorted, without duplicates. */
export async function findScenarios(inputs: readonly string[]): Promise<string[]> {
  const found = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.')) await walk(full);
      else if (e.isFile() && SCENARIO_FILE.test(e.name)) found.add(path.resolve(full));
    }
  };
  for (const input of inputs) {
    const s = await stat(input).catch(() => undefined);
    if (!s) throw new Error(`no such file or folder: ${input}`);
    if (s.isDirectory()) await walk(input);
    else found.add(path.resolve(input));
  }
  return [...found].sort();
}

export interface RunnerOptions {
  readonly robot?: string;
  readonly url?: string;
  /** Processes at once (default: the machine's cores). */
  readonly jobs?: number;
  /** Limits for the scenarios that set none of their own. */
  readonly timeLimit?: TimeLimit;
  /**
   * Seconds past a scenario's wall limit before its process is ended (default 10): the scenario stops itself at the
   * limit unless it blocks its process (a loop that never awaits), which only this catches.
   */
  readonly killGraceSeconds?: number;
  /** Where progress goes (default process.stdout); a TTY gets a live line. */
  readonly out?: NodeJS.WriteStream | { write(s: string): unknown; isTTY?: boolean };
}

const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker.ts');

/** Runs every file; results in the order of `files`. */
export async function runScenarios(
  files: readonly string[],
  opts: RunnerOptions = {},
): Promise<ScenarioResult[]> {
  const out = opts.out ?? process.stdout;
  const live = Boolean(out.isTTY);
  const jobs: Job[] = files.map((p, id) => ({
    id,
    path: p,
    file: path.relative(process.cwd(), p) || p,
    robot: opts.robot,
    url: opts.url,
    ...(opts.timeLimit ? { timeLimit: opts.timeLimit } : {}),
  }));
  const results: ScenarioResult[] = new Array(jobs.length);
  const running = new Map<number, { job: Job; since: number }>();
  let done = 0;
  const status = () => {
    if (!live) return;
    const now = performance.now();
    const names = [...running.values()].map(
      (r) => `${path.basename(r.job.file)} ${fmt((now - r.since) / 1000, 1)} s`,
    );
    out.write(`\r\x1b[K[${done}/${jobs.length}] running: ${names.join(', ')}`);
  };
  const print = (s: string) => out.write(live ? `\r\x1b[K${s}\n` : `${s}\n`);
  const ticker = live ? setInterval(status, 200) : undefined;
  const pool = Math.max(1, Math.min(opts.jobs ?? os.availableParallelism(), jobs.length));
  const queue = [...jobs];
  const workers: ChildProcess[] = [];
  try {
    await Promise.all(
      Array.from({ length: pool }, async () => {
        let child = spawnWorker();
        workers.push(child);
        for (let job = queue.shift(); job; job = queue.shift()) {
          running.set(job.id, { job, since: performance.now() });
          if (!live) print(`start ${job.file}`);
          status();
          const result = await runIn(child, job, opts.killGraceSeconds ?? 10).catch((err: Error) => {
            child = spawnWorker(); // the old one died or was ended: the next job gets a fresh process
            workers.push(child);
            return err instanceof Stalled ? err.result : jobError(job, err.message);
          });
          running.delete(job.id);
          results[job.id] = result;
          done++;
          print(resultLines(result));
          status();
        }
      }),
    );
  } finally {
    if (ticker) clearInterval(ticker);
    if (live) out.write('\r\x1b[K');
    for (const w of workers) if (w.connected) w.disconnect();
  }
  return results;
}

function spawnWorker(): ChildProcess {
  return fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

/** A scenario's process that stopped answering past its wall limit, ended; `result` says so. */
class Stalled extends Error {
  readonly result: ScenarioResult;
  constructor(result: ScenarioResult) {
    super(result.error);
    this.result = result;
  }
}

function runIn(child: ChildProcess, job: Job, graceS: number): Promise<ScenarioResult> {
  return new Promise((resolve, reject) => {
    // Until run(t) begins (the module loaded, the twin started), the larger of the default and the flag's limit.
    let wallS = Math.max(DEFAULT_TIME_LIMIT.wallSeconds, resolveLimit(undefined, job.timeLimit).wallSeconds);
    const sent = performance.now();
    let started = sent;
    let step: string | undefined;
    let who: { name: string; robot: string } | undefined;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(onLate, (wallS + graceS) * 1000 - (performance.now() - started));
    };
    const onLate = () => {
      cleanup();
      child.kill('SIGKILL');
      const error =
        `over its wall-time limit of ${wallS} s: the scenario's process stopped answering (a loop that never ` +
        `awaits?) and was ended ${graceS} s later${step ? `; its last step: ${step}` : ''}`;
      const failure = { error, errorType: 'TimeLimitError', ...(step ? { step } : {}) };
      const result = jobError(job, failure, performance.now() - sent);
      reject(new Stalled({ ...result, ...who }));
    };
    const onMessage = (m: WorkerMessage) => {
      if (m.id !== job.id) return;
      if ('step' in m) step = m.step;
      else if ('wallSeconds' in m) {
        wallS = m.wallSeconds;
        who = { name: m.name, robot: m.robot };
        started = performance.now();
        arm();
      } else {
        cleanup();
        resolve(m.result);
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`the scenario process ended (${signal ?? `exit code ${code}`})`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    child.send(job);
    arm();
  });
}

const WORD: Record<string, string> = { pass: 'pass', fail: 'FAIL', error: 'ERROR', skipped: 'skip' };

/**
 * The lines printed when a scenario finishes: its verdict (for one stopped by an error, the error with its file and
 * line, then how far it got), then each failed or errored check.
 */
export function resultLines(r: ScenarioResult): string {
  const count = (s: CheckResult['status']) => r.checks.filter((c) => c.status === s).length;
  const counts =
    `${count('pass')}/${r.checks.length} checks passed` +
    (count('fail') ? `, ${count('fail')} failed` : '') +
    (count('skipped') ? `, ${count('skipped')} skipped` : '');
  const head = `${WORD[r.status]} ${r.name} [${r.robot}, ${r.target}] ${fmt(r.wallSeconds, 1)} s: `;
  const lines: string[] = [];
  if (r.error) {
    const step = r.step && !r.error.includes(r.step) ? `; last step: ${r.step}` : '';
    lines.push(
      head + r.error,
      `    stopped ${r.checks.length ? `after ${counts}` : 'before any check'}${step}`,
    );
  } else lines.push(head + (r.checks.length ? counts : 'declared no check'));
  for (const c of r.checks) {
    if (c.status === 'fail') lines.push(`    FAIL ${c.name}: ${c.findings[0]?.message ?? c.summary}`);
    if (c.status === 'error') lines.push(`    ERROR ${c.name}: ${c.summary}`);
  }
  return lines.join('\n');
}

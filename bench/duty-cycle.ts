/**
 * The Pi-budget bench's fallback where no cgroup CPU controller is writable (a container, no root): the server and
 * every process it starts pinned to one CPU (`taskset`), and stopped and continued on a duty cycle (SIGSTOP, SIGCONT):
 * they run `share` of every period and are stopped for the rest. Harsher than a quota: a process is stopped on time
 * whether or not it used its share, so the stalls are an upper bound of a quota's (and of a Pi's, which never stops).
 */
import { readFileSync, readdirSync } from 'node:fs';

/** The running and stopped parts of a period (ms) for `share` of one CPU. */
export function dutyCycle(share: number, periodMs: number): { runMs: number; stopMs: number } {
  if (!(share > 0 && share <= 1)) throw new Error(`a share of one core is in (0, 1]: ${share}`);
  const runMs = share * periodMs;
  return { runMs, stopMs: periodMs - runMs };
}

/** A process and all its descendants (every thread's children), read from /proc. */
export function processTree(pid: number, proc = '/proc'): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const task of readdirSync(`${proc}/${out[i]}/task`)) {
        const children = readFileSync(`${proc}/${out[i]}/task/${task}/children`, 'utf8');
        for (const c of children.split(' ').filter(Boolean)) out.push(Number(c));
      }
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export interface DutyCycleOptions {
  readonly share: number;
  readonly periodMs: number;
  /** The processes throttled, read anew each period (the server starts its bus process and ffmpeg later). */
  readonly pids: () => number[];
  /** process.kill in the bench; tests record the calls. */
  readonly signal: (pid: number, sig: 'SIGSTOP' | 'SIGCONT') => void;
  /** Waits `ms` (setTimeout in the bench; tests script it). */
  readonly sleep: (ms: number) => Promise<void>;
  /** Milliseconds, monotonic (performance.now in the bench): phases end on a fixed schedule, late timers or not. */
  readonly now: () => number;
}

/** Runs the duty cycle until stop(), which leaves every process continued. */
export class DutyCycleThrottle {
  /** Periods in which the processes were stopped: the bench's "throttled" count. */
  stopped = 0;
  #running = true;
  readonly #loop: Promise<void>;

  constructor(private readonly opts: DutyCycleOptions) {
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    const { periodMs } = this.opts;
    const { runMs, stopMs } = dutyCycle(this.opts.share, periodMs);
    const { now, sleep } = this.opts;
    // Each phase sleeps until its end on the schedule: a timer firing 1 ms late shortens the next phase, and the
    // share holds over the periods (sleeping runMs each time ran 2.5 ms of every 10.5 at 0.2: 24.7 %).
    let start = now();
    while (this.#running) {
      await sleep(Math.max(0, start + runMs - now()));
      if (!this.#running || stopMs <= 0) {
        start += periodMs;
        continue;
      }
      const pids = this.opts.pids();
      this.#send(pids, 'SIGSTOP');
      this.stopped++;
      await sleep(Math.max(0, start + periodMs - now()));
      this.#send(pids, 'SIGCONT');
      start += periodMs;
      // Far behind (this process was busy): start the schedule again from now rather than run in bursts.
      if (now() - start > periodMs) start = now();
    }
  }

  #send(pids: readonly number[], sig: 'SIGSTOP' | 'SIGCONT'): void {
    for (const pid of pids) {
      try {
        this.opts.signal(pid, sig);
      } catch {
        // gone meanwhile
      }
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    this.#send(this.opts.pids(), 'SIGCONT');
  }
}

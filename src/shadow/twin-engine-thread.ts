/**
 * The shadow twin's physics in a worker thread of its own (twin-engine-worker.ts): on a board of four slow cores (a
 * Raspberry Pi 3B+) the twin's 500 steps a second take about half the server's thread, which then cannot keep both
 * the twin in real time and HTTP answering (bench/README.md, "The Pi budget"); apart, each has a core. The server's
 * thread only forwards each cycle and takes the readings back. docs/decisions/0075-the-twin-in-its-own-thread.md.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { BusRegister, RawValue } from '../dynamixel/registers.ts';
import { entryModule } from '../core/entry.ts';
import { workerBoot } from '../core/ts-worker.ts';
import { settleWithin } from '../core/settle.ts';
import { DEFAULT_SOLVER_ITERATIONS } from '../sim/build-world.ts';
import type { ProbeOptions } from './physics-rate.ts';
import type { ById, TwinCycleInput, TwinCycleOutput, TwinEngine, TwinEngineSetup } from './twin-engine.ts';

/** A request to the worker, answered in order. */
export type EngineCall =
  | { readonly op: 'open'; readonly pose: ById<number> }
  | { readonly op: 'cycle'; readonly input: TwinCycleInput }
  | { readonly op: 'read'; readonly ids: readonly number[]; readonly reg: BusRegister }
  | { readonly op: 'close' };

export type EngineRequest = EngineCall & { readonly id: number };

/** A worker's data for timing the twin's step (ProbeOptions without a clock: that does not cross threads). */
export interface StepProbeData {
  readonly probe: Omit<ProbeOptions, 'now'>;
}

export type EngineResponse =
  { readonly id: number; readonly value: unknown } | { readonly id: number; readonly error: string };

/**
 * Cores from which 'auto' runs the twin in a worker: one for the bus process (real-time), one for the server's thread,
 * one for the twin. On two, three threads share two cores and the twin's messages are pure cost.
 */
export const TWIN_THREAD_MIN_CORES = 3;

/**
 * Where the twin's physics runs: the flag's choice, or for 'auto' by the machine's cores, with the line that says so;
 * this thread when not given (a server made in code: tests stay deterministic).
 */
export function chooseTwinThread(
  flag: 'auto' | 'main' | 'worker' | undefined,
  log: (line: string) => void,
  cores = os.availableParallelism(),
): 'main' | 'worker' {
  if (flag === undefined) return 'main';
  const thread = twinThreadFor(flag, cores);
  const why = flag === 'auto' ? `${cores} cores here` : '--shadow-thread';
  log(
    `shadow twin: physics in ${thread === 'worker' ? 'a worker thread of its own' : "the server's thread"} (${why})`,
  );
  return thread;
}

/** The thread `flag` gives the twin on a machine of `cores` (chooseTwinThread, without its line). */
export function twinThreadFor(
  flag: 'auto' | 'main' | 'worker' | undefined,
  cores = os.availableParallelism(),
): 'main' | 'worker' {
  if (flag === undefined) return 'main';
  return flag === 'auto' ? (cores >= TWIN_THREAD_MIN_CORES ? 'worker' : 'main') : flag;
}

/** How long a close waits for the worker to close its world before ending it, ms. */
export const CLOSE_GRACE_MS = 1000;

const ENTRY = entryModule(new URL('./twin-engine-worker.ts', import.meta.url), 'shadow-twin-worker').href;

/**
 * What a step of the twin's world costs (ms), timed in a worker of its own that is ended after: the twin that will run
 * in a worker is timed in one, and the server's thread keeps no physics engine of its own for the probe alone (its
 * RSS saving was within the spread: bench/README.md, "One physics engine in a worker-mode server").
 */
export async function measureStepCostInWorker(probe: StepProbeData['probe']): Promise<number> {
  const worker = new Worker(workerBoot(ENTRY), {
    eval: true,
    execArgv: [],
    workerData: { probe } satisfies StepProbeData,
  });
  try {
    return await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) =>
        reject(new Error(`the twin's step probe exited (code ${code}) without a figure`)),
      );
    });
  } finally {
    await worker.terminate();
  }
}

export class ThreadTwinEngine implements TwinEngine {
  readonly stepS: number;
  /** As the setup gives them to the worker's world (its default the sim's). */
  readonly solverIterations: number;
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #nextId = 1;
  /** Why the worker is gone (every request then rejects with it). */
  #gone: string | undefined;

  /** `stepS` must be given: the worker's world takes it, and the server needs it before the world opens. */
  constructor(setup: TwinEngineSetup & { readonly stepS: number }) {
    this.stepS = setup.stepS;
    this.solverIterations = setup.solverIterations ?? DEFAULT_SOLVER_ITERATIONS;
    this.#worker = new Worker(workerBoot(ENTRY), { eval: true, execArgv: [], workerData: setup });
    this.#worker.unref(); // never keeps the process alive on its own
    this.#worker.on('message', (res: EngineResponse) => {
      const waiting = this.#pending.get(res.id);
      if (!waiting) return;
      this.#pending.delete(res.id);
      if ('error' in res) waiting.reject(new Error(res.error));
      else waiting.resolve(res.value);
    });
    this.#worker.on('error', (err) => this.#lost(`the shadow twin's thread failed: ${err.message}`));
    this.#worker.on('exit', (code) => this.#lost(`the shadow twin's thread exited (code ${code})`));
  }

  /** The worker itself (tests end it to see the server carry on). */
  get thread(): Worker {
    return this.#worker;
  }

  /** The worker is gone (failed, exited or closed): every request rejects. */
  get gone(): boolean {
    return this.#gone !== undefined;
  }

  open(pose: ById<number>): Promise<void> {
    return this.#ask({ op: 'open', pose }) as Promise<void>;
  }

  cycle(input: TwinCycleInput): Promise<TwinCycleOutput> {
    return this.#ask({ op: 'cycle', input }) as Promise<TwinCycleOutput>;
  }

  async read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    return (await this.#ask({ op: 'read', ids, reg })) as Map<number, RawValue>;
  }

  /**
   * Closes the world, then ends the worker; one busy past `graceMs` (a cycle that does not end) is ended anyway, and
   * what was waiting for it rejects: a stuck twin never keeps the server from stopping.
   */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    if (!this.#gone) await settleWithin(this.#ask({ op: 'close' }), graceMs);
    this.#gone ??= 'the shadow twin is closed';
    await this.#worker.terminate();
    this.#lost(this.#gone);
  }

  #ask(req: EngineCall): Promise<unknown> {
    if (this.#gone) return Promise.reject(new Error(this.#gone));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ ...req, id });
    });
  }

  #lost(why: string): void {
    this.#gone ??= why;
    const waiting = [...this.#pending.values()];
    this.#pending.clear();
    for (const w of waiting) w.reject(new Error(why));
  }
}

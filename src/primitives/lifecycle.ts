/**
 * A primitive's lifecycle on the robot's clock: start, stop, pause and resume; the body (setup, then a periodic
 * update or a one-shot run, then teardown); the run-local time that pauses freeze. State rules are docs/reference/contract.md 5;
 * start and stop calls are serialised per primitive, so a setup never overlaps a teardown or another setup.
 */
import { AbortError, isAbortError } from '../core/clock.ts';
import { conflict, RobotError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { Robot } from '../robot/robot.ts';

export type PrimitiveState = 'stopped' | 'running' | 'paused';

export interface PrimitiveOptions {
  /** Hz of update(); omit for a one-shot run() or for a primitive whose children do the work. */
  readonly frequency?: number;
  /** Started by the manager when it opens (temperature_monitoring, as on the real robot). */
  readonly autoStart?: boolean;
}

/** What the lifecycle needs of a primitive's context (PrimitiveContext has more). */
export interface LifecycleContext {
  readonly robot: Robot;
  readonly logger: Logger;
  /** `closing` is aborted when the manager closes: teardowns stop waiting. */
  readonly host: { readonly closing: AbortSignal };
}

/** A failure reported with the phase it happened in (an isolated primitive's worker says where its code failed). */
export class PrimitiveFailure extends Error {
  readonly phase: string;
  constructor(phase: string, message: string) {
    super(message);
    this.name = 'PrimitiveFailure';
    this.phase = phase;
  }
}

interface Run {
  readonly ctl: AbortController;
  body: Promise<void>;
  /** finish() was called: the update loop ends after the current update. */
  finishing: boolean;
  /** Stopping: pauses no longer apply (a teardown never freezes). */
  halting: boolean;
  // Run-local time: robot time since launch minus the time spent paused.
  readonly origin: number;
  pausedTotal: number;
  pausedAt: number | undefined;
  setupEnd: number | undefined;
}

/** How long a stop waits (robot seconds) for a body that ignores the abort before tearing down anyway. */
const STOP_GRACE_S = 2;
const EPS = 1e-6;

export abstract class PrimitiveLifecycle {
  readonly name: string;
  /** Hz of update() (the `frequency` option), undefined for a one-shot or idle primitive. */
  readonly rate: number | undefined;
  readonly autoStart: boolean;
  protected readonly robot: Robot;
  protected readonly logger: Logger;
  readonly #closing: AbortSignal;

  #state: PrimitiveState = 'stopped';
  #lastError: string | undefined;
  /** Start and stop operations, in call order. Never rejects. */
  #queue: Promise<void> = Promise.resolve();
  #current: Run | undefined;
  #phase: 'idle' | 'setup' | 'update' | 'run' | 'teardown' = 'idle';
  /** Signal of whatever phase runs now (the body's, or the manager's closing signal during teardown). */
  #signal: AbortSignal;
  #resumeWaiters = new Set<() => void>();
  #children = new Set<PrimitiveLifecycle>();
  #pausedChildren = new Set<PrimitiveLifecycle>();

  constructor(context: LifecycleContext, name: string, options: PrimitiveOptions = {}) {
    if (options.frequency !== undefined && !(options.frequency > 0 && Number.isFinite(options.frequency)))
      throw new RangeError(`primitive ${name}: frequency must be a positive number of Hz`);
    this.name = name;
    this.rate = options.frequency;
    this.autoStart = options.autoStart ?? false;
    this.robot = context.robot;
    this.logger = context.logger;
    this.#closing = context.host.closing;
    this.#signal = this.#closing;
  }

  // --- what subclasses write ---

  /** Runs at start, before update() or run(); its sleeps and gotos are cut short by stop(). */
  protected setup(): void | Promise<void> {}
  /** Called `frequency` times per second of robot time (pauses excluded) with the seconds since setup ended. */
  protected update(_elapsed: number): void | Promise<void> {}
  /** Runs at stop or after the body ended or failed; its requests are applied before the primitive leaves. */
  protected teardown(): void | Promise<void> {}
  /** One-shot body instead of the update loop: the primitive stops when it returns. */
  protected run?(): Promise<void>;

  /** A run begins: the primitive's requests start afresh and join the manager's combination. */
  protected abstract joinHost(): void;
  /** Before the teardown, after the body ended. */
  protected abstract beforeTeardown(): void;
  /** After the teardown: the requests leave the combination; `natural` when the body ended by itself. */
  protected abstract leaveHost(natural: boolean): void;

  // --- state ---

  get state(): PrimitiveState {
    return this.#state;
  }

  /** Running or paused (a paused primitive counts as running, docs/reference/contract.md 5). */
  get running(): boolean {
    return this.#state !== 'stopped';
  }

  /** Why the last run failed ("update: <message>"), until the next start. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Seconds since setup ended, pauses excluded; 0 before. */
  get elapsed(): number {
    const run = this.#current;
    return run?.setupEnd === undefined ? 0 : Math.max(0, this.localTime() - run.setupEnd);
  }

  /** A setup, body or teardown is in progress, or a start/stop is queued. */
  get busy(): boolean {
    return this.#current !== undefined || this.#phase !== 'idle';
  }

  /** True once stop() was called on the body in progress: loops that catch errors should end. */
  protected get stopping(): boolean {
    return this.#signal.aborted;
  }

  // --- lifecycle ---

  /**
   * Starts the primitive; a running (or paused) one stays as it is. Resolves once the setup has begun, after any
   * teardown still in progress. Failures go to lastError and the log; it rejects only while the robot is held (a
   * calibration run, 409), and then nothing starts.
   */
  start(): Promise<void> {
    if (this.#state !== 'stopped') return this.#queue;
    const refused = this.robot.refusal(`the start of primitive "${this.name}"`);
    if (refused) return Promise.reject(refused);
    this.#state = 'running';
    this.#lastError = undefined;
    return this.#enqueue(() => this.#launch());
  }

  /** Stops the primitive (also when paused); resolves when its teardown is over. Stopping a stopped one is fine. */
  stop(): Promise<void> {
    if (this.#state === 'stopped') return this.#queue;
    this.#unpauseClock();
    this.#state = 'stopped';
    this.#current?.ctl.abort();
    return this.#enqueue(() => this.#halt());
  }

  /** Freezes the primitive: its loop, sleeps and gotos wait, its requests hold. 409 when it is not running. */
  pause(): void {
    if (this.#state === 'stopped')
      throw conflict(
        `primitive "${this.name}" is not running`,
        `start it first: GET /primitives/${this.name}/start.json`,
        'only a running primitive can be paused',
      );
    if (this.#state === 'paused') return;
    this.#state = 'paused';
    const run = this.#current;
    if (run && !run.halting) run.pausedAt = this.robot.clock.now();
    for (const child of this.#children) {
      if (child.state === 'running') {
        child.pause();
        this.#pausedChildren.add(child);
      }
    }
  }

  /** Continues a paused primitive. 409 when it is not paused. */
  resume(): void {
    if (this.#state !== 'paused')
      throw conflict(
        `primitive "${this.name}" is not paused`,
        `pause it first: GET /primitives/${this.name}/pause.json`,
        `it is ${this.#state}`,
      );
    this.#unpauseClock();
    this.#state = 'running';
    for (const child of this.#pausedChildren) if (child.state === 'paused') child.resume();
    this.#pausedChildren.clear();
  }

  // --- tools for subclasses ---

  /** Waits `seconds` of robot time, pauses excluded. Rejects with an AbortError when the primitive stops. */
  protected sleep(seconds: number): Promise<void> {
    return this.untilLocal(this.localTime() + Math.max(0, seconds));
  }

  /** Ends the update loop after the current update, as if run() had returned (the primitive then stops itself). */
  protected finish(): void {
    if (this.#current) this.#current.finishing = true;
  }

  /** Registers a sub-primitive: it pauses, resumes and stops with this one and is not listed. Start it yourself. */
  protected child<T extends PrimitiveLifecycle>(p: T): T {
    this.#children.add(p);
    return p;
  }

  /** Run-local time (pauses excluded); plain robot time when nothing runs. */
  protected localTime(): number {
    const now = this.robot.clock.now();
    const run = this.#current;
    if (!run) return now;
    // Frozen exactly while paused (no rounding noise that would rewrite a held goal).
    return (run.pausedAt ?? now) - run.origin - run.pausedTotal;
  }

  /** Resolves at run-local time `t`; rejects with an AbortError when the primitive stops (unawaited calls are safe). */
  protected untilLocal(t: number): Promise<void> {
    const done = this.#sleepUntilLocal(t, this.#signal);
    done.catch(() => {});
    return done;
  }

  // --- internals ---

  #enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(op).catch((err: unknown) => this.#fail(err, 'lifecycle'));
    this.#queue = next;
    return next;
  }

  async #launch(): Promise<void> {
    if (this.#state === 'stopped') return; // stopped again before it could launch
    const now = this.robot.clock.now();
    const run: Run = {
      ctl: new AbortController(),
      body: Promise.resolve(),
      finishing: false,
      halting: false,
      origin: now,
      pausedTotal: 0,
      pausedAt: this.#state === 'paused' ? now : undefined,
      setupEnd: undefined,
    };
    this.#current = run;
    this.#signal = run.ctl.signal;
    this.joinHost();
    run.body = this.#body(run);
  }

  async #body(run: Run): Promise<void> {
    const signal = run.ctl.signal;
    try {
      this.#phase = 'setup';
      await this.setup();
      if (signal.aborted) throw new AbortError();
      run.setupEnd = this.localTime();
      if (this.run) {
        this.#phase = 'run';
        await this.run();
      } else if (this.rate !== undefined) {
        await this.#loop(run, this.rate);
      } else {
        this.#phase = 'run';
        await this.#untilAborted(signal);
      }
    } catch (err) {
      if (!isAbortError(err)) this.#fail(err, this.#phase);
    }
    // Ended by itself (returned, finished or failed): stop as if stop() had been called.
    if (!signal.aborted && this.#current === run && this.#state !== 'stopped') {
      this.#unpauseClock();
      this.#state = 'stopped';
      void this.#enqueue(() => this.#halt());
    }
  }

  async #loop(run: Run, frequency: number): Promise<void> {
    const period = 1 / frequency;
    let next = run.setupEnd ?? 0;
    while (!run.finishing) {
      await this.#sleepUntilLocal(next, run.ctl.signal);
      this.#phase = 'update';
      await this.update(this.elapsed);
      next += period;
      // Behind by more than a few periods (a slow update): skip ahead instead of bursting.
      const local = this.localTime();
      if (local - next > 5 * period) next = local;
    }
  }

  async #halt(): Promise<void> {
    const run = this.#current;
    if (!run) return;
    const natural = !run.ctl.signal.aborted;
    run.halting = true;
    this.#unpauseClock();
    run.ctl.abort();
    await this.#bodyEnded(run);
    await Promise.all([...this.#children].map((c) => c.stop()));
    this.#pausedChildren.clear();
    this.#signal = this.#closing;
    this.#phase = 'teardown';
    this.beforeTeardown();
    try {
      await this.teardown();
    } catch (err) {
      if (!isAbortError(err)) this.#fail(err, 'teardown');
    }
    this.leaveHost(natural);
    this.#current = undefined;
    this.#phase = 'idle';
  }

  /** The body normally ends at once when aborted; one that ignores the abort gets a grace period, then is left. */
  async #bodyEnded(run: Run): Promise<void> {
    const grace = new AbortController();
    const closing = this.#closing;
    const onClose = () => grace.abort();
    closing.addEventListener('abort', onClose, { once: true });
    const timeout = closing.aborted
      ? Promise.resolve('late' as const)
      : this.robot.clock.sleep(STOP_GRACE_S, grace.signal).then(
          () => 'late' as const,
          () => 'late' as const,
        );
    const outcome = await Promise.race([run.body.then(() => 'ended' as const), timeout]);
    grace.abort();
    closing.removeEventListener('abort', onClose);
    if (outcome === 'late' && !closing.aborted) {
      this.#fail(new Error(`did not stop within ${STOP_GRACE_S} s; tearing down anyway`), this.#phase);
    }
  }

  #fail(err: unknown, where: string): void {
    const phase = err instanceof PrimitiveFailure ? err.phase : where;
    const msg = err instanceof Error ? err.message : String(err);
    this.#lastError = `${phase}: ${msg}`;
    const kind =
      err instanceof RobotError || err instanceof PrimitiveFailure || !(err instanceof Error)
        ? ''
        : ` (${err.name})`;
    this.logger.error(`primitive ${this.name}: ${phase} failed${kind}: ${msg}`);
  }

  #unpauseClock(): void {
    const run = this.#current;
    if (run?.pausedAt !== undefined) {
      run.pausedTotal += this.robot.clock.now() - run.pausedAt;
      run.pausedAt = undefined;
    }
    const waiters = [...this.#resumeWaiters];
    this.#resumeWaiters.clear();
    for (const w of waiters) w();
  }

  async #sleepUntilLocal(t: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw new AbortError();
      if (this.#current?.pausedAt !== undefined) {
        await this.#resumed(signal);
        continue;
      }
      const remaining = t - this.localTime();
      if (remaining <= EPS) return;
      await this.robot.clock.sleep(remaining, signal);
    }
  }

  #resumed(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#resumeWaiters.delete(wake);
        reject(new AbortError());
      };
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#resumeWaiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #untilAborted(signal: AbortSignal): Promise<void> {
    return new Promise<void>((_resolve, reject) => {
      if (signal.aborted) reject(new AbortError());
      else signal.addEventListener('abort', () => reject(new AbortError()), { once: true });
    });
  }
}

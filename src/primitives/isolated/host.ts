/**
 * Custom primitives isolated in worker threads. Each module runs in its own Worker (memory capped by resourceLimits,
 * watched by a heartbeat) and reaches the robot through the usual primitive API on a mirror the server refreshes
 * at every control tick; its requests come back and are combined like any primitive's, one tick later. Whatever
 * the module does wrong (throws, timer throws, process.exit, busy loops, unbounded memory, a method that never
 * settles) ends that primitive only, with the reason in `lastError` (GET /primitives/<p>/status.json) and the log.
 */
import { Worker } from 'node:worker_threads';
import { RobotError, timedOut } from '../../core/errors.ts';
import { typescriptWorkerBoot } from '../../core/ts-worker.ts';
import { entryModule } from '../../core/entry.ts';
import type { Logger } from '../../core/logger.ts';
import {
  type MethodSpec,
  Primitive,
  PrimitiveFailure,
  type PrimitiveContext,
  type PropertySpec,
  type ResolvedRequest,
} from '../primitive.ts';
import type { Declarations, FromWorker, MotorSnapshot, ToWorker, WorkerInput } from './protocol.ts';

export interface IsolationOptions {
  /** Wall-clock ms between heartbeats. */
  readonly heartbeatMs: number;
  /** A worker that has not answered a heartbeat for this long (ms) is stopped (a busy loop). */
  readonly unresponsiveMs: number;
  /**
   * Loading a module (its top level and factory) may take this long (ms), counted once the worker has booted: a
   * worker's boot (the TypeScript loader, the primitive library) slows with the machine's load and with the other
   * workers booting beside it, and is no fault of the module.
   */
  readonly loadTimeoutMs: number;
  /** A property read or write, a method call, a start or a stop may take this long (ms); then 504. */
  readonly callTimeoutMs: number;
  /** Heap limit of each worker (MB). */
  readonly memoryMb: number;
}

export const DEFAULT_ISOLATION: IsolationOptions = {
  heartbeatMs: 500,
  unresponsiveMs: 2000,
  loadTimeoutMs: 10_000,
  callTimeoutMs: 5000,
  memoryMb: 128,
};

/** A worker's boot, before its module loads, may take this long (ms): only a boot that hangs reaches it. */
const BOOT_TIMEOUT_MS = 60_000;

// Built or not, the worker registers tsx: the operator's primitives are TypeScript.
const WORKER_ENTRY = entryModule(new URL('./worker.ts', import.meta.url), 'primitive-worker').href;

/** The worker registers tsx's loader itself (a worker's execArgv does not carry module hooks on Node 20). */
const workerBoot = () => typescriptWorkerBoot(WORKER_ENTRY);

type Ask = Exclude<ToWorker, { type: 'tick' } | { type: 'ping' }>;
type AskBody = Ask extends infer A ? (A extends Ask ? Omit<A, 'id'> : never) : never;

/** One worker thread and its messages. */
export class WorkerLink {
  readonly file: string;
  readonly ready: Promise<Declarations>;
  /** Why the worker ended, once it has. */
  dead: string | undefined;
  onTock: ((m: FromWorker & { type: 'tock' }) => void) | undefined;
  onDeath: ((reason: string) => void) | undefined;
  readonly #worker: Worker;
  readonly #options: IsolationOptions;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #watchdog: NodeJS.Timeout | undefined;
  #ids = 0;
  #pingSince: number | undefined;
  #tickInFlight = false;
  #failLoad: (e: Error) => void = () => {};

  constructor(file: string, input: WorkerInput, options: IsolationOptions, logger: Logger) {
    this.file = file;
    this.#options = options;
    this.#worker = new Worker(workerBoot(), {
      eval: true,
      workerData: input,
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: options.memoryMb, maxYoungGenerationSizeMb: 16 },
      stdout: false,
      stderr: false,
    });
    let loaded!: (d: Declarations) => void;
    let failed!: (e: Error) => void;
    this.ready = new Promise<Declarations>((resolve, reject) => ((loaded = resolve), (failed = reject)));
    this.ready.catch(() => {});
    // Until the worker has booted, only a generous limit (a boot that never ends); then the module's own limit.
    let loadTimer = setTimeout(
      () => this.kill(`its worker did not boot within ${BOOT_TIMEOUT_MS / 1000} s`),
      BOOT_TIMEOUT_MS,
    );
    this.#worker.on('message', (m: FromWorker) => {
      switch (m.type) {
        case 'booted':
          clearTimeout(loadTimer);
          loadTimer = setTimeout(
            () =>
              this.kill(
                `loading did not finish within ${options.loadTimeoutMs / 1000} s (a busy loop at load?)`,
              ),
            options.loadTimeoutMs,
          );
          break;
        case 'loaded':
          clearTimeout(loadTimer);
          this.#watch();
          loaded(m.declarations);
          break;
        case 'load-failed':
          this.kill(m.reason);
          break;
        case 'tock':
          this.#tickInFlight = false;
          this.onTock?.(m);
          break;
        case 'pong':
          this.#pingSince = undefined;
          break;
        case 'reply': {
          const waiter = this.#pending.get(m.id);
          this.#pending.delete(m.id);
          if (!waiter) break;
          if (m.ok) waiter.resolve(m.value);
          else
            waiter.reject(
              m.error.code
                ? new RobotError(m.error.code, m.error.message, m.error.tip, m.error.details)
                : new Error(m.error.message),
            );
          break;
        }
        case 'log':
          logger[m.level](m.msg);
          break;
      }
    });
    this.#worker.on('error', (err: Error & { code?: string }) => {
      const reason =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `ran out of memory (limit ${options.memoryMb} MB)`
          : `uncaught ${err.name === 'Error' ? 'exception' : err.name}: ${err.message}`;
      this.#ended(reason);
    });
    this.#worker.on('exit', (code) =>
      this.#ended(`its thread exited (code ${code}): process.exit() or a crash`),
    );
    this.#failLoad = (e) => {
      clearTimeout(loadTimer);
      failed(e);
    };
  }

  /** The heartbeat, from the end of loading on (loading has its own limit). */
  #watch(): void {
    this.#watchdog = setInterval(() => {
      const now = performance.now();
      if (this.#pingSince === undefined) {
        this.#pingSince = now;
        this.#worker.postMessage({ type: 'ping', id: 0 } satisfies ToWorker);
      } else if (now - this.#pingSince > this.#options.unresponsiveMs) {
        this.kill(`stopped answering for ${this.#options.unresponsiveMs / 1000} s (a busy loop?)`);
      }
    }, this.#options.heartbeatMs);
    this.#watchdog.unref();
  }

  /** Sends the robot's state at a control tick, unless the worker has not answered the previous one yet. */
  tick(t: number, motors: MotorSnapshot[]): void {
    if (this.dead || this.#tickInFlight) return;
    this.#tickInFlight = true;
    this.#worker.postMessage({ type: 'tick', t, motors } satisfies ToWorker);
  }

  /** Asks the worker something; rejects with a 504 after callTimeoutMs, or with the reason the worker died. */
  ask(body: AskBody): Promise<unknown> {
    if (this.dead) return Promise.reject(new PrimitiveFailure('worker', this.dead));
    const id = ++this.#ids;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(
          timedOut(
            `the primitive did not answer within ${this.#options.callTimeoutMs / 1000} s`,
            'the method or property never settled; check its code',
            `${body.type} in ${this.file}`,
          ),
        );
      }, this.#options.callTimeoutMs);
      this.#pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.#worker.postMessage({ ...body, id } as ToWorker);
    });
  }

  /** Stops the worker thread for `reason` (idempotent). */
  kill(reason: string): void {
    this.#ended(reason);
    void this.#worker.terminate();
  }

  #ended(reason: string): void {
    if (this.dead) return;
    this.dead = reason;
    clearInterval(this.#watchdog);
    this.#failLoad(new Error(reason));
    for (const waiter of this.#pending.values()) waiter.reject(new PrimitiveFailure('worker', reason));
    this.#pending.clear();
    this.onDeath?.(reason);
  }
}

/** The server-side stand-in of an isolated custom primitive: lifecycle here, code in the worker. */
export class IsolatedPrimitive extends Primitive {
  readonly file: string;
  readonly #declarations: Declarations;
  readonly #spawn: () => WorkerLink;
  #link: WorkerLink;
  #requests: ResolvedRequest[] = [];
  readonly #stamps = new Map<string, { value: string; seq: number }>();
  #ended: { resolve: () => void; reject: (e: Error) => void } | undefined;
  #started = false;
  #disposed = false;
  readonly #off: () => void;

  constructor(
    ctx: PrimitiveContext,
    file: string,
    declarations: Declarations,
    link: WorkerLink,
    spawn: () => WorkerLink,
  ) {
    super(ctx, declarations.name);
    this.file = file;
    this.#declarations = declarations;
    this.#spawn = spawn;
    this.#link = this.#wire(link);
    this.#off = this.robot.onTick((now) => this.#link.tick(now, snapshot(this)));
  }

  /** Ends the worker for good (the manager's close). */
  dispose(): void {
    this.#disposed = true;
    this.#off();
    this.#link.kill('the server closed');
  }

  override currentRequests(): ResolvedRequest[] {
    return this.#requests;
  }

  override properties(): PropertySpec[] {
    return this.#declarations.properties.map((d) => ({
      name: d.name,
      type: d.type,
      readOnly: d.readOnly,
      get: () => this.#link.ask({ type: 'get', prop: d.name }),
      ...(!d.readOnly && { set: (value: unknown) => this.#link.ask({ type: 'set', prop: d.name, value }) }),
    }));
  }

  override methods(): MethodSpec[] {
    const own = this.#declarations.methods
      .filter((m) => !['start', 'stop', 'pause', 'resume'].includes(m.name))
      .map((m) => ({
        name: m.name,
        params: m.params,
        call: (args: unknown[]) => this.#link.ask({ type: 'call', method: m.name, args }),
      }));
    return [...super.methods(), ...own];
  }

  override stop(): Promise<void> {
    // The stand-in's body is only a wait for the worker: it ends at once, then the teardown stops the worker's one.
    const ended = this.#ended;
    this.#ended = undefined;
    ended?.resolve();
    return super.stop();
  }

  override pause(): void {
    super.pause();
    this.#link.ask({ type: 'pause' }).catch(() => {});
  }

  override resume(): void {
    super.resume();
    this.#link.ask({ type: 'resume' }).catch(() => {});
  }

  protected override async setup(): Promise<void> {
    if (this.#link.dead) {
      // A worker that died is replaced at the next start: the module is loaded again.
      const link = this.#spawn();
      const declarations = await link.ready;
      if (declarations.name !== this.name) {
        link.kill('renamed');
        throw new PrimitiveFailure('setup', `the module now names its primitive "${declarations.name}"`);
      }
      this.#link = this.#wire(link);
    }
    this.#started = false;
    const ended = new Promise<void>((resolve, reject) => (this.#ended = { resolve, reject }));
    ended.catch(() => {});
    this.#endedPromise = ended;
    try {
      await this.#link.ask({ type: 'start' });
    } catch (err) {
      // start() answers as soon as the setup has begun: no answer means the thread is blocked.
      if (!(err instanceof RobotError && err.code === 'timeout')) throw err;
      const reason = 'stopped answering at start (a busy loop?)';
      this.#link.kill(reason);
      throw new PrimitiveFailure('worker', reason);
    }
    this.#started = true;
  }

  #endedPromise: Promise<void> = Promise.resolve();

  protected override run(): Promise<void> {
    return this.#endedPromise;
  }

  protected override async teardown(): Promise<void> {
    this.#ended = undefined;
    if (!this.#link.dead) {
      let lastError: unknown;
      try {
        lastError = await this.#link.ask({ type: 'stop' });
      } catch (err) {
        if (err instanceof RobotError && err.code === 'timeout')
          this.#link.kill('its teardown did not finish in time');
        else throw err;
      }
      this.#requests = [];
      // The worker's teardown failed: reported here, as an inline primitive's would be.
      if (typeof lastError === 'string' && lastError.startsWith('teardown: '))
        throw new PrimitiveFailure('teardown', lastError.slice('teardown: '.length));
    }
    this.#requests = [];
  }

  #wire(link: WorkerLink): WorkerLink {
    link.onTock = (m) => {
      if (link !== this.#link) return;
      this.#requests = m.requests.map((r) => this.#stamp(r));
      if (this.#started && m.state === 'stopped' && this.#ended) {
        const ended = this.#ended;
        this.#ended = undefined;
        if (m.lastError) {
          const colon = m.lastError.indexOf(': ');
          ended.reject(new PrimitiveFailure(m.lastError.slice(0, colon), m.lastError.slice(colon + 2)));
        } else ended.resolve();
      }
    };
    link.onDeath = (reason) => {
      if (link !== this.#link) return;
      this.#requests = [];
      if (!this.#disposed) this.logger.error(`primitive ${this.name}: worker stopped: ${reason}`);
      const ended = this.#ended;
      this.#ended = undefined;
      ended?.reject(new PrimitiveFailure('worker', reason));
    };
    return link;
  }

  /** A request keeps its order stamp while its value holds; a new value is a new write (last writer wins). */
  #stamp(r: ResolvedRequest): ResolvedRequest {
    const key = `${r.motor}\u0000${r.register}`;
    const value = JSON.stringify(r.value);
    let stamp = this.#stamps.get(key);
    if (!stamp || stamp.value !== value)
      this.#stamps.set(key, (stamp = { value, seq: this.context.host.sequence() }));
    return { ...r, seq: stamp.seq };
  }
}

function snapshot(p: IsolatedPrimitive): MotorSnapshot[] {
  return p.context.robot.motors.map((m) => ({ name: m.name, state: m.state, commands: m.commands }));
}

/** Spawns a worker for `file` and waits for its primitive's declarations (or the reason it cannot load). */
export function spawnLink(
  file: string,
  ctx: PrimitiveContext,
  seed: number,
  options: IsolationOptions,
): WorkerLink {
  return new WorkerLink(file, { file, config: ctx.robot.config, seed }, options, ctx.logger);
}

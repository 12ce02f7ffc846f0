/**
 * A primitive: a behaviour with a lifecycle (setup, a periodic update or a one-shot run, teardown) on the robot's
 * clock. Primitives never write motors: they post requests that the PrimitiveManager combines every control tick
 * (FACTS.md 4.6). State rules are CONTRACT.md 5; start and stop calls are serialised per primitive, so a setup
 * never overlaps a teardown or another setup.
 */
import { AbortError, isAbortError } from '../core/clock.ts';
import { badRequest, conflict, RobotError } from '../core/errors.ts';
import { LED_COLOURS, type LedColour } from '../dynamixel/registers.ts';
import { describe, parseBoolean, parseNumber } from '../core/values.ts';
import type { Robot } from '../robot/robot.ts';
import type { Logger } from '../core/logger.ts';
import { minimumJerk } from '../robot/trajectory.ts';

export type PrimitiveState = 'stopped' | 'running' | 'paused';

/** Types a property or a method parameter can declare; REST input is checked against them. */
export type ValueType = 'number' | 'boolean' | 'string' | 'number[]' | 'string[]';

export interface PropertySpec {
  name: string;
  type: ValueType;
  /** A POST answers 403. */
  readOnly?: boolean;
  /** May return a promise (an isolated primitive's properties live in its worker). */
  get(): unknown;
  /** Called with a value already checked (and coerced) against `type`; may throw a RobotError (badRequest) to refuse it. */
  set?(value: unknown): unknown;
}

export interface ParamSpec {
  name: string;
  type: ValueType;
  optional?: boolean;
}

export interface MethodSpec {
  name: string;
  params: ParamSpec[];
  /** Receives the arguments in declaration order, checked against their types (undefined for omitted optional ones). */
  call(args: unknown[]): unknown | Promise<unknown>;
}

/** Registers a primitive may request. */
export type PrimitiveRegister =
  'goal_position' | 'moving_speed' | 'torque_limit' | 'compliant' | 'led' | 'pid';

export type RequestValue = number | boolean | LedColour | readonly [number, number, number];

/** One request as the manager reads it at a tick. `seq` orders writers (last writer wins where values do not add). */
export interface ResolvedRequest {
  readonly motor: string;
  readonly register: PrimitiveRegister;
  readonly value: RequestValue;
  readonly seq: number;
}

/** The manager side of a primitive, reached through its context. */
export interface PrimitiveHost {
  /** The primitive's requests take part in the combination from now on. */
  activate(p: Primitive): void;
  /** ... and no longer; with `flush`, its last requests are combined into the motors' commands first. */
  deactivate(p: Primitive, flush: boolean): void;
  /** Aborted when the manager closes: teardowns stop waiting. */
  readonly closing: AbortSignal;
  /** A number larger than every one given before (orders requests across primitives). */
  sequence(): number;
}

export interface PrimitiveContext {
  readonly robot: Robot;
  readonly logger: Logger;
  /** Seeded: the same seed gives the same behaviour. */
  readonly random: () => number;
  readonly host: PrimitiveHost;
}

export interface PrimitiveOptions {
  /** Hz of update(); omit for a one-shot run() or for a primitive whose children do the work. */
  readonly frequency?: number;
  /** Started by the manager when it opens (temperature_monitoring, as on the real robot). */
  readonly autoStart?: boolean;
}

interface Trajectory {
  readonly from: number;
  readonly to: number;
  /** Primitive-local time (pauses excluded). */
  readonly start: number;
  readonly duration: number;
}

interface RequestEntry {
  value: RequestValue | Trajectory;
  seq: number;
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

export const VALUE_TYPES: readonly ValueType[] = ['number', 'boolean', 'string', 'number[]', 'string[]'];

const LIFECYCLE = ['start', 'stop', 'pause', 'resume'] as const;
export const LIFECYCLE_METHODS: readonly string[] = LIFECYCLE;

/** A failure reported with the phase it happened in (an isolated primitive's worker says where its code failed). */
export class PrimitiveFailure extends Error {
  readonly phase: string;
  constructor(phase: string, message: string) {
    super(message);
    this.name = 'PrimitiveFailure';
    this.phase = phase;
  }
}

/** How long a stop waits (robot seconds) for a body that ignores the abort before tearing down anyway. */
const STOP_GRACE_S = 2;
const EPS = 1e-6;

export abstract class Primitive {
  readonly name: string;
  readonly context: PrimitiveContext;
  /** Hz of update() (the `frequency` option), undefined for a one-shot or idle primitive. */
  readonly rate: number | undefined;
  readonly autoStart: boolean;
  protected readonly robot: Robot;
  protected readonly logger: Logger;

  #state: PrimitiveState = 'stopped';
  #lastError: string | undefined;
  /** Start and stop operations, in call order. Never rejects. */
  #queue: Promise<void> = Promise.resolve();
  #current: Run | undefined;
  #phase: 'idle' | 'setup' | 'update' | 'run' | 'teardown' = 'idle';
  /** Signal of whatever phase runs now (the body's, or the manager's closing signal during teardown). */
  #signal: AbortSignal;
  #resumeWaiters = new Set<() => void>();
  #requests = new Map<string, Map<PrimitiveRegister, RequestEntry>>();
  #requestCount = 0;
  #appliedCount = 0;
  #children = new Set<Primitive>();
  #pausedChildren = new Set<Primitive>();

  constructor(context: PrimitiveContext, name: string, options: PrimitiveOptions = {}) {
    if (options.frequency !== undefined && !(options.frequency > 0 && Number.isFinite(options.frequency)))
      throw new RangeError(`primitive ${name}: frequency must be a positive number of Hz`);
    this.context = context;
    this.name = name;
    this.rate = options.frequency;
    this.autoStart = options.autoStart ?? false;
    this.robot = context.robot;
    this.logger = context.logger;
    this.#signal = context.host.closing;
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

  /** Properties REST may read and write. Declared, never found by reflection. */
  properties(): PropertySpec[] {
    return [];
  }

  /** Methods REST may call: start, stop, pause, resume, then the primitive's own. */
  methods(): MethodSpec[] {
    return lifecycleMethods(this);
  }

  // --- state ---

  get state(): PrimitiveState {
    return this.#state;
  }

  /** Running or paused (a paused primitive counts as running, CONTRACT.md 5). */
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
    return run?.setupEnd === undefined ? 0 : Math.max(0, this.#local() - run.setupEnd);
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
   * teardown still in progress. Never rejects: failures go to lastError and the log.
   */
  start(): Promise<void> {
    if (this.#state !== 'stopped') return this.#queue;
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

  /**
   * Requests a register value for a motor; the manager combines it with the other running primitives' requests
   * at every tick until this primitive stops or releases it. Throws (404/400) for an unknown motor, a register the
   * motor does not have, or a value of the wrong type.
   */
  protected request(motor: string, register: PrimitiveRegister, value: unknown): void {
    const m = this.robot.motor(motor);
    if (!m.hasRegister(register))
      throw badRequest(
        `motor "${motor}" has no register "${register}"`,
        `GET /motors/${motor}/registers/list.json lists its registers`,
        `primitive ${this.name}`,
      );
    this.#put(motor, register, checkRequest(register, value, `${this.name}: ${motor}.${register}`));
  }

  /** Same request for several motors. */
  protected requestAll(motors: readonly string[], register: PrimitiveRegister, value: unknown): void {
    for (const m of motors) this.request(m, register, value);
  }

  /** Drops this primitive's requests (all, one motor's, or one register of one motor). */
  protected release(motor?: string, register?: PrimitiveRegister): void {
    if (motor === undefined) this.#requests.clear();
    else if (register === undefined) this.#requests.delete(motor);
    else this.#requests.get(motor)?.delete(register);
    this.#requestCount++;
  }

  /** This primitive's own request for a register now (a goto's current point), or undefined. */
  protected requested(motor: string, register: PrimitiveRegister): RequestValue | undefined {
    const entry = this.#requests.get(motor)?.get(register);
    return entry ? this.#resolve(entry.value) : undefined;
  }

  /**
   * Minimum-jerk moves of this primitive's goal_position requests to user-degree targets (clamped into the limits)
   * over `duration` seconds of its own time (a pause freezes them). Starts from this primitive's current request, or
   * from present_position. Resolves at the end; rejects with an AbortError when the primitive stops (unawaited calls
   * are safe).
   */
  protected goto(targets: Readonly<Record<string, number>>, duration: number): Promise<void> {
    if (!Number.isFinite(duration) || duration < 0)
      throw badRequest('goto duration must be a number of seconds >= 0', '', `got ${describe(duration)}`);
    const start = this.#local();
    for (const [name, target] of Object.entries(targets)) {
      const m = this.robot.motor(name);
      const to = m.clampAngle(parseNumber(target, `${this.name}: goto target of ${name}`));
      if (duration === 0) {
        this.#put(name, 'goal_position', to);
        continue;
      }
      const own = this.requested(name, 'goal_position');
      const from = typeof own === 'number' ? own : m.state.presentPosition;
      this.#put(name, 'goal_position', { from, to, start, duration });
    }
    if (duration === 0) return Promise.resolve();
    const done = this.#sleepUntilLocal(start + duration, this.#signal);
    done.catch(() => {});
    return done;
  }

  /** Waits `seconds` of robot time, pauses excluded. Rejects with an AbortError when the primitive stops. */
  protected sleep(seconds: number): Promise<void> {
    const done = this.#sleepUntilLocal(this.#local() + Math.max(0, seconds), this.#signal);
    done.catch(() => {});
    return done;
  }

  /** Ends the update loop after the current update, as if run() had returned (the primitive then stops itself). */
  protected finish(): void {
    if (this.#current) this.#current.finishing = true;
  }

  /** Registers a sub-primitive: it pauses, resumes and stops with this one and is not listed. Start it yourself. */
  protected child<T extends Primitive>(p: T): T {
    this.#children.add(p);
    return p;
  }

  protected get random(): () => number {
    return this.context.random;
  }

  // --- for the manager ---

  /** The requests as they stand now (trajectories evaluated); marks them applied. */
  currentRequests(): ResolvedRequest[] {
    const out: ResolvedRequest[] = [];
    for (const [motor, regs] of this.#requests) {
      for (const [register, entry] of regs) {
        out.push({ motor, register, value: this.#resolve(entry.value), seq: entry.seq });
      }
    }
    this.#appliedCount = this.#requestCount;
    return out;
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
    this.#requests.clear();
    this.#signal = run.ctl.signal;
    this.context.host.activate(this);
    run.body = this.#body(run);
  }

  async #body(run: Run): Promise<void> {
    const signal = run.ctl.signal;
    try {
      this.#phase = 'setup';
      await this.setup();
      if (signal.aborted) throw new AbortError();
      run.setupEnd = this.#local();
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
      const local = this.#local();
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
    const closing = this.context.host.closing;
    this.#signal = closing;
    this.#phase = 'teardown';
    const before = this.#requestCount;
    try {
      await this.teardown();
    } catch (err) {
      if (!isAbortError(err)) this.#fail(err, 'teardown');
    }
    // Teardown requests (and the last ones of a body that ended by itself) reach the motors before we leave.
    const pending = this.#requestCount !== before || (natural && this.#requestCount !== this.#appliedCount);
    this.context.host.deactivate(this, pending);
    this.#requests.clear();
    this.#current = undefined;
    this.#phase = 'idle';
  }

  /** The body normally ends at once when aborted; one that ignores the abort gets a grace period, then is left. */
  async #bodyEnded(run: Run): Promise<void> {
    const grace = new AbortController();
    const closing = this.context.host.closing;
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

  #put(motor: string, register: PrimitiveRegister, value: RequestValue | Trajectory): void {
    let regs = this.#requests.get(motor);
    if (!regs) this.#requests.set(motor, (regs = new Map()));
    regs.set(register, { value, seq: this.context.host.sequence() });
    this.#requestCount++;
  }

  #resolve(value: RequestValue | Trajectory): RequestValue {
    if (typeof value !== 'object' || Array.isArray(value)) return value as RequestValue;
    const t = value as Trajectory;
    const tau = (this.#local() - t.start) / t.duration;
    return t.from + (t.to - t.from) * minimumJerk(tau);
  }

  /** Run-local time (pauses excluded); plain robot time when nothing runs. */
  #local(): number {
    const now = this.robot.clock.now();
    const run = this.#current;
    if (!run) return now;
    // Frozen exactly while paused (no rounding noise that would rewrite a held goal).
    return (run.pausedAt ?? now) - run.origin - run.pausedTotal;
  }

  #frozen(): boolean {
    return this.#current?.pausedAt !== undefined;
  }

  #unpauseClock(): void {
    const run = this.#current;
    if (run?.pausedAt !== undefined) {
      run.pausedTotal += this.robot.clock.now() - run.pausedAt;
      run.pausedAt = undefined;
    }
    this.#wake();
  }

  #wake(): void {
    const waiters = [...this.#resumeWaiters];
    this.#resumeWaiters.clear();
    for (const w of waiters) w();
  }

  async #sleepUntilLocal(t: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw new AbortError();
      if (this.#frozen()) {
        await this.#resumed(signal);
        continue;
      }
      const remaining = t - this.#local();
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

function lifecycleMethods(p: Primitive): MethodSpec[] {
  return [
    { name: 'start', params: [], call: () => p.start().then(() => null) },
    { name: 'stop', params: [], call: () => p.stop().then(() => null) },
    { name: 'pause', params: [], call: () => (p.pause(), null) },
    { name: 'resume', params: [], call: () => (p.resume(), null) },
  ];
}

/** The lifecycle methods of `p`, whatever its methods() override returns. */
export function builtinMethods(p: Primitive): MethodSpec[] {
  return lifecycleMethods(p);
}

function checkRequest(register: PrimitiveRegister, value: unknown, what: string): RequestValue {
  switch (register) {
    case 'goal_position':
    case 'moving_speed':
    case 'torque_limit':
      return parseNumber(value, what);
    case 'compliant':
      return parseBoolean(value, what);
    case 'led':
      if (typeof value === 'string' && (LED_COLOURS as readonly string[]).includes(value))
        return value as LedColour;
      throw badRequest(`${what} must be a colour name`, `one of ${LED_COLOURS.join(', ')}`, describe(value));
    case 'pid': {
      if (!Array.isArray(value) || value.length !== 3)
        throw badRequest(`${what} must be [Kp, Ki, Kd]`, 'three numbers', describe(value));
      const [kp, ki, kd] = value.map((v, i) => parseNumber(v, `${what}[${i}]`));
      return [kp!, ki!, kd!];
    }
  }
}

/**
 * Checks a REST value against a declared type: numbers also as numeric strings, booleans also as "true"/"false"/1/0
 * (CONTRACT.md 2), arrays element by element (a comma-separated string works too). 400 otherwise.
 */
export function coerceValue(type: ValueType, value: unknown, what: string): unknown {
  switch (type) {
    case 'number':
      return parseNumber(value, what);
    case 'boolean':
      return parseBoolean(value, what);
    case 'string':
      if (typeof value === 'string') return value;
      throw badRequest(`${what} must be a string`, 'send a JSON string', `got ${describe(value)}`);
    case 'number[]':
    case 'string[]': {
      const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value;
      if (!Array.isArray(list))
        throw badRequest(
          `${what} must be an array`,
          type === 'number[]' ? 'send for example [10, 20]' : 'send for example ["m1", "m2"]',
          `got ${describe(value)}`,
        );
      return list.map((v, i) => coerceValue(type === 'number[]' ? 'number' : 'string', v, `${what}[${i}]`));
    }
  }
}

const PRIMITIVE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const MEMBER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Checks what a primitive declares (name, properties, methods); returns the first problem or undefined. Names
 * starting with "_" are the records' (`_<move>_recorder`, `_<move>_player`), so custom ones may not use them.
 */
export function validatePrimitive(
  p: Primitive,
  opts: { allowUnderscore?: boolean } = {},
): string | undefined {
  const nameRe = opts.allowUnderscore ? /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,80}$/ : PRIMITIVE_NAME;
  if (typeof p.name !== 'string' || !nameRe.test(p.name))
    return `invalid primitive name ${describe(p.name)}: letters, digits, "_" and "-", starting with a letter`;
  let props: unknown;
  let methods: unknown;
  try {
    props = p.properties();
    methods = p.methods();
  } catch (err) {
    return `properties() or methods() threw: ${(err as Error).message}`;
  }
  if (!Array.isArray(props)) return 'properties() must return an array';
  if (!Array.isArray(methods)) return 'methods() must return an array';
  const seen = new Set<string>();
  for (const s of props as PropertySpec[]) {
    if (!s || typeof s.name !== 'string' || !MEMBER_NAME.test(s.name))
      return `invalid property name ${describe(s?.name)}`;
    if (seen.has(s.name)) return `property "${s.name}" is declared twice`;
    seen.add(s.name);
    if (!VALUE_TYPES.includes(s.type))
      return `property "${s.name}" has type ${describe(s.type)}; use one of ${VALUE_TYPES.join(', ')}`;
    if (typeof s.get !== 'function') return `property "${s.name}" has no get()`;
    if (!s.readOnly && typeof s.set !== 'function')
      return `property "${s.name}" has no set(): declare it readOnly or give it a set()`;
  }
  seen.clear();
  for (const m of methods as MethodSpec[]) {
    if (!m || typeof m.name !== 'string' || !MEMBER_NAME.test(m.name))
      return `invalid method name ${describe(m?.name)}`;
    if (seen.has(m.name)) return `method "${m.name}" is declared twice`;
    seen.add(m.name);
    if (typeof m.call !== 'function') return `method "${m.name}" has no call()`;
    if (!Array.isArray(m.params)) return `method "${m.name}" has no params list`;
    const params = new Set<string>();
    let optional = false;
    for (const a of m.params) {
      if (!a || typeof a.name !== 'string' || !MEMBER_NAME.test(a.name))
        return `method "${m.name}": invalid parameter name ${describe(a?.name)}`;
      if (params.has(a.name)) return `method "${m.name}": parameter "${a.name}" is declared twice`;
      params.add(a.name);
      if (!VALUE_TYPES.includes(a.type))
        return `method "${m.name}": parameter "${a.name}" has type ${describe(a.type)}`;
      if (optional && !a.optional)
        return `method "${m.name}": required parameter "${a.name}" comes after an optional one`;
      optional ||= !!a.optional;
    }
  }
  return undefined;
}

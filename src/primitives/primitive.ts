/**
 * A primitive: a behaviour with a lifecycle (lifecycle.ts) on the robot's clock. Primitives never write motors: they
 * post requests that the PrimitiveManager combines every control tick (docs/reference/pypot.md 4.6). REST sees the properties and
 * methods they declare (members.ts), with values checked against the declared types (coercion.ts).
 */
import { badRequest } from '../core/errors.ts';
import { describe, parseNumber } from '../core/values.ts';
import { minimumJerk } from '../robot/trajectory.ts';
import { checkRequest, type PrimitiveRegister, type RequestValue } from './coercion.ts';
import { PrimitiveLifecycle, type LifecycleContext, type PrimitiveOptions } from './lifecycle.ts';
import { builtinMethods, type MethodSpec, type PropertySpec } from './members.ts';

export type { PrimitiveRegister, RequestValue, ValueType } from './coercion.ts';
export { PrimitiveFailure, type PrimitiveOptions, type PrimitiveState } from './lifecycle.ts';
export type { MethodSpec, ParamSpec, PropertySpec } from './members.ts';

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

export interface PrimitiveContext extends LifecycleContext {
  /** Seeded: the same seed gives the same behaviour. */
  readonly random: () => number;
  readonly host: PrimitiveHost;
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

export abstract class Primitive extends PrimitiveLifecycle {
  readonly context: PrimitiveContext;
  #requests = new Map<string, Map<PrimitiveRegister, RequestEntry>>();
  #requestCount = 0;
  #appliedCount = 0;
  /** #requestCount when the teardown began. */
  #countAtTeardown = 0;

  constructor(context: PrimitiveContext, name: string, options: PrimitiveOptions = {}) {
    super(context, name, options);
    this.context = context;
  }

  /** Properties REST may read and write. Declared, never found by reflection. */
  properties(): PropertySpec[] {
    return [];
  }

  /** Methods REST may call: start, stop, pause, resume, then the primitive's own. */
  methods(): MethodSpec[] {
    return builtinMethods(this);
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
    const start = this.localTime();
    for (const [name, target] of Object.entries(targets)) {
      const m = this.robot.motor(name);
      const to = m.clampAngle(parseNumber(target, `${this.name}: goto target of ${name}`));
      if (duration === 0) {
        this.#put(name, 'goal_position', to);
        continue;
      }
      // A stiff motor's move goes on from this primitive's own last goal; a limp one's goal is stale (it fell, or a
      // hand moved it), and a move from there would snap it back at the servo's full speed: it starts where it is.
      const own = m.commands.compliant ? undefined : this.requested(name, 'goal_position');
      const from = typeof own === 'number' ? own : m.state.presentPosition;
      this.#put(name, 'goal_position', { from, to, start, duration });
    }
    if (duration === 0) return Promise.resolve();
    return this.untilLocal(start + duration);
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

  // --- the lifecycle's hooks ---

  protected override joinHost(): void {
    this.#requests.clear();
    this.context.host.activate(this);
  }

  protected override beforeTeardown(): void {
    this.#countAtTeardown = this.#requestCount;
  }

  protected override leaveHost(natural: boolean): void {
    // Teardown requests (and the last ones of a body that ended by itself) reach the motors before we leave.
    const pending =
      this.#requestCount !== this.#countAtTeardown || (natural && this.#requestCount !== this.#appliedCount);
    this.context.host.deactivate(this, pending);
    this.#requests.clear();
  }

  // --- internals ---

  #put(motor: string, register: PrimitiveRegister, value: RequestValue | Trajectory): void {
    let regs = this.#requests.get(motor);
    if (!regs) this.#requests.set(motor, (regs = new Map()));
    regs.set(register, { value, seq: this.context.host.sequence() });
    this.#requestCount++;
  }

  #resolve(value: RequestValue | Trajectory): RequestValue {
    if (typeof value !== 'object' || Array.isArray(value)) return value as RequestValue;
    const t = value as Trajectory;
    const tau = (this.localTime() - t.start) / t.duration;
    return t.from + (t.to - t.from) * minimumJerk(tau);
  }
}

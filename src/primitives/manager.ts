/**
 * Owns a robot's primitives: attaches the built-ins and the operator's custom ones, and at every control tick
 * combines the requests of all running primitives (sub-primitives too) per motor and register, then writes the
 * result to the motors' commands (docs/reference/pypot.md 4.6). Primitives never write motors themselves.
 */
import { setMaxListeners } from 'node:events';
import { conflict, notFound, readOnly } from '../core/errors.ts';
import { mulberry32 } from '../core/prng.ts';
import type { Robot } from '../robot/robot.ts';
import type { Logger } from '../core/logger.ts';
import { builtinPrimitives } from './builtins/index.ts';
import { applyRequests } from './combine.ts';
import { DEFAULT_ISOLATION, IsolatedPrimitive, type IsolationOptions, spawnLink } from './isolated/host.ts';
import { listModules, loadCustomPrimitives, type LoadProblem } from './loader.ts';
import {
  LIFECYCLE_METHODS,
  type MethodArgs,
  type MethodSpec,
  type PropertySpec,
  bindArguments,
  builtinMethods,
  guardAsync,
  jsonValue,
  validatePrimitive,
} from './members.ts';
import { coerceValue, type PrimitiveRegister } from './coercion.ts';
import type { Primitive, PrimitiveContext, PrimitiveHost, ResolvedRequest } from './primitive.ts';

export interface PrimitiveManagerOptions {
  /** How the requests of several running primitives on one numeric register combine (docs/reference/pypot.md 4.6). */
  readonly combine: 'sum' | 'mean';
  readonly logger: Logger;
  /** Folder of custom primitive modules (.ts/.js), or undefined for none. */
  readonly primitivesDir?: string;
  /** Seed for the behaviours' randomness. */
  readonly seed?: number;
  /** Attach the robot's built-in primitives at open() (default true). */
  readonly builtins?: boolean;
  /**
   * Where custom primitives run: 'worker' (default: each in its own worker thread, see isolated/host.ts) or
   * 'inline' (in the server's thread: deterministic tick by tick, for trusted code and scenario scripts).
   */
  readonly isolation?: 'worker' | 'inline';
  /** Limits of the worker isolation. */
  readonly limits?: Partial<IsolationOptions>;
}

/** GET /primitives/<p>/status.json. */
export interface PrimitiveStatus {
  readonly primitive: string;
  readonly state: 'stopped' | 'running' | 'paused';
  readonly running: boolean;
  /** Why its last run failed ("<phase>: <message>"), until the next start; null otherwise. */
  readonly last_error: string | null;
  /** Runs in its own worker thread. */
  readonly isolated: boolean;
}

/** What /robot.json shows of each primitive (docs/reference/contract.md 2). */
export interface PrimitiveEntry {
  primitive: string;
  running: boolean;
  properties: string[];
  methods: string[];
}

/** How long close() waits (wall clock) for a primitive that does not stop, so shutting down never hangs. */
const CLOSE_TIMEOUT_MS = 1000;

export class PrimitiveManager {
  readonly robot: Robot;
  readonly options: PrimitiveManagerOptions;
  readonly context: PrimitiveContext;
  /** Custom primitive files that could not be loaded, with the reason (also logged). */
  readonly loadProblems: LoadProblem[] = [];
  readonly #attached = new Map<string, Primitive>();
  /** Running primitives and sub-primitives whose requests combine, in activation order. */
  readonly #active = new Set<Primitive>();
  readonly #closing = new AbortController();
  #seq = 0;
  #unsubscribe: (() => void) | undefined;
  #opened = false;
  #customLoaded: Promise<void> = Promise.resolve();

  constructor(robot: Robot, options: PrimitiveManagerOptions) {
    this.robot = robot;
    this.options = options;
    // Every stopping primitive listens to it for a moment: many at once is normal, not a leak.
    setMaxListeners(0, this.#closing.signal);
    const host: PrimitiveHost = {
      activate: (p) => void this.#active.add(p),
      deactivate: (p, flush) => {
        if (flush && this.#active.has(p)) this.#combine();
        this.#active.delete(p);
      },
      closing: this.#closing.signal,
      sequence: () => ++this.#seq,
    };
    this.context = { robot, logger: options.logger, random: mulberry32(options.seed ?? 1), host };
  }

  /** Subscribes to the control loop, attaches the built-ins and the custom primitives, starts the auto-start ones. */
  async open(): Promise<void> {
    if (this.#opened) return;
    this.#opened = true;
    this.#unsubscribe = this.robot.onTick(() => this.#combine());
    if (this.options.builtins ?? true) for (const p of builtinPrimitives(this.context)) this.attach(p);
    if (this.options.primitivesDir && (this.options.isolation ?? 'worker') === 'worker') {
      // Loading happens in the background: a module that never finishes loading cannot hold up the start.
      this.#customLoaded = this.#loadIsolated(this.options.primitivesDir);
    } else if (this.options.primitivesDir) {
      const { primitives, problems } = await loadCustomPrimitives(
        this.options.primitivesDir,
        this.context,
        (name) => this.#attached.has(name),
      );
      for (const p of primitives) this.attach(p);
      for (const problem of problems) this.#reportProblem(problem);
      if (primitives.length)
        this.options.logger.info(`custom primitives loaded: ${primitives.map((p) => p.name).join(', ')}`);
    }
    for (const p of this.#attached.values()) if (p.autoStart) void p.start();
  }

  /** Resolves once the custom primitives of an isolated folder are loaded or reported (tests, scripts). */
  customLoaded(): Promise<void> {
    return this.#customLoaded;
  }

  async #loadIsolated(dir: string): Promise<void> {
    const limits = { ...DEFAULT_ISOLATION, ...this.options.limits };
    const seed = this.options.seed ?? 1;
    const { files, problem } = await listModules(dir);
    if (problem) this.#reportProblem(problem);
    const loaded = await Promise.all(
      files.map(async (file) => {
        const spawn = () => spawnLink(file, this.context, seed, limits);
        const link = spawn();
        try {
          return { file, link, spawn, declarations: await link.ready };
        } catch (err) {
          this.#reportProblem({ file, reason: (err as Error).message });
          return undefined;
        }
      }),
    );
    const names: string[] = [];
    for (const entry of loaded) {
      if (!entry) continue;
      const { file, link, spawn, declarations } = entry;
      if (this.#closing.signal.aborted) {
        link.kill('the server closed');
        continue;
      }
      try {
        if (this.#attached.has(declarations.name))
          throw new Error(`a primitive named "${declarations.name}" already exists`);
        const p = new IsolatedPrimitive(this.context, file, declarations, link, spawn);
        const invalid = validatePrimitive(p);
        if (invalid) throw new Error(invalid);
        this.attach(p);
        names.push(p.name);
      } catch (err) {
        link.kill((err as Error).message);
        this.#reportProblem({ file, reason: (err as Error).message });
      }
    }
    if (names.length) this.options.logger.info(`custom primitives loaded (isolated): ${names.join(', ')}`);
  }

  #reportProblem(problem: LoadProblem): void {
    this.loadProblems.push(problem);
    this.options.logger.error(`custom primitive ${problem.file} skipped: ${problem.reason}`);
  }

  /** State and last error of a primitive (404 unknown). */
  status(name: string): PrimitiveStatus {
    const p = this.get(name);
    return {
      primitive: p.name,
      state: p.state,
      running: p.running,
      last_error: p.lastError ?? null,
      isolated: p instanceof IsolatedPrimitive,
    };
  }

  /** Stops every primitive (teardowns stop waiting on the clock) and leaves the control loop. Idempotent. */
  async close(): Promise<void> {
    this.#closing.abort();
    const stops = [...this.#attached.values(), ...this.#active].map((p) => p.stop());
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'late'>(
      (resolve) => (timer = setTimeout(() => resolve('late'), CLOSE_TIMEOUT_MS)),
    );
    const outcome = await Promise.race([Promise.all(stops), timeout]);
    clearTimeout(timer);
    if (outcome === 'late')
      this.options.logger.warn(
        `primitives still running after ${CLOSE_TIMEOUT_MS} ms: ${this.runningList()
          .map((p) => p.name)
          .join(', ')}`,
      );
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    for (const p of this.#attached.values()) if (p instanceof IsolatedPrimitive) p.dispose();
  }

  /** Adds a primitive under its name (409 if the name is taken). It must have been built with this.context. */
  attach(p: Primitive): void {
    if (p.context.host !== this.context.host)
      throw new Error(`primitive ${p.name} was built with another manager's context`);
    const invalid = validatePrimitive(p, { allowUnderscore: true });
    if (invalid) throw new Error(`primitive ${String(p.name)}: ${invalid}`);
    if (this.#attached.has(p.name))
      throw conflict(
        `a primitive named "${p.name}" already exists`,
        'detach it first or choose another name',
      );
    this.#attached.set(p.name, p);
  }

  /** Stops the primitive (waiting for its teardown) and removes it. Unknown names are ignored. */
  async detach(name: string): Promise<void> {
    const p = this.#attached.get(name);
    if (!p) return;
    await p.stop();
    if (this.#attached.get(name) === p) this.#attached.delete(name);
  }

  /** The attached primitive of that name; 404 otherwise. */
  get(name: string): Primitive {
    const p = this.#attached.get(name);
    if (!p)
      throw notFound(
        `primitive "${name}" does not exist`,
        'GET /primitives/list.json lists the primitives',
        `robot ${this.robot.config.name}`,
      );
    return p;
  }

  has(name: string): boolean {
    return this.#attached.has(name);
  }

  /** Attached primitives, in attach order (built-ins in pypot's order, docs/reference/robots.md 1.2, 2.2, 3.2; then custom ones, then records'). */
  list(): Primitive[] {
    return [...this.#attached.values()];
  }

  /** Attached primitives that are running or paused. */
  runningList(): Primitive[] {
    return this.list().filter((p) => p.running);
  }

  /** Primitives and sub-primitives whose requests are combined now (tests, diagnostics). */
  activeCount(): number {
    return this.#active.size;
  }

  /** /robot.json entries (docs/reference/contract.md 2). */
  listing(): PrimitiveEntry[] {
    return this.list().map((p) => ({
      primitive: p.name,
      running: p.running,
      properties: this.propertiesOf(p).map((s) => s.name),
      methods: this.methodsOf(p).map((s) => s.name),
    }));
  }

  propertiesOf(p: Primitive): PropertySpec[] {
    return p.properties();
  }

  /** start, stop, pause, resume (always the lifecycle ones), then the primitive's own methods. */
  methodsOf(p: Primitive): MethodSpec[] {
    return [...builtinMethods(p), ...p.methods().filter((m) => !LIFECYCLE_METHODS.includes(m.name))];
  }

  // --- properties and methods (REST) ---

  /** `{"<primitive>.<prop>": value}`; 404 for an unknown primitive or property. */
  async readProperty(primitive: string, prop: string): Promise<Record<string, unknown>> {
    const p = this.get(primitive);
    const spec = this.#property(p, prop);
    const value = await guardAsync(() => spec.get(), `${p.name}.${prop} could not be read`);
    return { [`${p.name}.${prop}`]: jsonValue(value) };
  }

  /**
   * Sets a property after a type check and answers its new value. 404 unknown, 403 read-only (both before the body
   * is read), 400 for a value of the wrong type or one the primitive refuses.
   */
  async writeProperty(
    primitive: string,
    prop: string,
    value: () => unknown,
  ): Promise<Record<string, unknown>> {
    const p = this.get(primitive);
    const spec = this.#property(p, prop);
    if (spec.readOnly || !spec.set)
      throw readOnly(
        `property "${prop}" of primitive "${p.name}" is read-only`,
        `writable: ${
          this.propertiesOf(p)
            .filter((s) => !s.readOnly && s.set)
            .map((s) => s.name)
            .join(', ') || 'none'
        }`,
        'declared read-only by the primitive',
      );
    const checked = coerceValue(spec.type, value(), `${p.name}.${prop}`);
    await guardAsync(() => spec.set!(checked), `${p.name}.${prop} refused the value`, 'bad_request');
    const now = await guardAsync(() => spec.get(), `${p.name}.${prop} could not be read`);
    return { [`${p.name}.${prop}`]: jsonValue(now) };
  }

  /**
   * Calls a declared method with arguments checked against its parameters; answers
   * `{"<primitive>:<method>": return value or null}`. 404 unknown method, 400 bad arguments.
   */
  async callMethod(primitive: string, method: string, args: MethodArgs): Promise<Record<string, unknown>> {
    const p = this.get(primitive);
    const spec = this.methodsOf(p).find((m) => m.name === method);
    if (!spec)
      throw notFound(
        `primitive "${p.name}" has no method "${method}"`,
        `GET /primitives/${p.name}/methods/list.json lists its methods`,
      );
    const values = bindArguments(p.name, spec, args);
    const result = await guardAsync(() => spec.call(values), `${p.name}:${method} failed`);
    return { [`${p.name}:${method}`]: jsonValue(result) };
  }

  #property(p: Primitive, prop: string): PropertySpec {
    const spec = this.propertiesOf(p).find((s) => s.name === prop);
    if (!spec)
      throw notFound(
        `primitive "${p.name}" has no property "${prop}"`,
        `GET /primitives/${p.name}/properties/list.json lists its properties`,
      );
    return spec;
  }

  // --- combination ---

  /** Every control tick, and when a stopping primitive leaves with requests the ticks have not seen. */
  #combine(): void {
    const byMotor = new Map<string, Map<PrimitiveRegister, ResolvedRequest[]>>();
    for (const p of this.#active) {
      for (const r of p.currentRequests()) {
        let regs = byMotor.get(r.motor);
        if (!regs) byMotor.set(r.motor, (regs = new Map()));
        const list = regs.get(r.register);
        if (list) list.push(r);
        else regs.set(r.register, [r]);
      }
    }
    for (const [name, regs] of byMotor)
      applyRequests(this.robot, this.robot.motor(name), regs, this.options.combine);
  }
}

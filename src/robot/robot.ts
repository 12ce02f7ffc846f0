/**
 * The robot: motors by name, aliases, and the control loop that syncs them with the bus. Each tick reads state,
 * lets controllers (gotos, the primitive manager) write commands, then writes the bus: commands apart from state, as
 * in ros2_control's read()/write() cycle. The bus exchange is bus-sync.ts, the gotos motions.ts.
 */
import type { Backend } from '../core/backend.ts';
import type { Clock } from '../core/clock.ts';
import { AbortError, isAbortError } from '../core/clock.ts';
import { type RobotError, conflict, notFound, shuttingDown } from '../core/errors.ts';
import { type RobotConfig, expandAlias } from '../config/robot-config.ts';
import { gainsToRawPid, modelSpec, rawPidToGains } from '../dynamixel/registers.ts';
import { type Logger, silentLogger } from '../core/logger.ts';
import { runFixedRate } from '../core/fixed-rate.ts';
import { Motor } from './motor.ts';
import { BusSync } from './bus-sync.ts';
import { type GotoOptions, Motions, type StartedGoto } from './motions.ts';

export interface RobotOptions {
  /** Control loop rate, Hz (pypot syncs at 50 Hz). */
  readonly rate?: number;
  readonly logger?: Logger;
}

/** Something that writes motor commands each control tick (gotos, the primitive manager). */
export type TickHandler = (now: number) => void;

/** One owner that drives the servos on the bus itself for a while (a calibration run): why, and how to see or end it. */
export interface RobotHold {
  /** The refusal's message, e.g. "a calibration run holds the robot". */
  readonly reason: string;
  readonly tip: string;
}

export class Robot {
  readonly config: RobotConfig;
  readonly backend: Backend;
  readonly clock: Clock;
  readonly motors: readonly Motor[];
  readonly logger: Logger;
  readonly rate: number;
  readonly #byName: Map<string, Motor>;
  readonly #motions = new Motions();
  readonly #bus: BusSync;
  readonly #tickHandlers = new Set<TickHandler>();
  #ticks = 0;
  #loop: Promise<void> | undefined;
  readonly #stop = new AbortController();
  /** Aborted when the server starts shutting down: pending `wait` answers give way at once. */
  readonly #closing = new AbortController();
  #hold: RobotHold | undefined;

  constructor(config: RobotConfig, backend: Backend, opts: RobotOptions = {}) {
    this.config = config;
    this.backend = backend;
    this.clock = backend.clock;
    this.logger = opts.logger ?? silentLogger;
    this.rate = opts.rate ?? 50;
    this.motors = config.motors.map((m) => new Motor(m, modelSpec(m.model)));
    this.#bus = new BusSync(backend.bus, this.motors, this.rate, this.logger);
    this.#byName = new Map(this.motors.map((m) => [m.name, m]));
    for (const name of config.startup.safeCompliant) this.#byName.get(name)!.safeCompliance = true;
  }

  get aliases(): string[] {
    return Object.keys(this.config.aliases);
  }

  /** Motor names of an alias (nested aliases expanded); 404 for anything else. */
  aliasMotors(alias: string): string[] {
    if (!Object.hasOwn(this.config.aliases, alias))
      throw notFound(
        `alias "${alias}" does not exist`,
        'GET /motors/aliases/list.json lists the aliases',
        `robot ${this.config.name}`,
      );
    return expandAlias(this.config, alias);
  }

  motor(name: string): Motor {
    const m = this.#byName.get(name);
    if (!m)
      throw notFound(
        `motor "${name}" does not exist`,
        'GET /motors/list.json lists the motors',
        `robot ${this.config.name}`,
      );
    return m;
  }

  hasMotor(name: string): boolean {
    return this.#byName.has(name);
  }

  /** Motor or alias names to motors, in order, without duplicates; throws 404 naming the first unknown one. */
  resolveMotors(names: readonly string[]): Motor[] {
    const out: Motor[] = [];
    for (const n of names) {
      const expanded = n in this.config.aliases ? expandAlias(this.config, n) : [n];
      for (const e of expanded) {
        const m = this.motor(e);
        if (!out.includes(m)) out.push(m);
      }
    }
    return out;
  }

  /** Reads every motor's state and commands from the bus, applies the robot's start-up settings, starts the loop. */
  async start(): Promise<void> {
    await this.#bus.readInitial(this.#ticks);
    const { pid, torqueLimit, led } = this.config.startup;
    for (const m of this.motors) {
      if (pid && m.spec.control === 'pid') m.set('pid', rawPidToGains(gainsToRawPid(pid)));
      if (torqueLimit !== undefined) m.set('torqueLimit', torqueLimit);
      if (led !== undefined && m.hasRegister('led')) m.set('led', led as Motor['commands']['led']);
    }
    await this.#bus.writeCommands();
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.beginShutdown();
    this.#stop.abort();
    await this.#loop;
    this.#motions.cancelAll();
  }

  /** The server is going down: every `waitFor` in progress rejects with a 503 "server shutting down". */
  beginShutdown(): void {
    this.#closing.abort();
  }

  get shuttingDown(): boolean {
    return this.#closing.signal.aborted;
  }

  /**
   * Waits for a motion (a `wait: true` request) on behalf of a client: rejects with a 503 RobotError when the server
   * shuts down, and with an AbortError when `clientGone` aborts (the client closed its connection). Either way only
   * the wait ends: the motion itself goes on, as any motion the client did not wait for.
   */
  waitFor<T>(done: Promise<T>, clientGone?: AbortSignal): Promise<T> {
    const closing = this.#closing.signal;
    if (closing.aborted) return Promise.reject(shuttingDown());
    if (clientGone?.aborted) return Promise.reject(new AbortError('the client went away'));
    return new Promise<T>((resolve, reject) => {
      const cleanup = () => {
        closing.removeEventListener('abort', onClosing);
        clientGone?.removeEventListener('abort', onGone);
      };
      const onClosing = () => (cleanup(), reject(shuttingDown()));
      const onGone = () => (cleanup(), reject(new AbortError('the client went away')));
      closing.addEventListener('abort', onClosing, { once: true });
      clientGone?.addEventListener('abort', onGone, { once: true });
      done.then(
        (v) => (cleanup(), resolve(v)),
        (err: unknown) => (cleanup(), reject(err as Error)),
      );
    });
  }

  onTick(handler: TickHandler): () => void {
    this.#tickHandlers.add(handler);
    return () => this.#tickHandlers.delete(handler);
  }

  /** Ticks run so far (tests and benchmarks). */
  get ticks(): number {
    return this.#ticks;
  }

  // --- the hold ---

  /**
   * Hands the servos to one owner that drives them on the bus itself (a calibration run): until release(), every
   * command that would move the robot is refused (409, assertFree) and the control loop writes nothing, so that the
   * owner's writes stand. 409 when another owner holds it already.
   */
  hold(h: RobotHold): void {
    this.assertFree('holding the robot');
    this.#hold = h;
  }

  /** Who holds the robot, if anyone. */
  get holder(): RobotHold | undefined {
    return this.#hold;
  }

  /**
   * 409 while the robot is held, naming `what` was refused. The one check of every command that moves the robot:
   * gotos (Robot.goto), register writes (motor-registers.ts), primitives and replays (PrimitiveLifecycle.start, via
   * refusal()).
   */
  assertFree(what: string): void {
    const refused = this.refusal(what);
    if (refused) throw refused;
  }

  /** The 409 of assertFree, or undefined while the robot is free (for a caller that rejects rather than throws). */
  refusal(what: string): RobotError | undefined {
    return this.#hold && conflict(this.#hold.reason, this.#hold.tip, `refused: ${what}`);
  }

  /**
   * Ends the hold. `servos` says how the owner left them, and the commands are made so (goal on the present
   * position; compliant, or stiff there), with the speed, torque limit and gains the robot had before written back
   * (the owner changed them); without it nothing was sent meanwhile and nothing is written.
   */
  release(servos?: 'compliant' | 'hold'): void {
    if (!this.#hold) return;
    this.#hold = undefined;
    if (!servos) return;
    for (const m of this.motors) {
      m.speedBeforeGoalSpeed = undefined;
      m.set('goalPosition', m.state.presentPosition);
      m.set('compliant', servos === 'compliant');
      m.dirty.add('movingSpeed');
      m.dirty.add('torqueLimit');
      if (m.spec.control === 'pid') m.dirty.add('pid');
      else {
        m.dirty.add('complianceMargin');
        m.dirty.add('complianceSlope');
      }
    }
  }

  /** Motors with a goto in progress. */
  moving(): Motor[] {
    return this.motors.filter((m) => this.#motions.isMoving(m));
  }

  // --- motion ---

  /** Gotos from now: see Motions.goto (validated before anything moves; 409 for a compliant motor or while held). */
  goto(targets: ReadonlyMap<Motor, number>, duration: number, opts: GotoOptions = {}): StartedGoto {
    this.assertFree(`a goto of ${[...targets.keys()].map((m) => m.name).join(', ')}`);
    return this.#motions.goto(targets, duration, this.clock.now(), opts);
  }

  /** Ends the motion in progress on `motor`, if any (a newer command wins). */
  cancelMotion(motor: Motor): void {
    this.#motions.cancel(motor);
  }

  isMoving(motor: Motor): boolean {
    return this.#motions.isMoving(motor);
  }

  // --- control loop ---

  async #run(): Promise<void> {
    const paced = this.backend.waitForCycle?.bind(this.backend);
    if (paced) {
      let seen = 0;
      while (!this.#stop.signal.aborted) {
        try {
          seen = await paced(seen, this.#stop.signal);
        } catch (err) {
          if (isAbortError(err)) break;
          throw err;
        }
        if (this.#stop.signal.aborted) break;
        await this.tick();
      }
      return;
    }
    await runFixedRate(this.clock, 1 / this.rate, this.#stop.signal, () => this.tick());
  }

  /** One control cycle; public so scenario scripts and tests can drive the robot tick by tick. */
  async tick(): Promise<void> {
    this.#ticks++;
    await this.#bus.readState(this.#ticks);
    const now = this.clock.now();
    this.#motions.step(now);
    for (const handler of this.#tickHandlers) {
      try {
        handler(now);
      } catch (err) {
        this.logger.error(`control loop: a tick handler failed: ${(err as Error).message}`);
      }
    }
    // Held: the owner's writes are the servos' commands; the loop only reads.
    if (this.#hold) return;
    this.#applySafeCompliance();
    await this.#bus.writeCommands();
  }

  /**
   * pypot SafeCompliance: a motor with safe compliance stays limp only inside its angle limits; outside, it is held
   * stiff at the nearest limit until it is back inside by a small margin.
   */
  #applySafeCompliance(): void {
    const margin = 0.5;
    for (const m of this.motors) {
      if (!m.safeCompliance || !m.commands.compliant) {
        if (m.safeHold) {
          m.safeHold = false;
          m.dirty.add('compliant');
        }
        continue;
      }
      const p = m.state.presentPosition;
      // Held: driven back to a point safely inside the nearer limit, then let go once inside by `margin`.
      const inside = p < (m.minAngle + m.maxAngle) / 2 ? m.minAngle + 3 * margin : m.maxAngle - 3 * margin;
      if (!m.safeHold && (p < m.minAngle || p > m.maxAngle)) {
        m.safeHold = true;
        m.set('goalPosition', inside);
        m.dirty.add('compliant');
      } else if (m.safeHold && p >= m.minAngle + margin && p <= m.maxAngle - margin) {
        m.safeHold = false;
        m.dirty.add('compliant');
      } else if (m.safeHold && m.commands.goalPosition !== inside) {
        m.set('goalPosition', inside);
      }
    }
  }
}

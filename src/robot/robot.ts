/**
 * The robot: motors by name, aliases, the control loop that syncs them with the bus, and goto trajectories.
 * The loop reads state, lets controllers (gotos, the primitive manager) write commands, then writes the bus:
 * commands apart from state, as in ros2_control's read()/write() cycle.
 */
import type { Backend } from '../core/backend.ts';
import type { Clock } from '../core/clock.ts';
import { AbortError, isAbortError } from '../core/clock.ts';
import { conflict, notFound, RobotError, shuttingDown } from '../core/errors.ts';
import { type RobotConfig, expandAlias } from '../config/robot-config.ts';
import {
  type BusRegister,
  type RawValue,
  type SlowRegister,
  LED_COLOURS,
  SLOW_REGISTERS,
  slowRegistersDue,
  currentToAmps,
  degSToSpeed,
  degToPosition,
  gainsToRawPid,
  loadToPercent,
  modelSpec,
  percentToTorqueLimit,
  positionToDeg,
  rawPidToGains,
  speedToDegS,
  torqueLimitToPercent,
  voltageToVolts,
} from '../dynamixel/registers.ts';
import { orientRaw } from '../core/frames.ts';
import { type Logger, silentLogger } from '../core/logger.ts';
import { runFixedRate } from '../core/fixed-rate.ts';
import { Motor } from './motor.ts';
import { minimumJerk } from './trajectory.ts';

/** How a goto ended: `cancelled` when a newer command (or a stop) took over before it reached its target. */
export interface GotoOutcome {
  readonly cancelled: boolean;
}

export interface RobotOptions {
  /** Control loop rate, Hz (pypot syncs at 50 Hz). */
  readonly rate?: number;
  readonly logger?: Logger;
}

/** Something that writes motor commands each control tick (gotos, the primitive manager). */
export type TickHandler = (now: number) => void;

interface Motion {
  readonly motor: Motor;
  readonly from: number;
  readonly to: number;
  readonly start: number;
  readonly duration: number;
  readonly finished: Promise<boolean>;
  /** Ends the motion; `cancelled` says it did not reach its target. */
  readonly finish: (cancelled: boolean) => void;
}

export interface GotoOptions {
  readonly wait?: boolean;
}

export class Robot {
  readonly config: RobotConfig;
  readonly backend: Backend;
  readonly clock: Clock;
  readonly motors: readonly Motor[];
  readonly logger: Logger;
  readonly rate: number;
  readonly #byName: Map<string, Motor>;
  readonly #motions = new Map<Motor, Motion>();
  readonly #tickHandlers = new Set<TickHandler>();
  #ticks = 0;
  #loop: Promise<void> | undefined;
  readonly #stop = new AbortController();
  /** Aborted when the server starts shutting down: pending `wait` answers give way at once. */
  readonly #closing = new AbortController();

  constructor(config: RobotConfig, backend: Backend, opts: RobotOptions = {}) {
    this.config = config;
    this.backend = backend;
    this.clock = backend.clock;
    this.logger = opts.logger ?? silentLogger;
    this.rate = opts.rate ?? 50;
    this.motors = config.motors.map((m) => new Motor(m, modelSpec(m.model)));
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
    await this.#readInitial();
    const { pid, torqueLimit, led } = this.config.startup;
    for (const m of this.motors) {
      if (pid && m.spec.control === 'pid') m.set('pid', rawPidToGains(gainsToRawPid(pid)));
      if (torqueLimit !== undefined) m.set('torqueLimit', torqueLimit);
      if (led !== undefined && m.hasRegister('led')) m.set('led', led as Motor['commands']['led']);
    }
    await this.#writeCommands();
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.beginShutdown();
    this.#stop.abort();
    await this.#loop;
    for (const motion of this.#motions.values()) motion.finish(true);
    this.#motions.clear();
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

  // --- motion ---

  /**
   * Minimum-jerk moves of several motors to user-frame targets (clamped into the limits) over `duration` seconds.
   * Validation happens before anything moves. Resolves when every motion has ended or been cancelled.
   * A compliant motor is refused (409), unless `compliant` is 'keep-goal' (pypot's way): its goal follows the
   * trajectory, which it does not follow while compliant, and `done` still resolves after the duration.
   */
  goto(
    targets: ReadonlyMap<Motor, number>,
    duration: number,
    opts: { compliant?: 'reject' | 'keep-goal' } = {},
  ): { targets: Map<Motor, number>; done: Promise<GotoOutcome> } {
    for (const m of targets.keys()) {
      if (m.commands.compliant && opts.compliant !== 'keep-goal')
        throw conflict(
          `motor "${m.name}" is compliant`,
          `make it stiff first: POST /motors/${m.name}/registers/compliant/value.json with false`,
          'a compliant motor cannot follow a goto',
        );
    }
    const clamped = new Map<Motor, number>();
    const done: Promise<boolean>[] = [];
    const now = this.clock.now();
    for (const [m, target] of targets) {
      const to = m.clampAngle(target);
      clamped.set(m, to);
      this.cancelMotion(m);
      m.endGoalSpeed();
      let finish!: (cancelled: boolean) => void;
      const finished = new Promise<boolean>((resolve) => (finish = resolve));
      const motion: Motion = {
        motor: m,
        from: m.state.presentPosition,
        to,
        start: now,
        duration,
        finished,
        finish,
      };
      this.#motions.set(m, motion);
      done.push(finished);
    }
    return {
      targets: clamped,
      done: Promise.all(done).then((ends) => ({ cancelled: ends.some((cancelled) => cancelled) })),
    };
  }

  /** Ends the motion in progress on `motor`, if any (a newer command wins). */
  cancelMotion(motor: Motor): void {
    const motion = this.#motions.get(motor);
    if (!motion) return;
    this.#motions.delete(motor);
    motion.finish(true);
  }

  isMoving(motor: Motor): boolean {
    return this.#motions.has(motor);
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
    await this.#readState();
    const now = this.clock.now();
    this.#stepMotions(now);
    for (const handler of this.#tickHandlers) {
      try {
        handler(now);
      } catch (err) {
        this.logger.error(`control loop: a tick handler failed: ${(err as Error).message}`);
      }
    }
    this.#applySafeCompliance();
    await this.#writeCommands();
  }

  #stepMotions(now: number): void {
    for (const [m, motion] of this.#motions) {
      const tau = (now - motion.start) / motion.duration;
      if (tau >= 1) {
        m.set('goalPosition', motion.to);
        this.#motions.delete(m);
        motion.finish(false);
      } else {
        m.set('goalPosition', motion.from + (motion.to - motion.from) * minimumJerk(Math.max(0, tau)));
      }
    }
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

  async #busRead(reg: BusRegister, motors: readonly Motor[]): Promise<Map<number, RawValue> | undefined> {
    if (!motors.length) return undefined;
    try {
      const values = await this.backend.bus.read(
        motors.map((m) => m.id),
        reg,
      );
      // A bus may leave out a motor that stopped answering (the real one does) while the others carry on.
      for (const m of motors) {
        if (values.has(m.id)) m.fault = undefined;
        else if (!m.fault) {
          m.fault = `no reply to ${reg}`;
          this.logger.warn(`motor ${m.name}: no reply to ${reg}`);
        }
      }
      return values;
    } catch (err) {
      const msg = (err as Error).message;
      for (const m of motors) {
        if (m.fault !== msg) this.logger.warn(`motor ${m.name}: reading ${reg} failed: ${msg}`);
        m.fault = msg;
      }
      return undefined;
    }
  }

  async #readState(): Promise<void> {
    const all = this.motors;
    const pos = await this.#busRead('present_position', all);
    const speed = await this.#busRead('present_speed', all);
    const load = await this.#busRead('present_load', all);
    for (const m of all) {
      const p = pos?.get(m.id);
      if (typeof p === 'number') m.state.presentPosition = round2(m.toUser(positionToDeg(m.spec, p)));
      const s = speed?.get(m.id);
      if (typeof s === 'number') m.state.presentSpeed = round2(orientRaw(m.frame, speedToDegS(m.spec, s)));
      const l = load?.get(m.id);
      if (typeof l === 'number') m.state.presentLoad = orientRaw(m.frame, loadToPercent(l)) + 0;
    }
    // Slow registers at 5 Hz, as pypot's slower sync loops do (the first values were read at start, #readInitial).
    const due = slowRegistersDue(this.#ticks, this.rate);
    if (due.length) await this.#readSlow(due);
  }

  async #readSlow(which: readonly SlowRegister[]): Promise<void> {
    const read = (reg: SlowRegister, motors: readonly Motor[]) =>
      which.includes(reg) ? this.#busRead(reg, motors) : Promise.resolve(undefined);
    const volt = await read('present_voltage', this.motors);
    const temp = await read('present_temperature', this.motors);
    const withCurrent = this.motors.filter((m) => m.hasRegister('present_current'));
    const current = await read('present_current', withCurrent);
    for (const m of this.motors) {
      const v = volt?.get(m.id);
      if (typeof v === 'number') m.state.presentVoltage = voltageToVolts(v);
      const t = temp?.get(m.id);
      if (typeof t === 'number') m.state.presentTemperature = t;
      const c = current?.get(m.id);
      if (typeof c === 'number') m.state.presentCurrent = currentToAmps(c);
    }
  }

  async #readInitial(): Promise<void> {
    await this.#readState();
    await this.#readSlow(SLOW_REGISTERS);
    const read = async (reg: BusRegister, motors: readonly Motor[]) =>
      (await this.#busRead(reg, motors)) ?? new Map<number, RawValue>();
    const torque = await read('torque_enable', this.motors);
    const goal = await read('goal_position', this.motors);
    const speed = await read('moving_speed', this.motors);
    const limit = await read('torque_limit', this.motors);
    const pidMotors = this.motors.filter((m) => m.spec.control === 'pid');
    const pid = await read('pid', pidMotors);
    const axMotors = this.motors.filter((m) => m.spec.control === 'compliance');
    const margin = await read('compliance_margin', axMotors);
    const slope = await read('compliance_slope', axMotors);
    const ledMotors = this.motors.filter((m) => m.hasRegister('led'));
    const led = await read('led', ledMotors);
    for (const m of this.motors) {
      const c = m.commands;
      const te = torque.get(m.id);
      c.compliant = te === undefined ? true : te === 0;
      const g = goal.get(m.id);
      c.goalPosition =
        typeof g === 'number' ? round2(m.toUser(positionToDeg(m.spec, g))) : m.state.presentPosition;
      if (c.compliant) c.goalPosition = m.state.presentPosition;
      const s = speed.get(m.id);
      if (typeof s === 'number') c.movingSpeed = Math.abs(speedToDegS(m.spec, s));
      const l = limit.get(m.id);
      if (typeof l === 'number') c.torqueLimit = torqueLimitToPercent(l);
      const p = pid.get(m.id);
      if (Array.isArray(p)) c.pid = rawPidToGains(p);
      const mg = margin.get(m.id);
      if (Array.isArray(mg)) c.complianceMargin = [mg[0]!, mg[1]!];
      const sl = slope.get(m.id);
      if (Array.isArray(sl)) c.complianceSlope = [sl[0]!, sl[1]!];
      const ld = led.get(m.id);
      if (typeof ld === 'number') c.led = LED_COLOURS[ld] ?? 'off';
      m.dirty.clear();
    }
  }

  async #writeCommands(): Promise<void> {
    const groups = new Map<BusRegister, Map<number, RawValue>>();
    const put = (reg: BusRegister, id: number, v: RawValue) => {
      let g = groups.get(reg);
      if (!g) groups.set(reg, (g = new Map()));
      g.set(id, v);
    };
    for (const m of this.motors) {
      if (!m.dirty.size) continue;
      const c = m.commands;
      for (const name of m.dirty) {
        switch (name) {
          case 'compliant':
            put('torque_enable', m.id, c.compliant && !m.safeHold ? 0 : 1);
            break;
          case 'goalPosition':
            if (c.compliant && !m.safeHold) break; // a compliant motor keeps its goal but gets no position writes
            put('goal_position', m.id, degToPosition(m.spec, m.toRaw(c.goalPosition)));
            break;
          case 'movingSpeed':
            // Joint mode takes a magnitude; the sign of pypot's oriented speed is not sent (FACTS.md 9.2).
            put('moving_speed', m.id, degSToSpeed(m.spec, Math.abs(c.movingSpeed)));
            break;
          case 'torqueLimit':
            put('torque_limit', m.id, percentToTorqueLimit(c.torqueLimit));
            break;
          case 'pid':
            put('pid', m.id, gainsToRawPid(c.pid));
            break;
          case 'complianceMargin':
            put('compliance_margin', m.id, c.complianceMargin);
            break;
          case 'complianceSlope':
            put('compliance_slope', m.id, c.complianceSlope);
            break;
          case 'led':
            put('led', m.id, LED_COLOURS.indexOf(c.led));
            break;
          case 'controlMode':
            put('control_mode', m.id, c.controlMode);
            break;
        }
      }
      m.dirty.clear();
    }
    // Torque enable last: a motor made stiff gets its goal first, so it holds where it is.
    const order: BusRegister[] = [...groups.keys()].sort(
      (a, b) => Number(a === 'torque_enable') - Number(b === 'torque_enable'),
    );
    for (const reg of order) {
      try {
        await this.backend.bus.write(reg, groups.get(reg)!);
      } catch (err) {
        const msg = err instanceof RobotError ? err.message : String(err);
        const names = [...groups.get(reg)!.keys()].map(
          (id) => this.motors.find((m) => m.id === id)?.name ?? id,
        );
        this.logger.warn(`motors ${names.join(', ')}: writing ${reg} failed: ${msg}`);
      }
    }
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100 + 0;
}

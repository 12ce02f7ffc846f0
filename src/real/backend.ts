// Over 400 lines: the Backend seam of the real robot and its bus process link are one contract, kept together.
/**
 * The real robot: Dynamixel servos on a serial line (USB2AX, USB2Dynamixel, Pixl, or the bus emulator's pty).
 * The port, the BusDriver and pypot's sync loop live in a process of their own (src/real/bus-process.ts), so that the
 * loop keeps its schedule under HTTP load, and the servos are left safe even when the server is killed. Here, in the
 * server:
 * - before start() (the Robot's start-up reads, the Backend contract), every read and write goes to the bus at once,
 *   in order;
 * - once the loop runs, the Robot's reads of present position/speed/load and of the slow registers are served from
 *   the latest cycle's values (a lost motor is left out, so its routes answer 503), and writes are queued for the
 *   next cycle, in order;
 * - values are checked here first, so that a bad one rejects at once and nothing is sent.
 */
import type { Backend, Camera, MotorBus } from '../core/backend.ts';
import { AbortError, WallClock } from '../core/clock.ts';
import { ConfigError, badRequest, hardwareError } from '../core/errors.ts';
import {
  type BusRegister,
  type ModelSpec,
  type RawValue,
  CYCLE_REGISTERS,
  SLOW_REGISTERS,
  modelSpec,
} from '../dynamixel/registers.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { type BusSetup, type MotorHealth, busLayout, checkIds, checkWrite, freshHealth } from './driver.ts';
import type { CycleReport, LinkStats } from './sync-loop.ts';
import { type BusProcessSetup, type FromBus, type ToBus, fromWire } from './bus-messages.ts';
import { type BusHost, type StartBusHost, forkBusProcess } from './bus-host.ts';

export type { MotorHealth } from './driver.ts';

/** How long close() waits for the bus process to leave the servos safe and close the port. */
const CLOSE_TIMEOUT_MS = 5000;
/** The bus process runs ahead of the server, as a control loop should (see bus-process.ts): real time, else nice. */
export const BUS_REALTIME_PRIORITY = 20;
export const BUS_NICE = -10;
const CACHED = new Set<BusRegister>([...CYCLE_REGISTERS, ...SLOW_REGISTERS]);

export interface RealOptions {
  readonly config: RobotConfig;
  /** Serial device (--serial); default: the config's bus port. */
  readonly serial?: string;
  readonly baud?: number;
  /** Serve the motors that answer and give 503 for the others, instead of stopping at start-up. */
  readonly allowMissing?: boolean;
  /** What the servos do when the server closes: go limp (default) or hold their position. */
  readonly onClose?: 'compliant' | 'hold';
  /** Reply timeout beyond wire time, ms. */
  readonly timeoutMs?: number;
  /** Exclusive lock on the serial port (default true). */
  readonly lock?: boolean;
  /** The sync loop's rate (--loop-hz, default 50). */
  readonly loopHz?: number;
  /** 'raised' (default): the bus process asks for real-time scheduling, else nice -10; 'normal': the server's. */
  readonly busPriority?: 'raised' | 'normal';
  readonly camera?: Camera;
  readonly log?: (line: string) => void;
  /** Where the bus side runs (default: a process of its own; unit tests: in this process on a memory binding). */
  readonly busHost?: StartBusHost;
}

/** The robot's motors as the bus driver knows them: id, name, model and angle limits. */
export function busMotors(config: RobotConfig): BusSetup['motors'] {
  return config.motors.map((m) => ({ id: m.id, name: m.name, model: m.model, angleLimit: m.angleLimit }));
}

class ProcessBus implements MotorBus {
  constructor(private readonly owner: RealBackend) {}

  async read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    const { models } = this.owner;
    checkIds(models, ids);
    for (const id of ids) busLayout(models, id, reg);
    const cached = this.owner.cached(ids, reg);
    return cached ?? this.owner.request(ids, reg);
  }

  async write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void> {
    checkWrite(this.owner.models, reg, values);
    this.owner.send({ t: 'write', reg, values: [...values] });
    this.owner.tapWrite(reg, values);
  }
}

export class RealBackend implements Backend {
  readonly kind = 'real' as const;
  readonly clock = new WallClock();
  readonly bus: MotorBus;
  readonly camera?: Camera;
  readonly models: ReadonlyMap<number, ModelSpec>;
  /** Per motor, as the bus process last reported it. */
  readonly health = new Map<number, MotorHealth>();
  /** The serial line (GET /bus/health.json). */
  readonly port: { readonly path: string; readonly baud: number; readonly protocol: 1 | 2 };
  /** The link's counters, as the bus process last reported them. */
  stats: LinkStats = { transactions: 0, sent: 0, received: 0 };
  /** Sync-loop cycles done, as of the latest report. */
  cycles = 0;
  readonly #opts: RealOptions;
  readonly #setup: BusProcessSetup;
  #child: BusHost | undefined;
  /** Why the bus process is gone, once it is. */
  #dead: string | undefined;
  #looping = false;
  #nextReq = 1;
  readonly #pending = new Map<
    number,
    { reg: BusRegister; resolve: (v: Map<number, RawValue>) => void; reject: (e: Error) => void }
  >();
  readonly #reboots = new Map<number, { resolve: (back: boolean) => void; reject: (e: Error) => void }>();
  /** Latest value per cached register and motor. */
  readonly #cache = new Map<BusRegister, Map<number, RawValue>>();
  readonly #cycleListeners = new Set<(report: CycleReport) => void>();
  readonly #writeListeners = new Set<
    (reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number) => void
  >();
  /** Writes sent to the bus process so far: the sync loop reports how many of them went out (CycleReport.writes). */
  #writesSent = 0;
  /** The Robot's control loop, waiting for the next cycle (or for the news that there will be none). */
  readonly #wakeups = new Set<() => void>();
  #opened: Promise<void> | undefined;
  #closed: Promise<void> | undefined;
  #onOpened: ((m: Extract<FromBus, { t: 'opened' }>) => void) | undefined;
  #onLostDuringOpen: ((err: Error) => void) | undefined;
  /** Closing on purpose: the bus process's exit is expected, not news. */
  #ending = false;

  constructor(opts: RealOptions) {
    this.#opts = opts;
    const { config } = opts;
    const path = opts.serial ?? (config.bus.port !== 'auto' ? config.bus.port : undefined);
    if (!path)
      throw new ConfigError(
        '--serial',
        'the real backend needs the serial port of the robot, e.g. --serial=/dev/ttyUSB0',
      );
    this.models = new Map(config.motors.map((m) => [m.id, modelSpec(m.model)]));
    for (const m of config.motors) this.health.set(m.id, freshHealth(m, config.bus.protocol));
    const setup: BusSetup = {
      path,
      baud: opts.baud ?? config.bus.baudrate,
      protocol: config.bus.protocol,
      motors: busMotors(config),
      allowMissing: opts.allowMissing,
      timeoutMs: opts.timeoutMs,
      lock: opts.lock,
    };
    this.#setup = {
      ...setup,
      hz: opts.loopHz ?? 50,
      onClose: opts.onClose ?? 'compliant',
      ...(opts.busPriority === 'normal'
        ? { realtimePriority: 0, nice: 0 }
        : { realtimePriority: BUS_REALTIME_PRIORITY, nice: BUS_NICE }),
    };
    this.port = { path: setup.path, baud: setup.baud, protocol: setup.protocol };
    this.camera = opts.camera;
    this.bus = new ProcessBus(this);
  }

  log(line: string): void {
    this.#opts.log?.(line);
  }

  waitForCycle(after: number, signal: AbortSignal): Promise<number> {
    if (this.cycles > after) return Promise.resolve(this.cycles);
    if (signal.aborted) return Promise.reject(new AbortError());
    // No bus any more: the Robot still cycles at the loop's rate, so that its reads fail and the motors answer 503.
    if (this.#dead) return this.clock.sleep(1 / this.#setup.hz, signal).then(() => after + 1);
    return new Promise((resolve, reject) => {
      const wake = () => {
        this.#wakeups.delete(wake);
        signal.removeEventListener('abort', onAbort);
        resolve(Math.max(this.cycles, after + 1));
      };
      const onAbort = () => {
        this.#wakeups.delete(wake);
        reject(new AbortError());
      };
      this.#wakeups.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Listens to every write sent to the servos, as it is queued for the next cycle (the shadow twin's tap); returns
   * the unsubscribe. Listeners must not throw.
   */
  onWrite(
    listener: (reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number) => void,
  ): () => void {
    this.#writeListeners.add(listener);
    return () => this.#writeListeners.delete(listener);
  }

  /** `index`: this write's place among all sent (1 for the first), as CycleReport.writes counts them. */
  tapWrite(reg: BusRegister, values: ReadonlyMap<number, RawValue>): void {
    const index = ++this.#writesSent;
    for (const listener of this.#writeListeners) listener(reg, values, index);
  }

  /** Listens to every sync-loop cycle (the benchmark's figures); returns the unsubscribe. */
  onCycle(listener: (report: CycleReport) => void): () => void {
    this.#cycleListeners.add(listener);
    return () => this.#cycleListeners.delete(listener);
  }

  open(): Promise<void> {
    this.#opened ??= this.#open();
    return this.#opened;
  }

  async #open(): Promise<void> {
    this.#child = (this.#opts.busHost ?? forkBusProcess)({
      message: (m) => this.#receive(m),
      lost: (why) => this.#lost(why),
    });
    const opened = await new Promise<Extract<FromBus, { t: 'opened' }>>((resolve, reject) => {
      this.#onOpened = resolve;
      this.#onLostDuringOpen = reject;
      this.send({ t: 'open', setup: this.#setup });
    });
    this.#onLostDuringOpen = undefined;
    this.#updateHealth(opened.health);
    if (opened.error) {
      await this.#end();
      throw fromWire(opened.error);
    }
  }

  /** The sync loop starts; from now on the Robot's reads of cycle registers come from its cycles. */
  start(): void {
    if (this.#looping || !this.#child || this.#dead) return;
    this.#looping = true;
    this.send({ t: 'start' });
  }

  send(m: ToBus): void {
    if (this.#dead || !this.#child)
      throw hardwareError(`the serial bus is not available: ${this.#dead ?? 'not open'}`);
    this.#child.send(m);
  }

  /** A read from the latest cycles, when the loop runs and has every answering motor's value; else undefined. */
  cached(ids: readonly number[], reg: BusRegister): Map<number, RawValue> | undefined {
    if (!this.#looping || !CACHED.has(reg)) return undefined;
    const values = this.#cache.get(reg);
    if (!values) return undefined;
    const out = new Map<number, RawValue>();
    for (const id of ids) {
      if (!this.health.get(id)!.online) continue;
      const v = values.get(id);
      if (v === undefined) return undefined;
      out.set(id, v);
    }
    return out;
  }

  /** A read on the bus, in the bus process's order (the next cycle, once the loop runs). */
  request(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    const req = this.#nextReq++;
    return new Promise((resolve, reject) => {
      this.#pending.set(req, { reg, resolve, reject });
      try {
        this.send({ t: 'read', req, ids: [...ids], reg });
      } catch (err) {
        this.#pending.delete(req);
        reject(err as Error);
      }
    });
  }

  /**
   * Reboots motor `id` (protocol 2.0; a servo in hardware error comes back with its torque off), then the bus process
   * configures it as before (angle limits, return delay, torque and what else was written). Resolves whether it
   * answers again; a bad request on protocol 1.0.
   */
  reboot(id: number): Promise<boolean> {
    checkIds(this.models, [id]);
    if (this.port.protocol !== 2)
      return Promise.reject(
        badRequest(
          `motor ${this.health.get(id)!.name} (id ${id}) speaks protocol 1.0, which has no reboot instruction`,
        ),
      );
    const req = this.#nextReq++;
    return new Promise((resolve, reject) => {
      this.#reboots.set(req, { resolve, reject });
      try {
        this.send({ t: 'reboot', req, id });
      } catch (err) {
        this.#reboots.delete(req);
        reject(err as Error);
      }
    });
  }

  /** How the loop reads the motors: 'sync' (2.0) or 'bulk' (1.0) when it reads any in one packet, else 'single'. */
  get readMode(): 'sync' | 'bulk' | 'single' {
    const modes = new Set([...this.health.values()].map((h) => h.read));
    return modes.has('sync') ? 'sync' : modes.has('bulk') ? 'bulk' : 'single';
  }

  #receive(m: FromBus): void {
    switch (m.t) {
      case 'rebooted': {
        this.#updateHealth(m.health);
        this.stats = m.stats;
        const waiting = this.#reboots.get(m.req);
        this.#reboots.delete(m.req);
        if (m.error) waiting?.reject(fromWire(m.error));
        else waiting?.resolve(m.back ?? false);
        break;
      }
      case 'log':
        this.log(m.line);
        break;
      case 'opened':
        this.#onOpened?.(m);
        this.#onOpened = undefined;
        break;
      case 'read': {
        this.#updateHealth(m.health);
        this.stats = m.stats;
        const waiting = this.#pending.get(m.req);
        if (!waiting) break;
        this.#pending.delete(m.req);
        if (m.error) waiting.reject(fromWire(m.error));
        else {
          const values = new Map(m.values);
          if (CACHED.has(waiting.reg)) this.#remember(waiting.reg, values);
          waiting.resolve(values);
        }
        break;
      }
      case 'cycle': {
        this.cycles = m.seq;
        if (m.health) this.#updateHealth(m.health);
        this.stats = m.stats;
        for (const [reg, values] of m.values) this.#remember(reg, new Map(values));
        for (const listener of this.#cycleListeners) listener(m);
        for (const wake of [...this.#wakeups]) wake();
        break;
      }
    }
  }

  #remember(reg: BusRegister, values: ReadonlyMap<number, RawValue>): void {
    let cache = this.#cache.get(reg);
    if (!cache) this.#cache.set(reg, (cache = new Map()));
    for (const [id, v] of values) cache.set(id, v);
  }

  #updateHealth(health: readonly MotorHealth[]): void {
    for (const h of health) this.health.set(h.id, h);
  }

  /** The bus process is gone: every motor is offline, waiting reads fail, and the server carries on without the bus. */
  #lost(why: string): void {
    if (this.#dead) return;
    this.#dead = why;
    this.#looping = false;
    if (!this.#ending) this.log(why);
    for (const h of this.health.values()) h.online = false;
    const waiting = [...this.#pending.values(), ...this.#reboots.values()];
    this.#pending.clear();
    this.#reboots.clear();
    for (const w of waiting) w.reject(hardwareError(`the serial bus is not available: ${why}`));
    this.#onLostDuringOpen?.(new Error(why));
    for (const wake of [...this.#wakeups]) wake();
  }

  /** Asks the bus process to leave the servos safe and close the port; kills it if it does not within the limit. */
  async #end(): Promise<void> {
    const child = this.#child;
    if (!child || this.#dead) return;
    this.#ending = true;
    const exited = child.exited;
    this.send({ t: 'close', onClose: this.#setup.onClose });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(true), CLOSE_TIMEOUT_MS)),
    );
    if (await Promise.race([exited.then(() => false), late])) {
      this.log(`the bus process did not close within ${CLOSE_TIMEOUT_MS} ms: killed`);
      child.kill();
      await exited;
    }
    clearTimeout(timer);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      if (this.#opened) {
        await this.#opened.catch(() => {});
        await this.#end();
      }
      await (this.camera as { close?: () => Promise<void> } | undefined)?.close?.();
    })();
    return this.#closed;
  }
}

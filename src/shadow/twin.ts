// Over 400 lines: the twin's cycle (time, writes, hand-over, comparison, log, restart) reads best as one class.
/**
 * Shadow mode: a physics twin beside the real robot. Every command the server writes to the real servos is also
 * written to the twin's (a tap on the real backend's command path), and the twin's time advances by the bus loop's
 * cycles, so that both see the same commands at the same instants; joints whose servo is compliant are followed (the
 * twin's hand keeps them near the measured angle), not judged; the twin starts from the measured pose. Its physics
 * runs in a TwinEngine (twin-engine.ts), on this thread or a worker's. After each cycle the comparator weighs the real
 * readings against the twin's (src/shadow/comparator.ts).
 */
import type { ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import type { MotorBus } from '../core/backend.ts';
import {
  type BusRegister,
  type RawValue,
  loadToPercent,
  speedToDegS,
  positionResolution,
  positionToDeg,
} from '../dynamixel/registers.ts';
import { type UserFrameMotor, userFrame } from '../robot/bus-sync.ts';
import { orientRaw } from '../core/frames.ts';
import { SIM_STEP_S, type SimBackend } from '../sim/backend.ts';
import type { FirmwareState } from '../sim/servo.ts';
import { withParams } from '../sim/servo.ts';
import { type ServoModel, servoModel } from '../sim/servo-models.ts';
import { restBandDeg, restSpanDeg } from '../sim/servo-band.ts';
import type { RealBackend } from '../real/backend.ts';
import type { CycleReport } from '../real/sync-loop.ts';
import type { CycleLog } from './cycle-log.ts';
import {
  BAND,
  Comparator,
  type HoldWindow,
  type MotorComparison,
  type Reading,
  type ShadowEvent,
  type TouchingSide,
} from './comparator.ts';
import { type ById, LocalTwinEngine, type TwinCycleOutput, type TwinEngine } from './twin-engine.ts';
import { CLOSE_GRACE_MS, ThreadTwinEngine } from './twin-engine-thread.ts';
import { settleWithin } from '../core/settle.ts';

/**
 * The twin runs every cycle's time, however late it comes (a busy server): the robot did not pause, and a twin that
 * dropped the time it was late fell behind it (a false alarm). Beyond this many seconds (a stalled process) it is
 * put back on the measured pose instead of catching up.
 */
const MAX_CATCH_UP_S = 1;
/** A worker that died is started again this many times; past that, something in it fails every time. */
const MAX_RESTARTS = 3;
/** How many times a restart asks the servos that did not answer for a register the real ones hold. */
const REGISTER_READ_ATTEMPTS = 4;
/** Cycles a new worker's registers not answered are asked again for (2 s at 50 Hz), one read at a time. */
const RESTORE_CYCLES = 100;
/** The info line's words for who holds a contact's push where a motor is `touching`. */
const WHO_TOUCHES: Record<TouchingSide, string> = {
  twin: 'the twin presses a contact the robot does not feel',
  robot: `the robot presses a contact the twin comes within ${BAND.NEAR_GAP_MM} mm of`,
  both: 'both press a contact, met a few millimetres apart',
};
interface ShadowMotor extends UserFrameMotor {
  readonly id: number;
  readonly name: string;
  /** Its servo's model with the calibration's friction and gain: how far from a goal its gearbox holds it at rest. */
  readonly model: ServoModel;
}

export interface ShadowOptions {
  readonly config: RobotConfig;
  readonly urdf: UrdfRobot;
  readonly real: RealBackend;
  /** The twin's servos' own parameters (a calibration), by motor id. */
  readonly servoParams?: ReadonlyMap<number, ServoParams>;
  /** Each cycle's commands and readings, for a fit (--shadow-log; cycle-log.ts); closed with the twin. */
  readonly cycleLog?: CycleLog;
  /** The comparator's dead bands by motor name, from the same calibration (calibratedDeadBands). */
  readonly deadBands?: ReadonlyMap<string, number>;
  /** An event raised is a warning, its clearing news. */
  readonly log: (line: string, level: 'warn' | 'info') => void;
  /** The wall clock the cycle reports' `startedAt` are on, epoch ms (default performance's; tests script it). */
  readonly wallMs?: () => number;
  /** The twin's physics step, s (src/shadow/physics-rate.ts; default the sim's). */
  readonly stepS?: number;
  /** The solver's iterations a twin's step (physics-rate.ts; default the sim's). */
  readonly solverIterations?: number;
  /** Where the twin's physics runs: this thread (the default), or a worker thread of its own (--shadow-thread). */
  readonly thread?: 'main' | 'worker';
  /** Keep the servos' firmware states of each cycle (the guard starts its predictions from them). */
  readonly firmware?: boolean;
}

export interface ShadowStatus {
  readonly time: number;
  readonly motors: MotorComparison[];
  readonly events: ShadowEvent[];
}

export class ShadowTwin {
  readonly comparator: Comparator;
  #engine: TwinEngine;
  readonly #opts: ShadowOptions;
  readonly #motors: readonly ShadowMotor[];
  readonly #offs: (() => void)[] = [];
  #queue: Promise<void> = Promise.resolve();
  #lastCycleAt: number | undefined;
  /** The time of the cycles queued, and the re-anchorings so far. */
  #behind = 0;
  #epoch = 0;
  /** Writes sent to the servos and not yet out on the bus, in order, each with its index (RealBackend.tapWrite). */
  #writes: [number, BusRegister, ReadonlyMap<number, RawValue>][] = [];
  #closed = false;
  /** Put back on the measured pose at the next cycle (a calibration run ended: resume()). */
  #placeNext = false;
  /** The twin's clock and its servos' firmware states after the last cycle. */
  #twinTime = 0;
  #firmware: ReadonlyMap<number, FirmwareState> = new Map();
  /** A worker that died is started again (#restart), this many times at most; meanwhile cycles are not given. */
  #restarts = 0;
  #restarting = false;
  /** The registers the new worker takes first: the real servos' own, read once it opened. */
  #restore: [BusRegister, ById][] = [];
  /**
   * The registers some servos did not answer for the new worker (a loaded machine, a noisy bus): asked again as the
   * cycles come, one read at a time, until RESTORE_CYCLES; the registers written meanwhile are left out of the answer.
   */
  #unanswered: { regs: [BusRegister, number[]][]; cycles: number; asking: boolean; written: Set<string> } = {
    regs: [],
    cycles: 0,
    asking: false,
    written: new Set(),
  };
  /** The last write out on the bus (its index) when a cycle came during a restart. */
  #sentWhileRestarting = 0;
  /** Cycles until the new worker's servos take the real ones' loads (the second: once they have held a step). */
  #matchLoadsIn = 0;
  /** Cycles compared, the wall time (ms) the twin spent on them (the bench's figure), and its re-anchorings. */
  readonly stats = { cycles: 0, busyMs: 0, reanchored: 0 };

  readonly #newEngine: () => TwinEngine;

  constructor(opts: ShadowOptions) {
    this.#opts = opts;
    const setup = {
      config: opts.config,
      urdf: opts.urdf,
      models: opts.real.models,
      servoParams: opts.servoParams,
      solverIterations: opts.solverIterations,
      firmware: opts.firmware && opts.thread === 'worker',
      commands: opts.cycleLog !== undefined,
    };
    this.#newEngine = () =>
      opts.thread === 'worker'
        ? new ThreadTwinEngine({ ...setup, stepS: opts.stepS ?? SIM_STEP_S })
        : new LocalTwinEngine({ ...setup, stepS: opts.stepS });
    this.#engine = this.#newEngine();
    this.#motors = opts.config.motors.map((m) => ({
      id: m.id,
      name: m.name,
      spec: opts.real.models.get(m.id)!,
      model: withParams(servoModel(opts.real.models.get(m.id)!), opts.servoParams?.get(m.id)),
      frame: m,
    }));
    this.comparator = new Comparator({
      motors: this.#motors.map((m) => m.name),
      deadBands: opts.deadBands,
      onEvent: (e, change, held) => {
        if (change === 'raised') opts.log(describeEvent(e, held), 'warn');
        else opts.log(describeClear(e), 'info');
      },
      onTouching: (motor, real, twin, side) =>
        opts.log(
          `shadow: ${motor} touching: ${WHO_TOUCHES[side]} (twin ${round(twin.position)} deg, ${round(twin.load)} %; real ${round(real.position)} deg, ` +
            `${round(real.load)} %): not an event`,
          'info',
        ),
    });
  }

  /** The twin's physics: on this thread, or a worker's (its world is then out of reach: `sim` throws). */
  get engine(): TwinEngine {
    return this.#engine;
  }

  /** The twin's world when it runs on this thread (tests look into it); a worker's is out of reach. */
  get sim(): SimBackend {
    if (this.engine instanceof LocalTwinEngine) return this.engine.sim;
    throw new Error(
      "the shadow twin's physics runs in a worker thread: its world is not reachable from here",
    );
  }

  /** The twin's servos' registers (reads only: writes go through the real backend's tap). */
  get registers(): Pick<MotorBus, 'read'> {
    return { read: (ids, reg) => this.engine.read(ids, reg) };
  }

  /** The twin's clock after its last cycle, s. */
  get time(): number {
    return this.#twinTime;
  }

  /** The twin's servos' firmware states after its last cycle, by motor id (a worker's: with `firmware` set). */
  firmwareStates(): ReadonlyMap<number, FirmwareState> {
    return this.engine instanceof LocalTwinEngine ? this.engine.sim.firmwareStates() : this.#firmware;
  }

  /** Opens the twin in the measured pose and taps the real backend. Call after the backend opened, before start. */
  async open(): Promise<void> {
    const { real } = this.#opts;
    await this.#engine.open(await this.#measuredPose());
    this.#offs.push(real.onWrite((reg, values, index) => this.#command(reg, values, index)));
    this.#offs.push(real.onCycle((report) => this.#onCycle(report)));
  }

  /** The servos' angles as the bus reads them now, raw degrees by id (a motor that does not answer is left out). */
  async #measuredPose(): Promise<Map<number, number>> {
    const pose = new Map<number, number>();
    for (const m of this.#motors) {
      try {
        const v = (await this.#opts.real.bus.read([m.id], 'present_position')).get(m.id);
        if (typeof v === 'number') pose.set(m.id, positionToDeg(m.spec, v));
      } catch {
        // A motor missing keeps the twin's start pose; the comparator reports it offline.
      }
    }
    return pose;
  }

  /**
   * A calibration run drives the servos: the twin still takes every write (it stays in step with the commands), the
   * comparison pauses (Comparator.pause) until resume(), which puts the twin back on the measured pose first.
   */
  pause(): void {
    this.comparator.pause();
  }

  resume(): void {
    this.#placeNext = true;
  }

  /** Resolves once every cycle reported so far is compared (tests, benches). */
  async settled(): Promise<void> {
    await this.#queue;
  }

  status(): ShadowStatus {
    return {
      time: this.#opts.real.clock.now(),
      motors: this.comparator.status(),
      events: this.comparator.active(),
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const off of this.#offs.splice(0)) off();
    // The cycles given so far, then the engine; a worker stuck in one is ended by its close, which settles them.
    if (this.engine instanceof ThreadTwinEngine) await settleWithin(this.#queue, CLOSE_GRACE_MS);
    else await this.#queue;
    await this.engine.close();
    await this.#queue;
    await this.#opts.cycleLog?.close();
  }

  /** A write on its way to the servos: the twin takes it at the cycle that sends it (CycleReport.writes). */
  #command(reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number): void {
    this.#writes.push([index, reg, values]);
    if (this.#unanswered.asking) for (const id of values.keys()) this.#unanswered.written.add(`${reg}:${id}`);
  }

  /** One more read of the registers the new worker still lacks; what answers is given with the next cycle. */
  #askAgain(): void {
    const left = this.#unanswered;
    if (!left.regs.length || left.asking) return;
    if (++left.cycles > RESTORE_CYCLES) {
      const what = left.regs.map(
        ([reg, ids]) =>
          `${reg} of ${ids.map((id) => this.#motors.find((m) => m.id === id)?.name ?? id).join(', ')}`,
      );
      this.#opts.log(`shadow: the new twin has no ${what.join('; ')}: the servos did not answer`, 'warn');
      left.regs = [];
      return;
    }
    left.asking = true;
    left.written.clear();
    void this.#realRegisters(left.regs).then(({ read, missing }) => {
      left.asking = false;
      if (this.#closed) return;
      for (const [reg, values] of read) {
        const fresh = new Map([...values].filter(([id]) => !left.written.has(`${reg}:${id}`)));
        if (fresh.size) this.#restore.push([reg, fresh]);
      }
      left.regs = missing;
    });
  }

  #onCycle(report: CycleReport): void {
    // While a worker that died starts again the cycles wait; the writes they sent go to the new one with its first.
    if (this.#restarting) return void (this.#sentWhileRestarting = report.writes);
    const at = report.startedAt / 1000;
    const dt = this.#lastCycleAt === undefined ? 0 : Math.max(0, at - this.#lastCycleAt);
    this.#lastCycleAt = at;
    this.#behind += dt;
    const reanchor = this.#behind > MAX_CATCH_UP_S;
    if (reanchor) {
      this.#opts.log(
        `shadow: the twin was ${this.#behind.toFixed(2)} s behind the robot (a stalled server); ` +
          'put back on the measured pose',
        'warn',
      );
      // The cycles still queued before this one take their writes and drop their time.
      this.#epoch++;
    }
    const epoch = this.#epoch;
    // Compared at the cycle's own time (the backend's clock), not when this process got round to it.
    const wallMs = this.#opts.wallMs?.() ?? performance.timeOrigin + performance.now();
    const t = this.#opts.real.clock.now() - (wallMs - report.startedAt) / 1000;
    const values = new Map(report.values.map(([reg, v]) => [reg, new Map(v)]));
    // The writes this cycle sent (a busy server may have queued them several cycles before the bus process got them):
    // the twin runs the time up to the cycle with the commands before them, then takes them.
    let sent = 0;
    while (sent < this.#writes.length && this.#writes[sent]![0] <= report.writes) sent++;
    this.#askAgain();
    const writes = [
      ...this.#restore.splice(0),
      ...this.#writes.splice(0, sent).map(([, reg, v]): [BusRegister, ById] => [reg, v]),
    ];
    const realPos = values.get('present_position');
    const resuming = this.#placeNext;
    this.#placeNext = false;
    // Given to the engine now, in order (a worker's runs while this thread serves HTTP); taken back in order.
    const engine = this.#engine;
    const answer = engine.cycle({
      position: realPos,
      speed: values.get('present_speed'),
      lookNear: this.#motors.filter((m) => this.comparator.wantsNear(m.name)).map((m) => m.id),
      writes,
      // After a stall too long to catch up, the twin drops the time and is put on the measured pose.
      dt: reanchor ? 0 : dt,
      place: reanchor || resuming,
      epoch,
      matchLoads: this.#matchLoadsIn > 0 && --this.#matchLoadsIn === 0 ? this.#rawLoads(values) : undefined,
      heldLoads: this.#heldLoads(values),
    });
    // Handled where it is taken; marked now, as a worker that died rejects it before its turn.
    answer.catch(() => {});
    this.#queue = this.#queue
      .then(async () => this.#take(await answer, values, t, reanchor, resuming, dt))
      .catch((err: unknown) => this.#failed(err, engine));
  }

  /** A cycle that failed: said, and a worker that died is started again. */
  #failed(err: unknown, engine: TwinEngine): void {
    // A cycle given to a worker since replaced: its loss was said already.
    if (engine !== this.#engine) return;
    const gone = engine instanceof ThreadTwinEngine && engine.gone;
    if (gone && (this.#restarting || this.#closed)) return;
    const why = (err as Error).message;
    if (!gone) return this.#opts.log(`shadow: a cycle failed: ${why}`, 'warn');
    if (this.#restarts >= MAX_RESTARTS) {
      if (this.#restarts++ === MAX_RESTARTS)
        this.#opts.log(
          `shadow: ${why}, ${MAX_RESTARTS} times: the comparison stops (restart the server)`,
          'warn',
        );
      return;
    }
    this.#restarts++;
    this.#opts.log(`shadow: ${why}; starting it again on the measured pose`, 'warn');
    this.#restarting = true;
    void this.#restart().then(
      () => this.#closed || this.#opts.log("shadow: the twin's thread runs again; comparing afresh", 'info'),
      (e: unknown) => {
        this.#restarting = false;
        this.#failed(e, this.#engine);
      },
    );
  }

  /**
   * A new worker in the measured pose, its servos given the real ones' registers with its first cycle (the commands
   * the server sent before stay in force there), the comparison paused until that cycle has run.
   */
  async #restart(): Promise<void> {
    this.comparator.pause();
    this.#twinTime = 0;
    void this.#engine.close();
    const engine = this.#newEngine();
    this.#engine = engine;
    await engine.open(await this.#measuredPose());
    const { read, missing } = await this.#realRegisters(this.#restoredRegisters());
    this.#restore = read;
    this.#unanswered = { regs: missing, cycles: 0, asking: false, written: new Set() };
    // The writes out on the bus before those reads are in them: only the later ones are given after them.
    this.#writes = this.#writes.filter(([index]) => index > this.#sentWhileRestarting);
    // Closed meanwhile: close() ended the engine it found, maybe the old one.
    if (this.#closed) return void (await engine.close());
    this.#behind = 0;
    this.#lastCycleAt = undefined;
    this.#placeNext = true;
    this.#matchLoadsIn = 2;
    this.#restarting = false;
  }

  /**
   * The loads (percent of stall, raw frame) of the real servos that read still this cycle and agreed with the twin at
   * the last comparison: the I term a held servo has wound shows in them (TwinCycleInput.heldLoads).
   */
  #heldLoads(values: ReadonlyMap<BusRegister, ReadonlyMap<number, RawValue>>): Map<number, number> {
    const loads = new Map<number, number>();
    for (const m of this.#motors) {
      if (this.comparator.stateOf(m.name) !== 'agree') continue;
      const raw = values.get('present_load')?.get(m.id);
      const speed = values.get('present_speed')?.get(m.id);
      if (typeof raw !== 'number' || typeof speed !== 'number') continue;
      if (Math.abs(speedToDegS(m.spec, speed)) >= BAND.STILL_DEG_S) continue;
      loads.set(m.id, loadToPercent(raw));
    }
    return loads;
  }

  /** The cycle's loads, percent of stall in the raw frame, by id. */
  #rawLoads(values: ReadonlyMap<BusRegister, ReadonlyMap<number, RawValue>>): Map<number, number> {
    const loads = new Map<number, number>();
    for (const m of this.#motors) {
      const raw = values.get('present_load')?.get(m.id);
      if (typeof raw === 'number') loads.set(m.id, loadToPercent(raw));
    }
    return loads;
  }

  /** The commands the real servos hold now, in the order a twin takes them (limits, then goals, then torque). */
  /** The registers a new worker's servos take from the real ones, each with the motors that have it. */
  #restoredRegisters(): [BusRegister, number[]][] {
    const ids = (control?: string) =>
      this.#motors.filter((m) => control === undefined || m.spec.control === control).map((m) => m.id);
    return [
      ['angle_limit', ids()],
      ['torque_limit', ids()],
      ['moving_speed', ids()],
      ['pid', ids('pid')],
      ['compliance_margin', ids('compliance')],
      ['compliance_slope', ids('compliance')],
      ['goal_position', ids()],
      ['torque_enable', ids()],
    ];
  }

  /** `registers` read from the real servos, and the motors that did not answer for each. */
  async #realRegisters(
    registers: readonly [BusRegister, readonly number[]][],
  ): Promise<{ read: [BusRegister, ById][]; missing: [BusRegister, number[]][] }> {
    const { real } = this.#opts;
    const out: [BusRegister, ById][] = [];
    const missed: [BusRegister, number[]][] = [];
    for (const [reg, of] of registers) {
      if (!of.length) continue;
      // A noisy bus loses a read now and then (the driver retries once, and has no last value of a register it never
      // read): the motors left out are asked again, so a dropped reply does not leave a stiff servo limp in the twin.
      const values = new Map<number, RawValue>();
      for (let attempt = 0; attempt < REGISTER_READ_ATTEMPTS; attempt++) {
        const missing = of.filter((id) => !values.has(id));
        if (!missing.length) break;
        try {
          for (const [id, v] of await real.bus.read(missing, reg)) values.set(id, v);
        } catch {
          // Asked again, here and then as the cycles come (#askAgain).
        }
      }
      if (values.size) out.push([reg, values]);
      const missing = of.filter((id) => !values.has(id));
      if (missing.length) missed.push([reg, missing]);
    }
    return { read: out, missing: missed };
  }

  /** A cycle's answer from the engine: compared with what the robot read. */
  #take(
    out: TwinCycleOutput,
    values: ReadonlyMap<BusRegister, ReadonlyMap<number, RawValue>>,
    t: number,
    reanchor: boolean,
    resuming: boolean,
    dt: number,
  ): void {
    this.#behind -= dt;
    for (const line of out.warnings) this.#opts.log(line, 'warn');
    this.#twinTime = out.time;
    if (out.firmware) this.#firmware = out.firmware;
    if (this.#closed) return;
    if (out.stale) {
      if (resuming) this.#placeNext = true;
      return;
    }
    if (reanchor) this.stats.reanchored++;
    const realPos = values.get('present_position');
    const { torque, position: pos, speed, load, goal, kp, jointLoad, integrating } = out;
    this.#opts.cycleLog?.record(t, this.#motors, realPos, {
      goal,
      torque,
      limit: out.limit ?? new Map(),
    });
    for (const m of this.#motors) {
      const goalUser = userFrame.position(m, goal.get(m.id) as number);
      const kpNow = kp.get(m.id) ?? 0;
      const restBand = restBandDeg(m.model, kpNow);
      const twin: Reading = {
        ...reading(m, pos.get(m.id), speed.get(m.id), load.get(m.id))!,
        goal: goalUser,
        settles: settlesAt(m, goalUser, restBand, kpNow, jointLoad.get(m.id) ?? 0, integrating),
      };
      const real = reading(
        m,
        realPos?.get(m.id),
        values.get('present_speed')?.get(m.id),
        values.get('present_load')?.get(m.id),
      );
      const online = this.#opts.real.health.get(m.id)?.online ?? false;
      const contact = out.pressed.includes(m.id) ? 'pressed' : out.near.includes(m.id) ? 'near' : undefined;
      this.comparator.update(t, m.name, real, online, twin, torque.get(m.id) === 0, restBand, contact);
    }
    if (resuming) this.comparator.resume();
    this.stats.cycles++;
    this.stats.busyMs += out.busyMs;
  }
}

/**
 * Where the twin's gearbox can hold motor `m` still (degrees, user frame, low and high): about the point where its P
 * loop bears its links' weight `torque` (N.m); with an I term, about the goal as well, which it reaches in time. An
 * encoder count wider each side: a reading is rounded to it.
 */
function settlesAt(
  m: ShadowMotor,
  goal: number,
  restBand: number,
  kp: number,
  torque: number,
  integrating: readonly number[],
): [number, number] {
  const count = positionResolution(m.spec);
  const atGoal = [goal - restBand, goal + restBand];
  const span = restSpanDeg(m.model, kp, torque);
  const ends = span ? span.map((d) => goal + orientRaw(m.frame, d)) : atGoal;
  if (integrating.includes(m.id)) ends.push(...atGoal);
  return [Math.min(...ends) - count, Math.max(...ends) + count];
}

/** Readings in the user's frame, as the REST motor routes give them (m2 of an Ergo Jr at -114.81, not 114.81). */
function reading(
  m: ShadowMotor,
  position: RawValue | undefined,
  speed: RawValue | undefined,
  load: RawValue | undefined,
): Reading | undefined {
  if (typeof position !== 'number' || typeof speed !== 'number' || typeof load !== 'number') return undefined;
  return {
    position: userFrame.position(m, position),
    speed: userFrame.speed(m, speed),
    load: userFrame.load(m, load),
  };
}

const round = (v: number, digits = 1) => Number(v.toFixed(digits));

/** The event's one log line: the motor, the kind and the figures, with what its hold window said when known. */
export function describeEvent(e: ShadowEvent, held?: HoldWindow): string {
  const twin = `twin ${round(e.twin.position)} deg, ${round(e.twin.load)} %`;
  if (!e.real)
    return `shadow: ${e.motor} ${e.kind}: no readings from the servo since ${round(e.since, 2)} s (${twin})`;
  const error = e.real.position - e.twin.position;
  return (
    `shadow: ${e.motor} ${e.kind}: real ${round(e.real.position)} deg, ${round(e.real.load)} %, ${twin}; ` +
    `error ${round(error)} deg beyond the band of ${round(e.band)} deg since ${round(e.since, 2)} s` +
    (held
      ? `; of its ${held.samples} readings, ${held.alike} with loads and speeds alike, ${held.realMoving} moving`
      : '')
  );
}

/** The one log line of an event's end. */
export function describeClear(e: ShadowEvent): string {
  const lasted = e.until === null ? '' : `, after ${round(e.until - e.since, 2)} s`;
  return `shadow: ${e.motor} ${e.kind} cleared: back within the band${lasted}`;
}

/** The comparison as the live state stream carries it: per motor of `robot`, in its order, in the user's frame. */
export function shadowForStream(
  twin: ShadowTwin,
  robot: { readonly motors: readonly { readonly name: string }[] },
): {
  twin: (number | null)[];
  error: (number | null)[];
  state: string[];
  events: { motor: string; kind: string; since: number }[];
} {
  const byName = new Map(twin.comparator.status().map((c) => [c.motor, c]));
  const cs = robot.motors.map((m) => byName.get(m.name));
  return {
    twin: cs.map((c) => (c?.twin ? round(c.twin.position, 2) : null)),
    error: cs.map((c) => (c?.error == null ? null : round(c.error, 2))),
    state: cs.map((c) => c?.state ?? 'agree'),
    events: twin.comparator.active().map((e) => ({ motor: e.motor, kind: e.kind, since: round(e.since, 3) })),
  };
}

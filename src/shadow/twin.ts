// Over 400 lines: the twin's cycle (time, writes, follow, catch-up, comparison, log) reads best as one class.
/**
 * Shadow mode: a physics twin beside the real robot. Every command the server writes to the real servos is also
 * written to the twin's (a tap on the real backend's command path), and the twin's time advances by the bus loop's
 * cycles, so that both see the same commands at the same instants; joints whose servo is compliant are followed (the
 * twin's hand keeps them near the measured angle), not judged; the twin starts from the measured pose. After each
 * cycle the comparator weighs the real readings against the twin's (src/shadow/comparator.ts).
 */
import type { ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import {
  type BusRegister,
  type RawValue,
  complianceSlopeToP,
  positionToDeg,
  speedToDegS,
} from '../dynamixel/registers.ts';
import { type UserFrameMotor, userFrame } from '../robot/bus-sync.ts';
import { SimBackend } from '../sim/backend.ts';
import { withParams } from '../sim/servo.ts';
import { type ServoModel, servoModel } from '../sim/servo-models.ts';
import { restBandDeg } from '../sim/servo-band.ts';
import type { RealBackend } from '../real/backend.ts';
import type { CycleReport } from '../real/sync-loop.ts';
import type { CycleLog } from './cycle-log.ts';
import {
  Comparator,
  type HoldWindow,
  type MotorComparison,
  type Reading,
  type ShadowEvent,
} from './comparator.ts';

/**
 * The twin runs every cycle's time, however late it comes (a busy server): the robot did not pause, and a twin that
 * dropped the time it was late fell behind it (a false alarm). Beyond this many seconds (a stalled process) it is
 * put back on the measured pose instead of catching up.
 */
const MAX_CATCH_UP_S = 1;
/**
 * A compliant joint's slack about its measured angle (degrees): within it the twin's own physics moves the joint (the
 * same gravity, contacts and friction as the real one); beyond, the twin's hand pulls it back. About 3 XL-320 counts.
 */
const FOLLOW_SLACK_DEG = 1;

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
}

export interface ShadowStatus {
  readonly time: number;
  readonly motors: MotorComparison[];
  readonly events: ShadowEvent[];
}

export class ShadowTwin {
  readonly sim: SimBackend;
  readonly comparator: Comparator;
  readonly #opts: ShadowOptions;
  readonly #motors: readonly ShadowMotor[];
  readonly #offs: (() => void)[] = [];
  #queue: Promise<void> = Promise.resolve();
  #lastCycleAt: number | undefined;
  /** Time to run not yet run (under a step), the time of the cycles queued, and the re-anchorings so far. */
  #owed = 0;
  #behind = 0;
  #epoch = 0;
  #failed = new Set<string>();
  /** Writes sent to the servos and not yet out on the bus, in order, each with its index (RealBackend.tapWrite). */
  #writes: [number, BusRegister, ReadonlyMap<number, RawValue>][] = [];
  #closed = false;
  /** Put back on the measured pose at the next cycle (a calibration run ended: resume()). */
  #placeNext = false;
  /** Cycles compared, the wall time (ms) the twin spent on them (the bench's figure), and its re-anchorings. */
  readonly stats = { cycles: 0, busyMs: 0, reanchored: 0 };

  constructor(opts: ShadowOptions) {
    this.#opts = opts;
    this.sim = new SimBackend({
      config: opts.config,
      urdf: opts.urdf,
      speed: 'manual',
      dt: opts.stepS,
      servoParams: opts.servoParams,
    });
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
    });
  }

  /** Opens the twin in the measured pose and taps the real backend. Call after the backend opened, before start. */
  async open(): Promise<void> {
    const { real } = this.#opts;
    await this.sim.open();
    const pose = new Map<number, number>();
    for (const m of this.#motors) {
      try {
        const v = (await real.bus.read([m.id], 'present_position')).get(m.id);
        if (typeof v === 'number') pose.set(m.id, positionToDeg(m.spec, v));
      } catch {
        // A motor missing at start-up keeps the twin's start pose; the comparator reports it offline.
      }
    }
    this.sim.simulation.setPose(pose);
    this.#offs.push(real.onWrite((reg, values, index) => this.#command(reg, values, index)));
    this.#offs.push(real.onCycle((report) => this.#onCycle(report)));
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
    await this.#queue;
    await this.sim.close();
    await this.#opts.cycleLog?.close();
  }

  /** A write on its way to the servos: the twin takes it at the cycle that sends it (CycleReport.writes). */
  #command(reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number): void {
    this.#writes.push([index, reg, values]);
  }

  async #apply(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void> {
    if (reg === 'goal_position' && this.#opts.config.bus.protocol === 1)
      values = await this.#withinLimits(values);
    await this.sim.bus.write(reg, values).catch((err: unknown) => {
      // Logged once per register: the servo took it (it passed the real backend's checks) and the twin did not.
      if (this.#failed.has(reg)) return;
      this.#failed.add(reg);
      this.#opts.log(`shadow: the twin did not take a write of ${reg}: ${(err as Error).message}`, 'warn');
    });
  }

  /**
   * The goals a protocol 1.0 servo takes: one outside its CW/CCW limits is an angle-limit error, and the servo keeps
   * the goal it had (docs/reference/dynamixel.md 8.3). The twin's servos, behind no protocol, would take it: a limp
   * head hanging past its limit, made stiff where it is, then held there in the twin and went back in the robot.
   */
  async #withinLimits(values: ReadonlyMap<number, RawValue>): Promise<ReadonlyMap<number, RawValue>> {
    const limits = await this.sim.bus.read([...values.keys()], 'angle_limit');
    return new Map(
      [...values].filter(([id, v]) => {
        const [cw, ccw] = limits.get(id) as number[];
        return (cw === 0 && ccw === 0) || typeof v !== 'number' || (v >= cw! && v <= ccw!);
      }),
    );
  }

  /**
   * After a stall too long to catch up: every joint with a reading is put at rest on its measured angle.
   */
  async #reanchor(realPos: ReadonlyMap<number, RawValue> | undefined): Promise<void> {
    await this.#place(measuredPose(this.#motors, realPos));
    this.stats.reanchored++;
  }

  /**
   * Puts joints at rest on the given angles (raw degrees by id), their servos keeping the goals they were sent:
   * setPose puts a goal on the pose, and a servo's goal register holds what the host wrote, compliant or not.
   */
  async #place(pose: ReadonlyMap<number, number>): Promise<void> {
    if (!pose.size) return;
    const goals = await this.sim.bus.read([...pose.keys()], 'goal_position');
    this.sim.simulation.setPose(pose);
    await this.sim.bus.write('goal_position', goals);
  }

  /**
   * Compliant joints are followed, not judged: the twin's hand keeps each within FOLLOW_SLACK_DEG of its measured angle
   * (a hand moving the real arm moves the twin's), and lets the twin's physics carry it within (docs/decisions/
   * 0056-shadow-follows-limp-joints.md: a teleport stopped every joint of the world). A stiff joint is let go.
   */
  #follow(
    torque: ReadonlyMap<number, RawValue>,
    realPos: ReadonlyMap<number, RawValue> | undefined,
    realSpeed: ReadonlyMap<number, RawValue> | undefined,
  ): void {
    const hand = this.sim.simulation.hand;
    const stiff: number[] = [];
    for (const m of this.#motors) {
      if (torque.get(m.id) !== 0) {
        stiff.push(m.id);
        continue;
      }
      const p = realPos?.get(m.id);
      const v = realSpeed?.get(m.id);
      // A reading missing this cycle (a dropped reply): the hand keeps the last one, carried on briefly.
      if (typeof p !== 'number') continue;
      hand.follow(
        m.id,
        positionToDeg(m.spec, p),
        typeof v === 'number' ? speedToDegS(m.spec, v) : 0,
        FOLLOW_SLACK_DEG,
      );
    }
    hand.release(stiff);
  }

  /**
   * A limp joint made stiff this cycle holds where the servo is, not where the twin's follow had got to: the follow
   * pushes no harder than the link needs (decision 0056), so a real link that fell or was swung fast may be a few
   * degrees ahead of the twin's, which would then hold apart from it (a false `pushed`). Placed on the measured angle,
   * at the measured speed (a servo stiffened mid-swing overshoots its goal as its twin must).
   */
  async #catchUpStiffened(
    writes: readonly (readonly [BusRegister, ReadonlyMap<number, RawValue>])[],
    torque: ReadonlyMap<number, RawValue>,
    realPos: ReadonlyMap<number, RawValue> | undefined,
    realSpeed: ReadonlyMap<number, RawValue> | undefined,
  ): Promise<void> {
    const stiffened = writes.flatMap(([reg, v]) =>
      reg === 'torque_enable' ? [...v].filter(([id, on]) => on === 1 && torque.get(id) === 0) : [],
    );
    if (!stiffened.length || !realPos) return;
    const ids = stiffened.map(([id]) => id);
    const twinPos = await this.sim.bus.read(ids, 'present_position');
    for (const m of this.#motors) {
      const real = realPos.get(m.id);
      const twin = twinPos.get(m.id);
      if (!ids.includes(m.id) || typeof real !== 'number' || typeof twin !== 'number') continue;
      const measured = positionToDeg(m.spec, real);
      const speed = realSpeed?.get(m.id);
      if (Math.abs(measured - positionToDeg(m.spec, twin)) > FOLLOW_SLACK_DEG)
        this.sim.simulation.placeJoint(
          m.id,
          measured,
          typeof speed === 'number' ? speedToDegS(m.spec, speed) : 0,
        );
    }
  }

  #onCycle(report: CycleReport): void {
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
    const writes = this.#writes.splice(0, sent).map(([, reg, v]) => [reg, v] as const);
    this.#queue = this.#queue
      .then(() => this.#cycle(values, writes, t, reanchor, dt, epoch))
      .catch((err: unknown) => this.#opts.log(`shadow: a cycle failed: ${(err as Error).message}`, 'warn'));
  }

  async #cycle(
    values: ReadonlyMap<BusRegister, ReadonlyMap<number, RawValue>>,
    writes: readonly (readonly [BusRegister, ReadonlyMap<number, RawValue>])[],
    t: number,
    reanchor: boolean,
    dt: number,
    epoch: number,
  ): Promise<void> {
    this.#behind -= dt;
    if (this.#closed) return;
    const { sim } = this;
    if (epoch !== this.#epoch) {
      for (const [reg, v] of writes) await this.#apply(reg, v);
      return;
    }
    const started = performance.now();
    const ids = this.#motors.map((m) => m.id);
    const realPos = values.get('present_position');
    if (reanchor) await this.#reanchor(realPos);
    const resuming = this.#placeNext;
    if (resuming) {
      this.#placeNext = false;
      await this.#place(measuredPose(this.#motors, realPos));
    }
    const torque = await sim.bus.read(ids, 'torque_enable');
    this.#follow(torque, realPos, values.get('present_speed'));
    // This cycle's own time, then its writes: a burst of cycles (a busy server) runs each in turn, never all the time
    // first with the commands of the first.
    this.#owed += reanchor ? 0 : dt;
    const steps = Math.floor(this.#owed / sim.dt + 1e-9);
    if (steps > 0) {
      this.#owed -= steps * sim.dt;
      await sim.advance(steps * sim.dt);
    }
    await this.#catchUpStiffened(writes, torque, realPos, values.get('present_speed'));
    for (const [reg, v] of writes) await this.#apply(reg, v);
    const [pos, speed, load, goal] = await Promise.all(
      (['present_position', 'present_speed', 'present_load', 'goal_position'] as const).map((r) =>
        sim.bus.read(ids, r),
      ),
    );
    await this.#opts.cycleLog?.record(t, sim.bus, this.#motors, realPos);
    const rawKp = await this.#pGains();
    for (const m of this.#motors) {
      const twin = {
        ...reading(m, pos!.get(m.id), speed!.get(m.id), load!.get(m.id))!,
        goal: userFrame.position(m, goal!.get(m.id) as number),
      };
      const real = reading(
        m,
        realPos?.get(m.id),
        values.get('present_speed')?.get(m.id),
        values.get('present_load')?.get(m.id),
      );
      const online = this.#opts.real.health.get(m.id)?.online ?? false;
      const restBand = restBandDeg(m.model, rawKp.get(m.id) ?? 0);
      this.comparator.update(t, m.name, real, online, twin, torque.get(m.id) === 0, restBand);
    }
    if (resuming) this.comparator.resume();
    this.stats.cycles++;
    this.stats.busyMs += performance.now() - started;
  }

  /** Each motor's raw P gain now, as the twin's servos hold it (the AX's compliance slope acts as one). */
  async #pGains(): Promise<Map<number, number>> {
    const sim = this.sim;
    const byLoop = (control: string) =>
      this.#motors.filter((m) => m.spec.control === control).map((m) => m.id);
    const pid = byLoop('pid');
    const slope = byLoop('compliance');
    const out = new Map<number, number>();
    // [D, I, P] on the servo.
    if (pid.length) for (const [id, v] of await sim.bus.read(pid, 'pid')) out.set(id, (v as number[])[2]!);
    if (slope.length)
      for (const [id, v] of await sim.bus.read(slope, 'compliance_slope'))
        out.set(id, complianceSlopeToP(Math.min(...(v as number[]))));
    return out;
  }
}

/** The measured angles, raw degrees by id, of the motors that have one. */
function measuredPose(
  motors: readonly ShadowMotor[],
  realPos: ReadonlyMap<number, RawValue> | undefined,
): Map<number, number> {
  const pose = new Map<number, number>();
  for (const m of motors) {
    const v = realPos?.get(m.id);
    if (typeof v === 'number') pose.set(m.id, positionToDeg(m.spec, v));
  }
  return pose;
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

// Over 400 lines: the engine's cycle (follow, time, stiffened joints, held I terms, writes, readings) is one class.
/**
 * The shadow twin's physics, apart from its bookkeeping and comparison (twin.ts): a sim world fed a cycle at a time
 * (the measured pose, the writes the cycle sent, the time it covered), answering the twin servos' readings. It runs
 * on the server's thread (LocalTwinEngine) or in a worker thread of its own (twin-engine-thread.ts), so that on a
 * board of several slow cores the twin's steps leave the server's thread to HTTP and the web view (issue 46).
 * Everything crossing between them is plain data and Maps by motor id.
 */
import type { ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import {
  type BusRegister,
  type ModelSpec,
  type RawValue,
  complianceSlopeToP,
  loadToPercent,
  positionToDeg,
  speedToDegS,
} from '../dynamixel/registers.ts';
import { SimBackend } from '../sim/backend.ts';
import { BAND } from './comparator.ts';
import type { FirmwareState } from '../sim/servo.ts';

/** The worker thread's name on Linux (`top -H`, `ps -L`; the Pi-budget bench finds it by it). */
export const TWIN_THREAD_NAME = 'shadow-twin';
/** The start's short-lived worker that times a twin's step before the twin's own thread starts. */
export const TWIN_PROBE_THREAD_NAME = 'twin-step-probe';

/** Values by motor id (a worker's messages carry Maps as they are: the structured clone copies them). */
export type ById<T = RawValue> = ReadonlyMap<number, T>;

/**
 * A compliant joint's slack about its measured angle (degrees): within it the twin's own physics moves the joint (the
 * same gravity, contacts and friction as the real one); beyond, the twin's hand pulls it back. About 3 XL-320 counts.
 */
const FOLLOW_SLACK_DEG = 1;

export interface TwinEngineSetup {
  readonly config: RobotConfig;
  readonly urdf: UrdfRobot;
  /** The servos' models as the real bus found them, by id. */
  readonly models: ReadonlyMap<number, ModelSpec>;
  /** The twin's servos' own parameters (a calibration), by motor id. */
  readonly servoParams?: ReadonlyMap<number, ServoParams>;
  /** The physics step, s (default the sim's). */
  readonly stepS?: number;
  /** The solver's iterations a step (default the sim's). */
  readonly solverIterations?: number;
  /** Answer the servos' firmware states with every cycle (the guard starts its predictions from them). */
  readonly firmware?: boolean;
  /** Answer the commands a cycle log records (torque limit besides goal and torque). */
  readonly commands?: boolean;
}

export interface TwinCycleInput {
  /** The cycle's measured present_position and present_speed, raw, by id (absent: no reading this cycle). */
  readonly position?: ById;
  readonly speed?: ById;
  /**
   * The motors (ids) whose joints' gaps to look at (TwinCycleOutput.near): those beyond their band last cycle, or whose
   * real servo pushed beyond its twin (Comparator.wantsNear).
   */
  readonly lookNear?: readonly number[];
  /** The writes the cycle sent, in order. */
  readonly writes: readonly (readonly [BusRegister, ById])[];
  /** Seconds of robot time the cycle covered (0: none to run). */
  readonly dt: number;
  /** Put every joint with a reading at rest on its measured angle first (a stall too long, a calibration's end). */
  readonly place: boolean;
  /**
   * The re-anchorings the server had made when it sent the cycle: one sent before a later re-anchoring (heard) is
   * stale and only takes its writes, its time dropped.
   */
  readonly epoch: number;
  /**
   * The loads the real servos report, percent of stall in the raw frame, by id: each stiff servo's I term is set from
   * its own after the cycle's time (a new world's servos holding as the real ones have held for long).
   */
  readonly matchLoads?: ById<number>;
  /**
   * The loads (percent of stall, raw frame) of the real servos stiff and still this cycle that agreed with the twin at
   * the last comparison: a twin servo as still, its goal standing, whose load is further than HELD_LOAD_MATCH from it
   * takes the I term the real one holds (#matchHeld).
   */
  readonly heldLoads?: ById<number>;
}

/**
 * A still servo's I term integrates the error its gearbox holds it at: where twin and robot rest apart (each in its
 * rest span) they wind apart, the robot's slips when its I term beats the friction, and the twin's, still held, runs
 * past its goal at the next move (docs/decisions/0093-the-held-i-term.md). Beyond this many percent of stall apart,
 * the twin's servo takes the I term the real one's load and angle say it holds.
 */
const HELD_LOAD_MATCH = 5;
/** A twin joint slower than this (deg/s) is still. */
const HELD_STILL_DEG_S = 1;
/** A servo's I term is matched only once its goal has stood this long (s): not at a move's start or end. */
const HELD_GOAL_STILL_S = 0.5;

export interface TwinCycleOutput {
  /** The twin's clock after the cycle, s. */
  readonly time: number;
  /** The twin servos' registers after the cycle, raw, by id (every motor). */
  readonly torque: ById;
  readonly position: ById;
  readonly speed: ById;
  readonly load: ById;
  readonly goal: ById;
  /** The torque limit, when the setup asks for the commands. */
  readonly limit?: ById;
  /** Each motor's raw P gain now (the AX's compliance slope acts as one). */
  readonly kp: ById<number>;
  /** The motors (ids) whose position loop has an I term: at rest it brings the joint to its goal, not short of it. */
  readonly integrating: readonly number[];
  /** The motors (ids) a pressing contact in the twin acts across after the cycle (World.pressedJoints). */
  readonly pressed: readonly number[];
  /** Of TwinCycleInput.lookNear, the motors whose links across the joint come within BAND.NEAR_GAP_MM of touching. */
  readonly near: readonly number[];
  /** The torque (N.m) gravity (and any push applied) puts about each motor's joint after the cycle (jointLoads). */
  readonly jointLoad: ById<number>;
  readonly firmware?: ById<FirmwareState>;
  /** The cycle was stale (see TwinCycleInput.epoch): only its writes were taken. */
  readonly stale: boolean;
  /** Wall time the cycle took in the engine, ms. */
  readonly busyMs: number;
  /** What went wrong that the server should log once (a write the twin did not take). */
  readonly warnings: string[];
}

/** The twin's physics, wherever it runs. */
export interface TwinEngine {
  /** The physics step, s. */
  readonly stepS: number;
  /** The solver's iterations a step. */
  readonly solverIterations: number;
  /** Opens the world in the measured pose (raw degrees by id). */
  open(pose: ById<number>): Promise<void>;
  /**
   * Runs a cycle after the ones given before it, one at a time: called as each cycle comes (it hears the cycle's
   * epoch then), answered in order.
   */
  cycle(input: TwinCycleInput): Promise<TwinCycleOutput>;
  /** One register of the twin's servos (the guard copies them into its scratch world). */
  read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>>;
  close(): Promise<void>;
}

interface EngineMotor {
  readonly id: number;
  readonly name: string;
  readonly spec: ModelSpec;
}

/** The twin's physics on the calling thread. */
export class LocalTwinEngine implements TwinEngine {
  readonly sim: SimBackend;
  readonly #setup: TwinEngineSetup;
  readonly #motors: readonly EngineMotor[];
  readonly #failed = new Set<string>();
  /** Time owed to the world, under a step. */
  #owed = 0;
  /** The cycles given and not yet run, and the newest epoch heard. */
  #queue: Promise<unknown> = Promise.resolve();
  #newestEpoch = 0;
  /** Each motor's last goal written, and the sim time it changed (#matchHeld). */
  readonly #goals = new Map<number, RawValue>();
  readonly #goalAt = new Map<number, number>();

  constructor(setup: TwinEngineSetup) {
    this.#setup = setup;
    this.sim = new SimBackend({
      config: setup.config,
      urdf: setup.urdf,
      speed: 'manual',
      dt: setup.stepS,
      solverIterations: setup.solverIterations,
      servoParams: setup.servoParams,
    });
    this.#motors = setup.config.motors.map((m) => ({
      id: m.id,
      name: m.name,
      spec: setup.models.get(m.id)!,
    }));
  }

  get stepS(): number {
    return this.sim.dt;
  }

  get solverIterations(): number {
    return this.sim.solverIterations;
  }

  async open(pose: ById<number>): Promise<void> {
    await this.sim.open();
    this.sim.simulation.setPose(pose);
  }

  read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    return this.sim.bus.read(ids, reg);
  }

  close(): Promise<void> {
    return this.sim.close();
  }

  /** A cycle's epoch, heard as it comes (a worker hears it on receipt, before the cycles queued ahead of it run). */
  heard(epoch: number): void {
    if (epoch > this.#newestEpoch) this.#newestEpoch = epoch;
  }

  cycle(input: TwinCycleInput): Promise<TwinCycleOutput> {
    this.heard(input.epoch);
    const run = this.#queue.then(() => this.#cycle(input));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #cycle(input: TwinCycleInput): Promise<TwinCycleOutput> {
    const started = performance.now();
    const { sim } = this;
    const warnings: string[] = [];
    const stale = input.epoch < this.#newestEpoch;
    if (stale) {
      for (const [reg, v] of input.writes) await this.#apply(reg, v, warnings);
      return { ...(await this.#readings()), stale, busyMs: performance.now() - started, warnings };
    }
    const ids = this.#motors.map((m) => m.id);
    const realPos = input.position;
    const realSpeed = input.speed;
    if (input.place) await this.#place(this.#measuredPose(realPos));
    const torque = await sim.bus.read(ids, 'torque_enable');
    this.#follow(torque, realPos, realSpeed);
    // This cycle's own time, then its writes: a burst of cycles (a busy server) runs each in turn, never all the time
    // first with the commands of the first.
    this.#owed += input.dt;
    const steps = Math.floor(this.#owed / sim.dt + 1e-9);
    if (steps > 0) {
      this.#owed -= steps * sim.dt;
      await sim.advance(steps * sim.dt);
    }
    if (input.matchLoads) sim.matchLoads(input.matchLoads);
    await this.#catchUpStiffened(input.writes, torque, realPos, realSpeed);
    for (const [reg, v] of input.writes) {
      if (reg === 'goal_position') for (const [id, g] of v) this.#noteGoal(id, g);
      await this.#apply(reg, v, warnings);
    }
    // After the writes: the real readings were taken after the bus sent them.
    if (!input.matchLoads && input.heldLoads?.size) {
      const written = new Set(input.writes.flatMap(([, v]) => [...v.keys()]));
      const held = new Map([...input.heldLoads].filter(([id]) => !written.has(id)));
      if (held.size) await this.#matchHeld(held, realPos);
    }
    const readings = await this.#readings(input.lookNear);
    return { ...readings, stale, busyMs: performance.now() - started, warnings };
  }

  async #readings(
    lookNear: readonly number[] = [],
  ): Promise<Omit<TwinCycleOutput, 'warnings' | 'stale' | 'busyMs'>> {
    const { sim } = this;
    const ids = this.#motors.map((m) => m.id);
    const regs = [
      'torque_enable',
      'present_position',
      'present_speed',
      'present_load',
      'goal_position',
    ] as const;
    const [torque, position, speed, load, goal] = await Promise.all(regs.map((r) => sim.bus.read(ids, r)));
    const limit = this.#setup.commands ? await sim.bus.read(ids, 'torque_limit') : undefined;
    // Only a joint loaded beyond the load band holds a contact's push in the twin (comparator.ts touchingSide): the
    // contacts, 70-125 us a cycle of a moving robot, are read only then.
    const loaded = this.#motors.some((m) => {
      const v = load!.get(m.id);
      return typeof v === 'number' && Math.abs(loadToPercent(v)) > BAND.LOAD_BAND;
    });
    const pressedJoints = loaded ? sim.simulation.pressedJoints() : new Set<string>();
    // The gaps of the joints beyond their band only: 50-600 us a joint for the Torso on this machine.
    const looked = this.#motors.filter((m) => lookNear.includes(m.id)).map((m) => m.name);
    const near = looked.length ? sim.simulation.jointsNear(looked, BAND.NEAR_GAP_MM / 1000) : new Set();
    const jointLoads = sim.simulation.jointLoads();
    return {
      time: sim.clock.now(),
      torque: torque!,
      position: position!,
      speed: speed!,
      load: load!,
      goal: goal!,
      limit,
      ...(await this.#gains()),
      pressed: this.#motors.filter((m) => pressedJoints.has(m.name)).map((m) => m.id),
      near: this.#motors.filter((m) => near.has(m.name)).map((m) => m.id),
      jointLoad: new Map(this.#motors.map((m) => [m.id, jointLoads.get(m.name) ?? 0])),
      firmware: this.#setup.firmware ? sim.firmwareStates() : undefined,
    };
  }

  async #apply(reg: BusRegister, values: ReadonlyMap<number, RawValue>, warnings: string[]): Promise<void> {
    if (reg === 'goal_position' && this.#setup.config.bus.protocol === 1)
      values = await this.#withinLimits(values);
    await this.sim.bus.write(reg, values).catch((err: unknown) => {
      // Said once per register: the servo took it (it passed the real backend's checks) and the twin did not.
      if (this.#failed.has(reg)) return;
      this.#failed.add(reg);
      warnings.push(`shadow: the twin did not take a write of ${reg}: ${(err as Error).message}`);
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

  /** The measured angles, raw degrees by id, of the motors that have one. */
  #measuredPose(realPos: ReadonlyMap<number, RawValue> | undefined): Map<number, number> {
    const pose = new Map<number, number>();
    for (const m of this.#motors) {
      const v = realPos?.get(m.id);
      if (typeof v === 'number') pose.set(m.id, positionToDeg(m.spec, v));
    }
    return pose;
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
    writes: TwinCycleInput['writes'],
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

  /** A goal written: the time it changed, by motor id (a held servo's I term is matched once its goal stood). */
  #noteGoal(id: number, goal: RawValue): void {
    if (this.#goals.get(id) === goal) return;
    this.#goals.set(id, goal);
    this.#goalAt.set(id, this.sim.clock.now());
  }

  /**
   * The twin's servos stiff and still, their goals standing, whose loads are beyond HELD_LOAD_MATCH from their real
   * ones' (`real`, still and agreeing): each takes the I term its real one holds, worked out at the real angle. A
   * contact of the twin pressing across the joint too: a load is P and I, a push only in the error (decision 0095).
   */
  async #matchHeld(real: ById<number>, realPos: ReadonlyMap<number, RawValue> | undefined): Promise<void> {
    const now = this.sim.clock.now();
    // The goals first, without a read: a servo whose goal just moved is not read at all.
    const ids = [...real.keys()].filter(
      (id) => now - (this.#goalAt.get(id) ?? -Infinity) >= HELD_GOAL_STILL_S,
    );
    if (!ids.length) return;
    const [torque, speed, load] = await Promise.all([
      this.sim.bus.read(ids, 'torque_enable'),
      this.sim.bus.read(ids, 'present_speed'),
      this.sim.bus.read(ids, 'present_load'),
    ]);
    const loads = new Map<number, number>();
    const at = new Map<number, number>();
    for (const m of this.#motors) {
      const [v, l, r, p] = [speed.get(m.id), load.get(m.id), real.get(m.id), realPos?.get(m.id)];
      if (
        torque.get(m.id) !== 1 ||
        typeof v !== 'number' ||
        typeof l !== 'number' ||
        typeof p !== 'number' ||
        r === undefined
      )
        continue;
      if (Math.abs(speedToDegS(m.spec, v)) >= HELD_STILL_DEG_S) continue;
      if (Math.abs(loadToPercent(l) - r) <= HELD_LOAD_MATCH) continue;
      loads.set(m.id, r);
      at.set(m.id, positionToDeg(m.spec, p));
    }
    if (loads.size) this.sim.matchLoads(loads, at);
  }

  /** Each motor's raw P gain now, as the twin's servos hold it (the AX's compliance slope acts as one). */
  async #gains(): Promise<{ kp: Map<number, number>; integrating: number[] }> {
    const sim = this.sim;
    const byLoop = (control: string) =>
      this.#motors.filter((m) => m.spec.control === control).map((m) => m.id);
    const pid = byLoop('pid');
    const slope = byLoop('compliance');
    const kp = new Map<number, number>();
    const integrating: number[] = [];
    // [D, I, P] on the servo.
    if (pid.length)
      for (const [id, v] of await sim.bus.read(pid, 'pid')) {
        const [, i, p] = v as number[];
        kp.set(id, p!);
        if (i! > 0) integrating.push(id);
      }
    if (slope.length)
      for (const [id, v] of await sim.bus.read(slope, 'compliance_slope'))
        kp.set(id, complianceSlopeToP(Math.min(...(v as number[]))));
    return { kp, integrating };
  }
}

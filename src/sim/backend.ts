// Over 400 lines: the sim Backend, its bus and its stepping loop share the world and clock; the world, hand and servos are apart.
/**
 * The simulated robot: a Rapier world stepped at a fixed timestep, one SimServo per motor, a bus that speaks raw
 * register counts like the real one, and a clock that is the physics time.
 */
import type { Backend, MotorBus } from '../core/backend.ts';
import type { SimulationControls } from './controls.ts';
import { SteppedClock, flushMicrotasks } from '../core/clock.ts';
import { ConfigError, hardwareError } from '../core/errors.ts';
import { type BusRegister, type ModelSpec, type RawValue, modelSpec } from '../dynamixel/registers.ts';
import { userToJoint } from '../core/frames.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { PhysicsWorld } from './world.ts';
import type { ServoParams } from '../config/calibration.ts';
import { DEFAULT_SOLVER_ITERATIONS, jointStopsOf } from './build-world.ts';
import { type FirmwareState, SimServo } from './servo.ts';
import { SimHands } from './hand.ts';
import { readRegister, writeRegister } from './servo-registers.ts';
import { SimCamera } from './camera.ts';
import { CardTable } from '../scene/cards.ts';
import type { WorldScheduler } from './scheduler.ts';
import { RealismError } from '../scene/camera-model.ts';
import { DEFAULT_ROOM } from '../config/room.ts';
import { type PhysicalFaults, type Stop, stopTorque, weakened } from './physical-faults.ts';

export type SimSpeed = number | 'max' | 'manual';

export interface SimOptions {
  readonly config: RobotConfig;
  readonly urdf: UrdfRobot;
  /**
   * Sim seconds per wall second, 'max' to run as fast as the CPU allows, or 'manual': time moves only through
   * advance() (tests, scenario scripts).
   */
  readonly speed: SimSpeed;
  /** Physics timestep, seconds. */
  readonly dt?: number;
  /** The solver's substeps a step (default 4, build-world.ts); fewer: a cheaper, less stiff step (the shadow twin). */
  readonly solverIterations?: number;
  /** Initial pose, user degrees by motor name (defaults to the config's start-up pose, then 0). */
  readonly initialPose?: Readonly<Record<string, number>>;
  /** In real time, how often the physics wakes to take the steps due, ms (default REAL_TIME_WAKE_MS). */
  readonly wakeMs?: number;
  /** Skip the solver while the robot is at rest (default true; src/sim/rest.ts). */
  readonly restWhenStill?: boolean;
  /** Steps with other worlds in one shared scheduler (a classroom) instead of a loop of its own. */
  readonly scheduler?: WorldScheduler;
  /** The camera's lens and sensor model (the config's camera.realism); false: clean frames. Default true. */
  readonly cameraRealism?: boolean;
  /** Faults of the physical world on the joints (the bus emulator's), read every physics step. */
  readonly physicalFaults?: () => PhysicalFaults;
  /** Each servo's own parameters by motor id (a calibration; the emulator's --servo-params); absent: the models'. */
  readonly servoParams?: ReadonlyMap<number, ServoParams>;
}

const DEG = Math.PI / 180;
/** The physics step, s, unless the options give one: 500 Hz, the servos' firmware loop's rate or finer. */
export const SIM_STEP_S = 0.002;
/** In 'max' mode, hand the event loop back at least this often (ms of wall time) so requests are served. */
const MAX_MODE_SLICE_MS = 4;
/** In real time, steps taken back to back hand the event loop over after this long (ms), so requests wait less. */
const REAL_TIME_BATCH_MS = 1;
/**
 * In real time, the physics wakes this often (ms) and takes the steps due (five 2 ms steps): waking every millisecond
 * for a 2 ms step cost an idle Torso server 13 % of a core, 10 ms 8.7 % (the wake-ups themselves, and steps taken
 * one at a time run slower). State still moves twice as often as pypot's 50 Hz sync loop refreshes a real robot's.
 */
const REAL_TIME_WAKE_MS = 10;
/** Real-time mode gives up catching up beyond this lag (s) rather than stalling the process. */
const MAX_LAG_S = 0.25;

class SimBus implements MotorBus {
  constructor(private readonly servos: ReadonlyMap<number, SimServo>) {}

  async read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    const out = new Map<number, RawValue>();
    for (const id of ids) out.set(id, readRegister(this.#servo(id), reg));
    return out;
  }

  async write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void> {
    for (const id of values.keys()) this.#servo(id);
    for (const [id, v] of values) writeRegister(this.#servo(id), reg, v);
  }

  #servo(id: number): SimServo {
    const s = this.servos.get(id);
    if (!s)
      throw hardwareError(
        `motor ${id} does not answer`,
        'check the motor ids in the robot config',
        'no servo with this id on the simulated bus',
      );
    return s;
  }
}

export class SimBackend implements Backend {
  readonly kind = 'sim' as const;
  readonly clock = new SteppedClock();
  readonly bus: MotorBus;
  readonly models: ReadonlyMap<number, ModelSpec>;
  readonly simulation: SimulationControls;
  /** The rendered camera, when the robot config has one, and the marker cards of the world. */
  readonly camera: SimCamera | undefined;
  readonly cards: CardTable;
  readonly #opts: SimOptions;
  readonly #servos = new Map<number, SimServo>();
  /** Parallel arrays: physics joint index of each servo. */
  #drive: { servo: SimServo; joint: number }[] = [];
  #world: PhysicsWorld | undefined;
  readonly #hands: SimHands;
  readonly #stepListeners = new Set<(simTime: number) => void>();
  #steps = 0;
  #running = false;
  #loop: Promise<void> | undefined;
  #speed: SimSpeed;
  #wallStart = 0;
  #rtfWindow: { wall: number; sim: number }[] = [];
  /** Wall time spent in physics steps (servos, solver), s: the metrics' step time. */
  #stepWall = 0;
  #unschedule: (() => void) | undefined;
  /** Joint angles (rad) the twin started in, by joint name: what reset() goes back to. */
  #startAngles: ReadonlyMap<string, number> = new Map();
  /** The joints a physical fault put a torque on last step (taken off before the hands and faults put this step's). */
  readonly #faultJoints = new Set<number>();
  /** The stops of block faults by motor id, each with the side the joint was on when it appeared. */
  readonly #stops = new Map<number, Stop>();
  readonly dt: number;

  /** The solver's iterations a step: the world's once open, else those it will take. */
  get solverIterations(): number {
    return this.#world?.solverIterations ?? this.#opts.solverIterations ?? DEFAULT_SOLVER_ITERATIONS;
  }

  constructor(opts: SimOptions) {
    this.#opts = opts;
    this.#speed = opts.speed;
    this.dt = opts.dt ?? SIM_STEP_S;
    const models = new Map<number, ModelSpec>();
    for (const m of opts.config.motors) {
      const spec = modelSpec(m.model);
      models.set(m.id, spec);
      this.#servos.set(
        m.id,
        new SimServo({ id: m.id, spec, angleLimit: m.angleLimit, params: opts.servoParams?.get(m.id) }),
      );
    }
    this.models = models;
    this.bus = new SimBus(this.#servos);
    this.#hands = new SimHands(this.clock, (id) => {
      const servo = this.#servos.get(id);
      const world = this.#world;
      if (!servo || !world) return undefined;
      return { world, servo, joint: this.#drive.find((d) => d.servo === servo)!.joint };
    });
    this.cards = new CardTable(opts.config.world.cards);
    const { camera, world } = opts.config;
    try {
      this.camera = camera
        ? new SimCamera({
            camera,
            urdf: opts.urdf,
            table: world.table,
            room: world.room ?? DEFAULT_ROOM,
            cards: this.cards,
            jointAngles: () => this.jointAngles(),
            jointVelocities: () => this.jointVelocities(),
            now: () => this.clock.now(),
            realism: opts.cameraRealism === false ? null : camera.realism,
          })
        : undefined;
    } catch (err) {
      if (err instanceof RealismError)
        throw new ConfigError(err.field, err.message, opts.config.source || undefined);
      throw err;
    }
    const speedOf = () => this.#speed;
    this.simulation = {
      hand: this.#hands.tool,
      realTimeFactor: () => this.#realTimeFactor(),
      contacts: () => this.#world?.contacts() ?? [],
      pressedJoints: () => this.#world?.pressedJoints() ?? new Set(),
      jointsNear: (joints, gap) => this.#world?.jointsNear(joints, gap) ?? new Set(),
      jointLoads: () => this.#jointLoads(),
      reset: () => this.#reset(),
      setPose: (rawDeg) => this.#setPose(rawDeg),
      placeJoint: (id, rawDeg, rawDegS) => this.#placeJoint(id, rawDeg, rawDegS ?? 0),
      linkPose: (link) => this.#world?.linkPose(link),
      onStep: (listener) => {
        this.#stepListeners.add(listener);
        return () => this.#stepListeners.delete(listener);
      },
      advance: (seconds) => this.advance(seconds),
      stats: () => ({
        simTime: this.clock.now(),
        steps: this.#steps,
        restingSteps: this.#world?.restingSteps ?? 0,
        wallTime: (performance.now() - this.#wallStart) / 1000,
        stepWallTime: this.#stepWall,
      }),
      get speed() {
        return speedOf();
      },
    };
  }

  async open(): Promise<void> {
    if (this.#world) return;
    const { config, urdf } = this.#opts;
    const pose = this.#opts.initialPose ?? config.startup.pose;
    const armature = new Map<string, number>();
    const initial = new Map<string, number>();
    const jointNames = new Set(urdf.joints.map((j) => j.name));
    for (const [i, m] of config.motors.entries()) {
      if (!jointNames.has(m.name))
        throw new ConfigError(
          `motors.${i}.name`,
          `motor "${m.name}" has no joint of that name in ${config.urdfPath}`,
          config.source,
        );
      armature.set(m.name, this.#servos.get(m.id)!.model.armature);
      const [lo, hi] = m.angleLimit;
      const raw = Math.min(hi, Math.max(lo, userToJoint(m, pose[m.name] ?? 0) / DEG));
      initial.set(m.name, raw * DEG);
    }
    this.#world = await PhysicsWorld.create(urdf, {
      dt: this.dt,
      armature,
      initialAngles: initial,
      table: config.world.table,
      selfCollision: config.world.selfCollision,
      jointStops: jointStopsOf(config, urdf),
      restWhenStill: this.#opts.restWhenStill,
      solverIterations: this.#opts.solverIterations,
    });
    this.#startAngles = initial;
    this.#drive = config.motors.map((m) => {
      const servo = this.#servos.get(m.id)!;
      const joint = this.#world!.jointIndex(m.name);
      servo.placeAt(initial.get(m.name)!);
      return { servo, joint };
    });
    this.#running = true;
    this.#wallStart = performance.now();
  }

  /**
   * Starts stepping in the background (not for 'manual' speed). Separate from open() so that start-up work (file
   * reads, module loads) is not slowed down by a sim already running flat out.
   */
  start(): void {
    const scheduler = this.#opts.scheduler;
    if (scheduler) {
      if (this.#running && !this.#unschedule)
        this.#unschedule = scheduler.add({
          dt: this.dt,
          now: () => this.clock.now(),
          step: () => {
            this.#stepOnce();
            return this.clock.nextDue() <= this.clock.now() + 1e-12;
          },
          fire: () => this.clock.fireDue(),
          sampled: () => this.#sampleRtf(),
        });
      return;
    }
    if (!this.#running || this.#loop || this.#speed === 'manual') return;
    this.#wallStart = performance.now();
    this.#loop = this.#run();
  }

  async close(): Promise<void> {
    this.#running = false;
    this.#unschedule?.();
    this.#unschedule = undefined;
    await this.#loop;
    this.#loop = undefined;
    this.#hands.release();
    this.#world?.free();
    this.#world = undefined;
  }

  /** Each servo's firmware state, by motor id (what a scratch copy of this robot takes over). */
  firmwareStates(): Map<number, FirmwareState> {
    return new Map([...this.#servos].map(([id, servo]) => [id, servo.firmwareState()]));
  }

  /** Gives these servos the firmware states of another robot's (after setPose: the holds are kept relative). */
  takeFirmwareStates(states: ReadonlyMap<number, FirmwareState>): void {
    for (const [id, state] of states) this.#servos.get(id)?.takeFirmwareState(state);
  }

  /** Sets each stiff servo's I term from the load its real one reports (percent of stall, raw frame), by motor id. */
  matchLoads(loads: ReadonlyMap<number, number>, atRawDeg?: ReadonlyMap<number, number>): void {
    // atRawDeg: the real servos' own angles (raw degrees, still), where they read those loads: their I terms are taken.
    for (const [id, load] of loads) {
      const deg = atRawDeg?.get(id);
      this.#servos.get(id)?.matchLoad(load, deg === undefined ? undefined : { angle: deg * DEG, speed: 0 });
    }
  }

  /** Present joint angles (rad) by joint name, read from the physics: what the rendered camera is posed from. */
  jointAngles(): Map<string, number> {
    const world = this.#world;
    const angles = new Map<string, number>();
    if (world)
      for (const m of this.#opts.config.motors) angles.set(m.name, world.angle(world.jointIndex(m.name)));
    return angles;
  }

  /**
   * What servo `id`'s encoder reads (degrees, raw frame, the offset included), unquantised: present_position before
   * its rounding to counts. The servo takes its reading at the start of each step, so it is one step older than
   * jointAngles(), as the register is (a fit compared to the register must read this: decisions/0073).
   */
  encoderDeg(id: number): number {
    const servo = this.#servos.get(id);
    if (!servo) throw new Error(`no servo ${id} on the simulated bus`);
    return servo.angle / DEG;
  }

  /** Present joint speeds (rad/s) by joint name: the camera's motion blur. */
  jointVelocities(): Map<string, number> {
    const world = this.#world;
    const speeds = new Map<string, number>();
    if (world)
      for (const m of this.#opts.config.motors) speeds.set(m.name, world.velocity(world.jointIndex(m.name)));
    return speeds;
  }

  /** Steps the physics by `seconds` synchronously with timers firing in order (scenario scripts, tests). */
  async advance(seconds: number): Promise<void> {
    const end = this.clock.now() + seconds;
    while (this.clock.now() + this.dt / 2 < end) {
      this.#stepOnce();
      if (this.clock.nextDue() <= this.clock.now() + 1e-12) {
        this.clock.fireDue();
        await flushMicrotasks();
      }
    }
  }

  #stepOnce(): void {
    const started = performance.now();
    const world = this.#world!;
    const dt = this.dt;
    const t = this.clock.now();
    for (const joint of this.#faultJoints) world.setExternalTorque(joint, 0);
    this.#faultJoints.clear();
    this.#hands.apply(t);
    const faults = this.#opts.physicalFaults?.();
    if (faults) this.#faultTorques(faults);
    for (const { servo, joint } of this.#drive) {
      const load = world.load(joint);
      const cmd = servo.step(dt, world.angle(joint), world.velocity(joint), load.torque, load.inertia);
      const weak = faults?.weak.get(servo.id);
      world.drive(joint, weak === undefined ? cmd : weakened(cmd, weak));
    }
    world.step();
    this.#stepWall += (performance.now() - started) / 1000;
    this.#steps++;
    this.clock.setNow((this.#steps * dt * 1e9) / 1e9);
    for (const listener of this.#stepListeners) listener(this.clock.now());
  }

  async #run(): Promise<void> {
    let wallRef = performance.now();
    let simRef = this.clock.now();
    while (this.#running) {
      if (this.#speed === 'max') {
        const sliceEnd = performance.now() + MAX_MODE_SLICE_MS;
        while (this.#running && performance.now() < sliceEnd) {
          this.#stepOnce();
          if (this.clock.nextDue() <= this.clock.now() + 1e-12) {
            this.clock.fireDue();
            await flushMicrotasks();
          }
        }
        this.#sampleRtf();
        await flushMicrotasks();
      } else {
        const speed = this.#speed as number;
        const now = performance.now();
        let target = simRef + ((now - wallRef) / 1000) * speed;
        if (target - this.clock.now() > MAX_LAG_S * speed) {
          // Too far behind (process stalled): drop the lost time instead of freezing the server to catch up.
          simRef = this.clock.now();
          wallRef = now;
          target = simRef;
        }
        let batchStart = performance.now();
        while (this.#running && this.clock.now() + this.dt <= target + 1e-9) {
          this.#stepOnce();
          if (this.clock.nextDue() <= this.clock.now() + 1e-12) {
            this.clock.fireDue();
            await flushMicrotasks();
          }
          // Catching up several steps back to back would hold requests that arrived meanwhile: let I/O in.
          if (performance.now() - batchStart > REAL_TIME_BATCH_MS) {
            await new Promise((resolve) => setImmediate(resolve));
            batchStart = performance.now();
          }
        }
        this.#sampleRtf();
        await new Promise((resolve) => setTimeout(resolve, this.#opts.wakeMs ?? REAL_TIME_WAKE_MS));
      }
    }
  }

  #sampleRtf(): void {
    const wall = performance.now() / 1000;
    this.#rtfWindow.push({ wall, sim: this.clock.now() });
    while (this.#rtfWindow.length > 2 && wall - this.#rtfWindow[0]!.wall > 2) this.#rtfWindow.shift();
  }

  #realTimeFactor(): number {
    const w = this.#rtfWindow;
    if (w.length < 2) return 0;
    const a = w[0]!;
    const b = w[w.length - 1]!;
    return b.wall > a.wall ? (b.sim - a.sim) / (b.wall - a.wall) : 0;
  }

  #jointLoads(): Map<string, number> {
    const loads = new Map<string, number>();
    const world = this.#world;
    if (!world) return loads;
    const names = world.jointNames;
    for (const { joint } of this.#drive) loads.set(names[joint]!, world.load(joint).torque);
    return loads;
  }

  /** Back to the start pose with every joint still, every servo limp with its goal there; the hand lets go. */
  #reset(): void {
    const world = this.#world;
    if (!world) return;
    this.#hands.release();
    world.setAngles(this.#startAngles);
    for (const { servo, joint } of this.#drive) {
      servo.torqueEnable = 0;
      servo.placeAt(world.angle(joint));
    }
  }

  /** Puts the given joints (raw degrees by motor id) at those angles at rest, with their goals there. */
  #setPose(rawDeg: ReadonlyMap<number, number>): void {
    const world = this.#world;
    if (!world) return;
    const angles = new Map<string, number>();
    for (const [id, deg] of rawDeg) {
      const entry = this.#drive.find((d) => d.servo.id === id);
      if (!entry) throw hardwareError(`motor ${id} is not in the simulation`);
      // Raw degrees as the encoder reads them: the joint is the offset below.
      angles.set(world.jointNames[entry.joint]!, deg * DEG - entry.servo.offset);
    }
    this.#hands.release((id) => rawDeg.has(id));
    world.setAngles(angles);
    for (const { servo, joint } of this.#drive) if (rawDeg.has(servo.id)) servo.placeAt(world.angle(joint));
  }

  #placeJoint(id: number, rawDeg: number, rawDegS: number): void {
    const world = this.#world;
    if (!world) return;
    const entry = this.#drive.find((d) => d.servo.id === id);
    if (!entry) throw hardwareError(`motor ${id} is not in the simulation`);
    const goal = entry.servo.goalPosition;
    world.turnJoint(entry.joint, rawDeg * DEG - entry.servo.offset, rawDegS * DEG);
    entry.servo.placeAt(world.angle(entry.joint), rawDegS * DEG);
    entry.servo.goalPosition = goal;
  }

  /** Adds the push and stop torques of the physical faults to this step's external torques (a hand's included). */
  #faultTorques(faults: PhysicalFaults): void {
    const world = this.#world!;
    for (const id of this.#stops.keys()) if (!faults.block.has(id)) this.#stops.delete(id);
    for (const { servo, joint } of this.#drive) {
      let torque = faults.push.get(servo.id) ?? 0;
      const blockDeg = faults.block.get(servo.id);
      if (blockDeg !== undefined) {
        const q = world.angle(joint);
        let stop = this.#stops.get(servo.id);
        if (stop?.at !== blockDeg * DEG) {
          stop = { at: blockDeg * DEG, side: q >= blockDeg * DEG ? 1 : -1 };
          this.#stops.set(servo.id, stop);
        }
        torque += stopTorque(stop, q, world.velocity(joint), world.load(joint).inertia, this.dt);
      }
      if (torque === 0) continue;
      world.setExternalTorque(joint, world.externalTorque(joint) + torque);
      this.#faultJoints.add(joint);
    }
  }
}

/**
 * A real robot at the level of the bus cycles, on a sim clock, for the shadow twin's deterministic tests: the
 * emulator's physics (a SimBackend with its hand) stands for the servos; each 20 ms cycle sends the writes queued
 * since the last, reads position, speed and load (a reply dropped at `dropRate` is asked again once, as the driver
 * does, else the last value stands) and reports to the twin. It leaves out the serial line and its timing: the tests
 * over the emulator process (shadow.test.ts, torso.test.ts, limp.test.ts) cover those, in real time.
 */
import { type Calibration, servoParamsOf } from '../../src/config/calibration.ts';
import { type RobotConfig, loadRobotConfig } from '../../src/config/robot-config.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { type BusRegister, type RawValue, degToPosition } from '../../src/dynamixel/registers.ts';
import type { RealBackend } from '../../src/real/backend.ts';
import type { CycleReport } from '../../src/real/sync-loop.ts';
import { calibratedDeadBands } from '../../src/shadow/comparator.ts';
import { type ShadowOptions, ShadowTwin } from '../../src/shadow/twin.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

const EPOCH_MS = 1.7e12;
const CYCLE_S = 0.02;
const READ: readonly BusRegister[] = ['present_position', 'present_speed', 'present_load'];

type WriteListener = (reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number) => void;

export class SimReal {
  readonly models: SimBackend['models'];
  readonly health: Map<number, { online: boolean }>;
  readonly clock: { now(): number };
  /** The wall clock of the cycle reports (epoch ms): the sim's. */
  readonly wallMs = () => EPOCH_MS + this.sim.clock.now() * 1000;
  readonly bus: { read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> };
  readonly #rand: () => number;
  readonly #queued: [BusRegister, ReadonlyMap<number, RawValue>][] = [];
  readonly #last = new Map<BusRegister, Map<number, RawValue>>();
  #index = 0;
  #seq = 0;
  #writeListener?: WriteListener;
  #cycleListener?: (report: CycleReport) => void;

  constructor(
    readonly sim: SimBackend,
    readonly protocol: 1 | 2,
    readonly dropRate: number,
    seed = 1,
  ) {
    this.models = sim.models;
    this.health = new Map([...sim.models.keys()].map((id) => [id, { online: true }]));
    this.clock = { now: () => sim.clock.now() };
    this.bus = { read: (ids, reg) => sim.bus.read(ids, reg) };
    this.#rand = mulberry32(seed);
  }

  onWrite(l: WriteListener): () => void {
    this.#writeListener = l;
    return () => (this.#writeListener = undefined);
  }

  onCycle(l: (report: CycleReport) => void): () => void {
    this.#cycleListener = l;
    return () => (this.#cycleListener = undefined);
  }

  /** The server queues a write: it goes out at the next cycle. */
  write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): void {
    this.#queued.push([reg, values]);
    this.#writeListener?.(reg, values, ++this.#index);
  }

  /**
   * The goals the servos take: on protocol 1.0 one outside a servo's CW/CCW limits is refused (an angle-limit error,
   * docs/reference/dynamixel.md 8.3), as the emulator's servos refuse it; the sim's own servos would take it.
   */
  async #taken(values: ReadonlyMap<number, RawValue>): Promise<ReadonlyMap<number, RawValue>> {
    if (this.protocol !== 1) return values;
    const limits = await this.sim.bus.read([...values.keys()], 'angle_limit');
    return new Map(
      [...values].filter(([id, v]) => {
        const [cw, ccw] = limits.get(id) as number[];
        return (cw === 0 && ccw === 0) || (typeof v === 'number' && v >= cw! && v <= ccw!);
      }),
    );
  }

  /** One cycle: the writes out, the readings in and reported, then 20 ms of the robot's time. */
  async cycle(): Promise<void> {
    for (const [reg, values] of this.#queued.splice(0))
      await this.sim.bus.write(reg, reg === 'goal_position' ? await this.#taken(values) : values);
    const ids = [...this.models.keys()];
    const values: CycleReport['values'] = [];
    for (const reg of READ) {
      const read = await this.sim.bus.read(ids, reg);
      const last = this.#last.get(reg) ?? new Map<number, RawValue>();
      this.#last.set(reg, last);
      for (const id of ids) {
        const lost = this.#rand() < this.dropRate && this.#rand() < this.dropRate;
        if (!lost) last.set(id, read.get(id)!);
      }
      values.push([reg, [...last]]);
    }
    this.#cycleListener?.({
      seq: ++this.#seq,
      startedAt: this.wallMs(),
      lateMs: 0,
      values,
      stats: { transactions: 0, sent: 0, received: 0 },
      writes: this.#index,
    });
    await this.sim.advance(CYCLE_S);
  }
}

/** A goto as the Robot sends it: one goal per cycle on a minimum-jerk path, raw degrees. */
export function minJerk(from: number, to: number, duration: number, t: number): number {
  const s = Math.min(1, Math.max(0, t / duration));
  return from + (to - from) * s * s * s * (10 - 15 * s + 6 * s * s);
}

export interface Beside {
  readonly config: RobotConfig;
  readonly real: SimReal;
  readonly twin: ShadowTwin;
  /** The event lines the twin logged. */
  readonly events: string[];
  /** Raw degrees of a motor's goal in counts, for a write. */
  counts(goals: ReadonlyMap<number, number>): Map<number, RawValue>;
  /** Runs cycles for `seconds`, calling `each(t)` before each (t: seconds since the run began). */
  run(seconds: number, each?: (t: number) => void | Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/**
 * The robot's twin beside it, both from the config's start pose, limp. With `calibration`: the robot's servos are
 * that file's and the twin loads it (its servo parameters and its dead bands), as `--calibration` does.
 */
export async function besideTwin(
  robot: string,
  dropRate: number,
  seed = 1,
  calibration?: Calibration,
  twinOptions: Partial<ShadowOptions> = {},
  /** The real servos' own parameters, when they are not the twin's calibration (a fit of them). */
  realServos: Calibration | undefined = calibration,
): Promise<Beside> {
  const config = await loadRobotConfig(robot);
  const urdf = await loadUrdf(config.urdfPath);
  const servoParams = calibration && servoParamsOf(calibration);
  const sim = new SimBackend({
    config,
    urdf,
    speed: 'manual',
    servoParams: realServos && servoParamsOf(realServos),
  });
  await sim.open();
  const real = new SimReal(sim, config.bus.protocol, dropRate, seed);
  const events: string[] = [];
  const twin = new ShadowTwin({
    config,
    urdf,
    real: real as unknown as RealBackend,
    servoParams,
    deadBands: calibration && calibratedDeadBands(calibration),
    log: (line, level) => {
      if (level === 'warn') events.push(line);
    },
    wallMs: real.wallMs,
    ...twinOptions,
  });
  await twin.open();
  let cycles = 0;
  return {
    config,
    real,
    twin,
    events,
    counts: (goals) => new Map([...goals].map(([id, deg]) => [id, degToPosition(real.models.get(id)!, deg)])),
    async run(seconds, each) {
      const t0 = sim.clock.now();
      while (sim.clock.now() - t0 < seconds - 1e-9) {
        await each?.(sim.clock.now() - t0);
        await real.cycle();
        cycles++;
        // The twin's cycle runs on its own promise chain.
        for (let turns = 0; twin.stats.cycles < cycles; turns++) {
          if (turns > 1000) throw new Error(`the twin did not take cycle ${cycles}: ${events.join('; ')}`);
          await new Promise((r) => setImmediate(r));
        }
      }
    },
    async close() {
      await twin.close();
      await sim.close();
    },
  };
}

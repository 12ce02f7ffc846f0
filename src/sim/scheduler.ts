/**
 * One stepper for many physics worlds (a classroom of twins in one process): every wake it takes all worlds to the
 * same target time, one step of each in turn, so no twin runs ahead of another. When the CPU cannot keep up, the
 * target is held back for all of them alike: every twin slows by the same factor and each sim clock stays honest.
 */
import { flushMicrotasks } from '../core/clock.ts';

/** What the scheduler needs of a world (SimBackend gives it; tests may give their own). */
export interface ScheduledWorld {
  /** Physics timestep, s. */
  readonly dt: number;
  /** The world's sim time, s. */
  now(): number;
  /** Takes one physics step; true when clock timers came due (they are fired by fire()). */
  step(): boolean;
  /** Fires the clock's due timers (their continuations run on the next turn of the event loop). */
  fire(): void;
  /** Called once per wake after stepping, for the world's own real-time-factor window. */
  sampled?(): void;
}

export interface SchedulerOptions {
  /** Sim seconds per wall second, or 'manual': time moves only through advance() (tests). */
  readonly speed: number | 'manual';
  /** How often the stepper wakes, ms (default 10, like a lone twin: src/sim/backend.ts REAL_TIME_WAKE_MS). */
  readonly wakeMs?: number;
  /** Schedulers in other threads to keep pace with (a sharded classroom); none by default. */
  readonly peers?: PeerClock;
}

/**
 * Scheduler times shared by the schedulers of several threads, one Float64Array slot each (on a SharedArrayBuffer):
 * each publishes its own time in `times[index]` and steps no further than the slowest other slot plus `slack` s.
 * A slot that is NaN (not started, stopped, its thread dead) holds no one back.
 */
export interface PeerClock {
  readonly times: Float64Array;
  readonly index: number;
  /** Sim seconds a scheduler may run ahead of the slowest of the others. */
  readonly slack: number;
}

/** Beyond this lag (s of sim time) the scheduler drops the lost time for every world rather than stall. */
const MAX_LAG_S = 0.25;
/** Steps taken back to back hand the event loop over after this long (ms), so requests wait less. */
const BATCH_MS = 1;
/** The real-time factor is measured over this much wall time, s. */
const RTF_WINDOW_S = 2;

interface Entry {
  readonly world: ScheduledWorld;
  /** World time minus scheduler time when it joined: twins may join at different sim times. */
  readonly offset: number;
}

export class WorldScheduler {
  readonly speed: number | 'manual';
  readonly #wakeMs: number;
  readonly #peers: PeerClock | undefined;
  readonly #entries = new Set<Entry>();
  /** Scheduler time every world has reached, s. */
  #time = 0;
  #running = false;
  #loop: Promise<void> | undefined;
  #window: { wall: number; sim: number }[] = [];
  /** Sim time dropped because the CPU could not keep up, s. */
  #dropped = 0;

  constructor(opts: SchedulerOptions) {
    this.speed = opts.speed;
    this.#wakeMs = opts.wakeMs ?? 10;
    this.#peers = opts.peers;
  }

  /** Adds a world at its present time; the returned function takes it out (at once, even mid-wake). */
  add(world: ScheduledWorld): () => void {
    const entry: Entry = { world, offset: world.now() - this.#time };
    this.#entries.add(entry);
    return () => this.#entries.delete(entry);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Scheduler time, s: every world has been stepped to it (plus its offset). */
  now(): number {
    return this.#time;
  }

  /** Sim seconds per wall second over the last RTF_WINDOW_S, for all worlds alike (0 until measured). */
  realTimeFactor(): number {
    const w = this.#window;
    if (w.length < 2) return 0;
    const a = w[0]!;
    const b = w[w.length - 1]!;
    return b.wall > a.wall ? (b.sim - a.sim) / (b.wall - a.wall) : 0;
  }

  /** Sim seconds given up so far because the machine was short of CPU. */
  droppedSeconds(): number {
    return this.#dropped;
  }

  /** Starts stepping in real time (not at speed 'manual'). */
  start(): void {
    if (this.#loop || this.speed === 'manual') return;
    this.#running = true;
    this.#loop = this.#run(this.speed);
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    this.#loop = undefined;
    if (this.#peers) this.#peers.times[this.#peers.index] = NaN;
  }

  /** The slowest other peer's time plus the slack (Infinity without peers, or when none is running). */
  #peerLimit(): number {
    const peers = this.#peers;
    if (!peers) return Infinity;
    let slowest = Infinity;
    for (let i = 0; i < peers.times.length; i++) {
      const t = peers.times[i]!;
      if (i !== peers.index && !Number.isNaN(t)) slowest = Math.min(slowest, t);
    }
    return slowest + peers.slack;
  }

  /** Steps every world by `seconds` in lockstep, timers firing in order (tests, speed 'manual'). */
  async advance(seconds: number): Promise<void> {
    await this.#stepTo(this.#time + seconds, false);
  }

  /**
   * Takes every world to scheduler time `target`, one step of each in turn; timers that came due fire after each
   * round. With `yieldToIo`, hands the event loop over every BATCH_MS.
   */
  async #stepTo(target: number, yieldToIo: boolean): Promise<void> {
    let batchStart = performance.now();
    for (;;) {
      let stepped = false;
      const due: ScheduledWorld[] = [];
      for (const { world, offset } of this.#entries) {
        if (world.now() + world.dt > target + offset + 1e-9) continue;
        stepped = true;
        if (world.step()) due.push(world);
      }
      if (due.length) {
        for (const world of due) world.fire();
        await flushMicrotasks();
      }
      if (!stepped) break;
      if (yieldToIo && performance.now() - batchStart > BATCH_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        batchStart = performance.now();
      }
      if (yieldToIo && !this.#running) return;
    }
    this.#time = Math.max(this.#time, target);
  }

  async #run(speed: number): Promise<void> {
    let wallRef = performance.now();
    let simRef = this.#time;
    if (this.#peers) this.#peers.times[this.#peers.index] = this.#time;
    while (this.#running) {
      const now = performance.now();
      let target = simRef + ((now - wallRef) / 1000) * speed;
      if (target - this.#time > MAX_LAG_S * speed) {
        // Too far behind: every world gives up the same lost time, so they all slow down by the same factor.
        this.#dropped += target - this.#time;
        simRef = this.#time;
        wallRef = now;
        target = simRef;
      }
      // Held back by a slower peer, this shard falls behind its own target and drops time like a slow one.
      target = Math.max(this.#time, Math.min(target, this.#peerLimit()));
      await this.#stepTo(target, true);
      // An aligned 8-byte store: other threads read the old or the new time, never a torn one (x64, arm64).
      if (this.#peers) this.#peers.times[this.#peers.index] = this.#time;
      this.#sample();
      for (const { world } of this.#entries) world.sampled?.();
      await new Promise((resolve) => setTimeout(resolve, this.#wakeMs));
    }
  }

  #sample(): void {
    const wall = performance.now() / 1000;
    this.#window.push({ wall, sim: this.#time });
    while (this.#window.length > 2 && wall - this.#window[0]!.wall > RTF_WINDOW_S) this.#window.shift();
  }
}

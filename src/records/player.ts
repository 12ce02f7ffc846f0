/**
 * Replaying a move (docs/reference/pypot.md 4.7, docs/reference/contract.md 4): the motors of the move are made stiff; if any is more than 5 degrees
 * from the start frame (the first one, the last one when backwards) they first travel there together along a
 * minimum-jerk path; then each control tick sets the goals from the move, interpolated linearly between samples.
 * The player is the primitive `_<move>_player`: it posts requests, the primitive manager writes the motors.
 */
import { Primitive, type PrimitiveContext } from '../primitives/primitive.ts';
import type { Motor } from '../robot/motor.ts';
import { type MovePath, gotoPath } from '../robot/trajectory.ts';
import { type Move, moveDuration, sampleMove } from './move.ts';

export const playerName = (move: string): string => `_${move}_player`;

/** A motor further than this from the start frame travels there before the replay (pypot: 5 degrees). */
export const TRAVEL_THRESHOLD_DEG = 5;
/** Average speed of that travel (pypot's start_max_speed), degrees per second. */
export const TRAVEL_SPEED_DEG_S = 50;
/** Shortest travel, so a small correction is still smooth. */
export const MIN_TRAVEL_S = 0.3;

/**
 * Bounds of the replay speed, in both directions (negative plays backwards): 1/100 to 100 times the recorded
 * speed. Slower than that a move of seconds would last days; faster, the motors cannot follow the samples.
 */
export const MIN_REPLAY_SPEED = 0.01;
export const MAX_REPLAY_SPEED = 100;

/** Where each motor must be at a given moment of a replay. Pure. */
export class ReplayPlan {
  readonly move: Move;
  /** Signed, non-zero: negative plays backwards. */
  readonly speed: number;
  /** Seconds of replay (after any travel): the recorded span divided by |speed|. */
  readonly duration: number;
  readonly #first: number;
  readonly #last: number;

  constructor(move: Move, speed: number) {
    if (!Number.isFinite(speed) || speed === 0) throw new RangeError(`ReplayPlan: bad speed ${speed}`);
    this.move = move;
    this.speed = speed;
    this.#first = move.frames[0]?.t ?? 0;
    this.#last = moveDuration(move);
    this.duration = (this.#last - this.#first) / Math.abs(speed);
  }

  get backwards(): boolean {
    return this.speed < 0;
  }

  /** Move time (seconds on the recording's time axis) `elapsed` seconds into the replay. */
  moveTime(elapsed: number): number {
    const e = Math.min(Math.max(0, elapsed), this.duration) * Math.abs(this.speed);
    return this.backwards ? this.#last - e : this.#first + e;
  }

  /** Goal positions (degrees) by motor name, `elapsed` seconds into the replay. */
  positionsAt(elapsed: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const [motor, sample] of sampleMove(this.move, this.moveTime(elapsed))) out.set(motor, sample[0]);
    return out;
  }

  /** The start frame: the first one, or the last one when backwards. */
  startPositions(): Map<string, number> {
    return this.positionsAt(0);
  }

  /**
   * Seconds needed to travel from `present` to the start frame, or 0 when every motor is within the threshold.
   * All motors travel together (the ones already near too), so nothing jumps when the replay begins.
   */
  travelDuration(present: ReadonlyMap<string, number>): number {
    let far = 0;
    for (const [motor, target] of this.startPositions()) {
      const p = present.get(motor);
      if (p !== undefined) far = Math.max(far, Math.abs(target - p));
    }
    if (far <= TRAVEL_THRESHOLD_DEG) return 0;
    return Math.max(MIN_TRAVEL_S, far / TRAVEL_SPEED_DEG_S);
  }
}

/**
 * The replay as the guard predicts it: the travel to the start frame (a minimum-jerk path from where the motors are,
 * when one is further than the threshold), then the move's goals.
 */
export function replayPath(plan: ReplayPlan, motors: readonly Motor[], moveName: string): MovePath {
  const present = new Map(motors.map((m) => [m.name, m.state.presentPosition]));
  const travel = plan.travelDuration(present);
  const start = plan.startPositions();
  const byName = new Map(motors.map((m) => [m.name, m]));
  const toStart = gotoPath(
    new Map(motors.map((m) => [m, start.get(m.name) ?? m.state.presentPosition])),
    travel,
  );
  return {
    motors,
    duration: travel + plan.duration,
    what: `the replay of "${moveName}" at speed ${plan.speed} (${Number((travel + plan.duration).toFixed(2))} s)`,
    goalsAt(t, from) {
      if (t < travel) return toStart.goalsAt(t, from);
      const goals = new Map<Motor, number>();
      for (const [name, p] of plan.positionsAt(t - travel)) {
        const m = byName.get(name);
        if (m) goals.set(m, p);
      }
      return goals;
    },
  };
}

export type ReplayPhase = 'idle' | 'travel' | 'play' | 'done';

export interface ReplayTiming {
  readonly phase: ReplayPhase;
  /** Clock time (s) the replay proper began, after any travel to the start frame. */
  readonly playStart: number | undefined;
  /** Clock time (s) the last frame reached the motors, or the replay was stopped. */
  readonly end: number | undefined;
}

/**
 * `_<move>_player`. Its per-tick work runs on the robot's control tick: a request posted at one tick is combined by
 * the manager at the next, so each tick posts the goals for the next tick's time and the replay keeps the recorded
 * timing exactly. A pause freezes the replay (its time excludes pauses); a stop leaves the motors where they are.
 */
export class PlayerPrimitive extends Primitive {
  readonly moveName: string;
  #plan: ReplayPlan;
  #motors: readonly Motor[];
  #phase: ReplayPhase = 'idle';
  #playStart: number | undefined;
  #end: number | undefined;
  #off: (() => void) | undefined;

  constructor(context: PrimitiveContext, moveName: string, plan: ReplayPlan, motors: readonly Motor[]) {
    // The update loop only notices the end of the replay; the goals are posted on the control tick.
    super(context, playerName(moveName), { frequency: 50 });
    this.moveName = moveName;
    this.#plan = plan;
    this.#motors = motors;
  }

  get plan(): ReplayPlan {
    return this.#plan;
  }

  get timing(): ReplayTiming {
    return { phase: this.#phase, playStart: this.#playStart, end: this.#end };
  }

  /** What the next start replays. */
  load(plan: ReplayPlan, motors: readonly Motor[]): void {
    this.#plan = plan;
    this.#motors = motors;
  }

  protected override async setup(): Promise<void> {
    this.#phase = 'travel';
    this.#playStart = undefined;
    this.#end = undefined;
    const plan = this.#plan;
    const present = new Map<string, number>();
    for (const m of this.#motors) {
      this.request(m.name, 'compliant', false);
      present.set(m.name, m.state.presentPosition);
    }
    const start = Object.fromEntries(plan.startPositions());
    const travel = plan.travelDuration(present);
    if (travel > 0) await this.goto(start, travel);
    else for (const [m, p] of Object.entries(start)) this.request(m, 'goal_position', p);
    this.#phase = 'play';
    this.#playStart = this.robot.clock.now();
    const period = 1 / this.robot.rate;
    let lastPosted = false;
    this.#off = this.robot.onTick((now) => {
      // `stopping`: stopped, and a restart may already have flipped the state back to running.
      if (this.stopping || this.state !== 'running' || this.#phase !== 'play') return;
      if (lastPosted) {
        // The manager has just applied the last frame: the replay is over, with nothing left to apply.
        this.#phase = 'done';
        this.#end = now;
        return;
      }
      const next = this.elapsed + period;
      for (const [m, p] of plan.positionsAt(next)) this.request(m, 'goal_position', p);
      lastPosted = next >= plan.duration - 1e-9;
    });
  }

  protected override update(): void {
    if (this.#phase === 'done') this.finish();
  }

  protected override teardown(): void {
    this.#off?.();
    this.#off = undefined;
    if (this.#phase !== 'done') {
      this.#phase = 'done';
      this.#end = this.robot.clock.now();
    }
  }
}

/**
 * Replaying a move (FACTS.md 4.7, CONTRACT.md 4): the motors of the move are made stiff; if any is more than 5 degrees
 * from the start frame (the first one, the last one when backwards) they first travel there together along a
 * minimum-jerk path; then each control tick sets the goals from the move, interpolated linearly between samples.
 */
import { badRequest } from '../core/errors.ts';
import { describe } from '../core/values.ts';
import { type Move, moveDuration, sampleMove } from './move.ts';

/** A motor further than this from the start frame travels there before the replay (pypot: 5 degrees). */
export const TRAVEL_THRESHOLD_DEG = 5;
/** Average speed of that travel (pypot's start_max_speed), degrees per second. */
export const TRAVEL_SPEED_DEG_S = 50;
/** Shortest travel, so a small correction is still smooth. */
export const MIN_TRAVEL_S = 0.3;

const SPEED_TIP = 'send {"speed": 1.0}: 2 plays twice as fast, -1 plays backwards; no body plays at 1.0';

/** play.json `speed`: a number or numeric string, default 1.0; 0 or not finite is 400. */
export function parseReplaySpeed(value: unknown): number {
  if (value === undefined) return 1;
  let n = NaN;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && value.trim() !== '') n = Number(value);
  if (!Number.isFinite(n))
    throw badRequest('speed must be a finite number', SPEED_TIP, `got ${describe(value)}`);
  if (n === 0) throw badRequest('speed must not be 0', SPEED_TIP, 'got 0');
  return n;
}

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

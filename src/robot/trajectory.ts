import type { Motor } from './motor.ts';

/** Minimum-jerk profile s(tau) for tau in [0, 1]: zero speed and acceleration at both ends. */
export function minimumJerk(tau: number): number {
  const t = Math.min(1, Math.max(0, tau));
  return t * t * t * (10 - 15 * t + 6 * t * t);
}

/**
 * A move as the guard predicts it: the goals of `motors` (user degrees) at each moment `t` (s) from its start, given
 * where they were at the start (`from`); after `duration` it holds its last goals.
 */
export interface MovePath {
  readonly motors: readonly Motor[];
  readonly duration: number;
  /** What the move is, for a log line and a refusal's details ("m1 -> 30, m2 -> -10 over 2 s"). */
  readonly what: string;
  goalsAt(t: number, from: ReadonlyMap<Motor, number>): ReadonlyMap<Motor, number>;
}

/** A goto: minimum-jerk paths of `targets` (user degrees) over `duration` s, from where the motors are. */
export function gotoPath(targets: ReadonlyMap<Motor, number>, duration: number): MovePath {
  const round1 = (v: number) => Number(v.toFixed(1));
  return {
    motors: [...targets.keys()],
    duration,
    what: `${[...targets].map(([m, to]) => `${m.name} -> ${round1(to)}`).join(', ')} over ${duration} s`,
    goalsAt(t, from) {
      const s = minimumJerk(duration > 0 ? t / duration : 1);
      const goals = new Map<Motor, number>();
      for (const [m, to] of targets) {
        const f = from.get(m) ?? to;
        goals.set(m, f + (to - f) * s);
      }
      return goals;
    },
  };
}

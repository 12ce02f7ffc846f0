/**
 * The robot's gotos: minimum-jerk trajectories of motors' goal positions, one per motor (a newer command cancels
 * the one in progress), stepped by the control loop.
 */
import { conflict } from '../core/errors.ts';
import type { Motor } from './motor.ts';
import { minimumJerk } from './trajectory.ts';

/** How a goto ended: `cancelled` when a newer command (or a stop) took over before it reached its target. */
export interface GotoOutcome {
  readonly cancelled: boolean;
}

export interface GotoOptions {
  /** 'reject' (the default) refuses a compliant motor with a 409; 'keep-goal' moves its goal anyway (pypot). */
  readonly compliant?: 'reject' | 'keep-goal';
}

interface Motion {
  readonly from: number;
  readonly to: number;
  readonly start: number;
  readonly duration: number;
  /** Ends the motion; `cancelled` says it did not reach its target. */
  readonly finish: (cancelled: boolean) => void;
}

export class Motions {
  readonly #motions = new Map<Motor, Motion>();

  /**
   * Minimum-jerk moves of several motors to user-frame targets (clamped into the limits) over `duration` seconds
   * from `now`. Validation happens before anything moves. Resolves when every motion has ended or been cancelled.
   * A compliant motor is refused (409), unless `compliant` is 'keep-goal' (pypot's way): its goal follows the
   * trajectory, which it does not follow while compliant, and `done` still resolves after the duration.
   */
  goto(
    targets: ReadonlyMap<Motor, number>,
    duration: number,
    now: number,
    opts: GotoOptions = {},
  ): { targets: Map<Motor, number>; done: Promise<GotoOutcome> } {
    for (const m of targets.keys()) {
      if (m.commands.compliant && opts.compliant !== 'keep-goal')
        throw conflict(
          `motor "${m.name}" is compliant`,
          `make it stiff first: POST /motors/${m.name}/registers/compliant/value.json with false`,
          'a compliant motor cannot follow a goto',
        );
    }
    const clamped = new Map<Motor, number>();
    const done: Promise<boolean>[] = [];
    for (const [m, target] of targets) {
      const to = m.clampAngle(target);
      clamped.set(m, to);
      this.cancel(m);
      m.endGoalSpeed();
      let finish!: (cancelled: boolean) => void;
      const finished = new Promise<boolean>((resolve) => (finish = resolve));
      this.#motions.set(m, { from: m.state.presentPosition, to, start: now, duration, finish });
      done.push(finished);
    }
    return {
      targets: clamped,
      done: Promise.all(done).then((ends) => ({ cancelled: ends.some((cancelled) => cancelled) })),
    };
  }

  /** Ends the motion in progress on `motor`, if any (a newer command wins). */
  cancel(motor: Motor): void {
    const motion = this.#motions.get(motor);
    if (!motion) return;
    this.#motions.delete(motor);
    motion.finish(true);
  }

  /** Ends every motion as cancelled (the robot stops). */
  cancelAll(): void {
    for (const motion of this.#motions.values()) motion.finish(true);
    this.#motions.clear();
  }

  isMoving(motor: Motor): boolean {
    return this.#motions.has(motor);
  }

  /** Sets each moving motor's goal to its trajectory's point at `now`; a motion at its end finishes. */
  step(now: number): void {
    for (const [m, motion] of this.#motions) {
      const tau = (now - motion.start) / motion.duration;
      if (tau >= 1) {
        m.set('goalPosition', motion.to);
        this.#motions.delete(m);
        motion.finish(false);
      } else {
        m.set('goalPosition', motion.from + (motion.to - motion.from) * minimumJerk(Math.max(0, tau)));
      }
    }
  }
}

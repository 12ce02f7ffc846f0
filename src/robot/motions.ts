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

/** One motor's trajectory; whoever awaits its end is told through `waiters` (none for most REST gotos). */
class Motion {
  /** Set when the motion ends: whether it was cancelled before its target. */
  ended: boolean | undefined;
  #waiters: ((cancelled: boolean) => void)[] | undefined;
  constructor(
    readonly from: number,
    readonly to: number,
    readonly start: number,
    readonly duration: number,
  ) {}

  finish(cancelled: boolean): void {
    this.ended = cancelled;
    const waiters = this.#waiters;
    this.#waiters = undefined;
    if (waiters) for (const w of waiters) w(cancelled);
  }

  /** Resolves with `cancelled` when the motion ends (at once if it has). */
  end(): Promise<boolean> {
    if (this.ended !== undefined) return Promise.resolve(this.ended);
    return new Promise((resolve) => (this.#waiters ??= []).push(resolve));
  }
}

/**
 * A started goto: its clamped targets, and `done`, made on first read, so a goto nobody waits for (most REST
 * gotos) settles no promise when it ends or is cancelled.
 */
export class StartedGoto {
  #done: Promise<GotoOutcome> | undefined;
  constructor(
    readonly targets: Map<Motor, number>,
    readonly motions: readonly Motion[],
  ) {}

  get done(): Promise<GotoOutcome> {
    return (this.#done ??= Promise.all(this.motions.map((m) => m.end())).then((ends) => ({
      cancelled: ends.some((cancelled) => cancelled),
    })));
  }
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
  ): StartedGoto {
    for (const m of targets.keys()) {
      if (m.commands.compliant && opts.compliant !== 'keep-goal')
        throw conflict(
          `motor "${m.name}" is compliant`,
          `make it stiff first: POST /motors/${m.name}/registers/compliant/value.json with false`,
          'a compliant motor cannot follow a goto',
        );
    }
    const clamped = new Map<Motor, number>();
    const started: Motion[] = [];
    for (const [m, target] of targets) {
      const to = m.clampAngle(target);
      clamped.set(m, to);
      this.cancel(m);
      m.endGoalSpeed();
      const motion = new Motion(m.state.presentPosition, to, now, duration);
      this.#motions.set(m, motion);
      started.push(motion);
    }
    return new StartedGoto(clamped, started);
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

/**
 * Whether a goto arrived: each motor's present position against its target, within a tolerance per motor (the
 * servo's dead band, src/sim/servo-band.ts). What a waited goto's answer says (docs/api.md "Honest answers").
 */
import type { Motor } from './motor.ts';
import type { Robot } from './robot.ts';

export interface Arrival {
  /** Every motor within its tolerance of its target. */
  readonly reached: boolean;
  /** Per motor: present position minus target, degrees (user frame), 2 decimals. */
  readonly error: Record<string, number>;
  /** Per motor: the tolerance, degrees, 2 decimals. */
  readonly tolerance: Record<string, number>;
}

const round2 = (v: number) => Math.round(v * 100) / 100 + 0;

/** The motors' arrival now; `reached` is judged on the rounded figures, so the answer agrees with itself. */
export function arrival(targets: ReadonlyMap<Motor, number>, toleranceDeg: (m: Motor) => number): Arrival {
  const error: Record<string, number> = {};
  const tolerance: Record<string, number> = {};
  let reached = true;
  for (const [m, target] of targets) {
    const e = round2(m.state.presentPosition - target);
    const tol = round2(toleranceDeg(m));
    error[m.name] = e;
    tolerance[m.name] = tol;
    if (!(Math.abs(e) <= tol)) reached = false;
  }
  return { reached, error, tolerance };
}

/** Degrees per second under which a joint counts as at rest: a few steps of the speed reading (0.67 deg/s each). */
export const STILL_DEG_S = 2;
/** Seconds a waited goto may wait past its trajectory's end for its motors to come to rest (docs/api.md). */
export const SETTLE_MAX_S = 0.5;

/**
 * Resolves once every motor of `motors` is at rest, or `maxSeconds` after the call: a servo that lagged behind its
 * trajectory is still catching up when it ends, and its position then says little (docs/decisions/0057-honest-goto-answers.md).
 */
export function untilStill(robot: Robot, motors: readonly Motor[], maxSeconds = SETTLE_MAX_S): Promise<void> {
  const still = () => motors.every((m) => Math.abs(m.state.presentSpeed) <= STILL_DEG_S);
  if (still()) return Promise.resolve();
  const deadline = robot.clock.now() + maxSeconds;
  return new Promise((resolve) => {
    const off = robot.onTick((now) => {
      if (now < deadline - 1e-9 && !still()) return;
      off();
      resolve();
    });
  });
}

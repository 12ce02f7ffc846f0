/**
 * Whether an IK target is in reach, judged on its position: the orientation (rot, rpy) is met as closely as the
 * solver can, as the REST API warns (docs/reference/rest-api.md 4.6). In reach means the solver, asked for the
 * position alone, brings the end within REACH_TOLERANCE_M of it, its own convergence tolerance: it does so for
 * every one of 1000 random reachable targets per chain (test/ik/reach.test.ts), so a miss means out of reach.
 */
import { unreachable, type RobotError } from '../core/errors.ts';
import type { Vec3 } from '../urdf/types.ts';
import type { KinematicChain } from './chain.ts';
import { solve, type IkSolution, type IkTarget } from './solver.ts';

/** Metres: how far from its target the solver may leave the end of a target in reach. */
export const REACH_TOLERANCE_M = 1e-3;

export interface OutOfReach {
  /** Metres from the target to the nearest point the end can reach. */
  readonly distance: number;
  /** That point, metres, base frame. */
  readonly nearest: Vec3;
}

/**
 * Undefined when the target's position is in reach, else how far the nearest reachable point is. `solution` is the
 * solver's answer for the whole target from `seedUserDegrees`; a second, position-only solve runs only when it missed
 * with an orientation asked.
 */
export function outOfReach(
  chain: KinematicChain,
  target: IkTarget,
  solution: IkSolution,
  seedUserDegrees: readonly number[],
): OutOfReach | undefined {
  if (solution.positionError <= REACH_TOLERANCE_M) return undefined;
  const positional =
    target.rot === undefined && target.rotation === undefined
      ? solution
      : solve(chain, { position: target.position }, seedUserDegrees);
  if (positional.positionError <= REACH_TOLERANCE_M) return undefined;
  return { distance: positional.positionError, nearest: positional.position };
}

const fmt4 = (v: number) => String(Math.round(v * 1e4) / 1e4 + 0);

/** The 422 of a target out of reach: its distance in metres in the message, the nearest point in the tip. */
export function unreachableError(
  chain: KinematicChain,
  position: readonly number[],
  out: OutOfReach,
): RobotError {
  return unreachable(
    `target ${position.map(fmt4).join(',')} is out of reach of chain "${chain.name}": ` +
      `${fmt4(out.distance)} m from the nearest reachable point`,
    `send a target within reach; the nearest reachable point is "${out.nearest.map(fmt4).join(',')}"`,
    `the solver's closest pose leaves the end ${fmt4(out.distance)} m away; in reach is within ${REACH_TOLERANCE_M} m`,
  );
}

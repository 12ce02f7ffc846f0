/**
 * IK targets: for each one, the solver must find a pose within the tolerance (reachability) and the physics must
 * actually get the end point there (accuracy), through the same /ik routes a lesson uses. On the twin the moves
 * are also watched for collisions.
 */
import { type CheckResult, type Finding, checkResult, fmt } from '../result.ts';
import { type Target, ok } from '../target.ts';

/** Default settling time after each IK move (see IkOptions.settleS). */
export const IK_SETTLE_S = 10;

export interface IkTarget {
  /** Metres, in the URDF base frame. */
  readonly xyz: readonly [number, number, number];
  /** Seconds the move takes (default 1.5). */
  readonly duration?: number;
  readonly label?: string;
}

export interface IkOptions {
  /** Metres (default 0.003). */
  readonly toleranceM?: number;
  /**
   * Seconds to let the physics settle after each move (default 10): the Ergo Jr's XL-320s sag under the arm until the
   * I term grinds the error in, by stick and slip (measured on the twin: 10 mm at the end of a 1.5 s goto, 3 mm after
   * 2 s; from the rest posture, 7 mm after 5 s, 0.2 mm after 10 s). A real XL-320 arm settles the same way.
   */
  readonly settleS?: number;
}

const xyzOf = (body: Record<string, unknown>): number[] => String(body.xyz).split(',').map(Number);

/** The distance (metres) in the route's refusal of a target out of reach. */
const FAR = /: ([\d.]+) m from the nearest reachable point$/;

function outOfReach(label: string, chain: string, solverErr: number, tol: number, time: number): Finding {
  return {
    message: `target ${label} (${chain}) is out of reach: the best pose the solver finds ends ${fmt(solverErr * 1000, 1)} mm away (tolerance ${fmt(tol * 1000, 1)} mm, over by ${fmt((solverErr - tol) * 1000, 1)} mm)`,
    where: `${chain} ${label}`,
    time,
    value: solverErr * 1000,
    limit: tol * 1000,
    margin: (solverErr - tol) * 1000,
    unit: 'mm',
  };
}

export async function ikChecks(
  target: Target,
  chain: string,
  targets: readonly IkTarget[],
  opts: IkOptions = {},
): Promise<CheckResult[]> {
  const tol = opts.toleranceM ?? 0.003;
  const reach: Finding[] = [];
  const accuracy: Finding[] = [];
  const measured: Record<string, number> = {};
  let worstSolver = 0;
  let worstPhysics = 0;
  const t0 = target.now();
  for (const [i, t] of targets.entries()) {
    const label = t.label ?? `[${t.xyz.map((v) => fmt(v, 3)).join(', ')}]`;
    const answer = await target.postWaiting(`/ik/${chain}/goto.json`, {
      xyz: t.xyz,
      duration: t.duration ?? 1.5,
      wait: true,
    });
    const time = target.now() - t0;
    // Out of reach, the route refuses the target (422) and says how far it is (docs/api.md "Inverse kinematics").
    const far = answer.status === 422 ? FAR.exec(String((answer.body as { error?: unknown }).error)) : null;
    if (far) {
      const solverErr = Number(far[1]);
      measured[`target${i}_solver_mm`] = solverErr * 1000;
      worstSolver = Math.max(worstSolver, solverErr);
      reach.push(outOfReach(label, chain, solverErr, tol, time));
      continue;
    }
    if (answer.status !== 200) {
      reach.push({
        message: `target ${label}: the solver refused it (HTTP ${answer.status} ${JSON.stringify(answer.body)})`,
        where: label,
        time,
      });
      continue;
    }
    const solved = xyzOf(answer.body as Record<string, unknown>);
    await target.wait(opts.settleS ?? IK_SETTLE_S);
    const now = xyzOf(await ok(target.get(`/ik/${chain}/value.json`), `GET /ik/${chain}/value.json`));
    const solverErr = Math.hypot(...solved.map((v, k) => v - t.xyz[k]!));
    const physicsErr = Math.hypot(...now.map((v, k) => v - t.xyz[k]!));
    measured[`target${i}_solver_mm`] = solverErr * 1000;
    measured[`target${i}_physics_mm`] = physicsErr * 1000;
    worstSolver = Math.max(worstSolver, solverErr);
    worstPhysics = Math.max(worstPhysics, physicsErr);
    if (solverErr > tol) {
      reach.push(outOfReach(label, chain, solverErr, tol, time));
    } else if (physicsErr > tol) {
      accuracy.push({
        message: `target ${label} (${chain}): the solver reaches it but the twin's end point settles ${fmt(physicsErr * 1000, 1)} mm away (tolerance ${fmt(tol * 1000, 1)} mm, over by ${fmt((physicsErr - tol) * 1000, 1)} mm)`,
        where: `${chain} ${label}`,
        time,
        value: physicsErr * 1000,
        limit: tol * 1000,
        margin: (physicsErr - tol) * 1000,
        unit: 'mm',
      });
    }
  }
  return [
    checkResult(
      `${chain}: reachability`,
      `${targets.length} target(s) through the solver; worst ${fmt(worstSolver * 1000, 2)} mm (tolerance ${fmt(tol * 1000, 1)} mm)`,
      reach,
      Object.fromEntries(Object.entries(measured).filter(([k]) => k.endsWith('solver_mm'))),
    ),
    checkResult(
      `${chain}: accuracy in the physics`,
      `end point after the move and ${fmt(opts.settleS ?? IK_SETTLE_S, 1)} s settling; worst ${fmt(worstPhysics * 1000, 2)} mm (tolerance ${fmt(tol * 1000, 1)} mm)`,
      accuracy,
      Object.fromEntries(Object.entries(measured).filter(([k]) => k.endsWith('physics_mm'))),
    ),
  ];
}

/**
 * Drop, hold and no-load step of one servo on a pendulum sized like a robot's own link, twin against the one-joint
 * reference (fidelity.ts): a limp link falling from horizontal, a link held at a low torque limit, and a light arm's
 * step. Printed by `npm run bench -- fidelity`, checked by test/lab/drop-hold.test.ts.
 */
import { type ModelName, type Pendulum, type Run, runReference, runTwin } from './fidelity.ts';

/** Links the servos carry on the robots, as a point mass (kg) at a length (m) from the axis. */
export const ROBOT_LINKS: Readonly<Record<ModelName, { readonly name: string } & Pendulum>> = {
  'XL-320': { name: 'Ergo Jr forearm', mass: 0.06, length: 0.06 },
  'AX-12': { name: 'AX-12 arm link', mass: 0.1, length: 0.08 },
  'MX-28': { name: 'Torso arm', mass: 0.22, length: 0.1 },
  'MX-64': { name: 'Humanoid leg', mass: 0.8, length: 0.2 },
};
export const HOLD_LIMITS: readonly number[] = [3, 10, 30]; // % torque limit
export const HOLD_ANGLES: readonly number[] = [20, 45, 90]; // degrees off hanging

type Runner = (model: ModelName, load: Pendulum, p: Parameters<typeof runReference>[2]) => Promise<Run> | Run;
export const TWIN: Runner = (model, load, p) => runTwin(model, load, p);
export const REFERENCE: Runner = (model, load, p) => runReference(model, load, p);

export interface DropFigures {
  /** Degrees off hanging where the limp link ends, seconds to fall from 90 to 45, and its peak speed (deg/s). */
  readonly final: number;
  readonly fallTime: number;
  readonly peakSpeed: number;
}

/** The link held horizontal, then made limp: where it ends, how fast it falls. */
export async function drop(model: ModelName, run: Runner): Promise<DropFigures> {
  const r = await run(model, ROBOT_LINKS[model], {
    duration: 4,
    start: 90,
    at: () => ({ goal: 90, torqueOn: false, external: 0 }),
  });
  const fell = r.q.findIndex((q) => q <= 45);
  return {
    final: tailMean(r.q),
    fallTime: fell < 0 ? Infinity : r.t[fell]!,
    peakSpeed: Math.max(...r.dq.map(Math.abs)),
  };
}

/** Degrees off hanging where the link ends, held at `angle` under a torque limit of `limit` %. */
export async function hold(model: ModelName, run: Runner, limit: number, angle: number): Promise<number> {
  const r = await run(model, ROBOT_LINKS[model], {
    duration: 3,
    start: angle,
    torqueLimit: Math.round((limit / 100) * 1023),
    at: () => ({ goal: angle, torqueOn: true, external: 0 }),
  });
  return tailMean(r.q);
}

/** Peak speed (deg/s) of a light arm on a 90-degree step: the no-load speed, net of the gearbox. */
export async function noLoadStep(model: ModelName, run: Runner): Promise<number> {
  const r = await run(
    model,
    { mass: 0.001, length: 0.01 },
    { duration: 1, start: 0, at: (t) => ({ goal: t < 0.1 ? 0 : 90, torqueOn: true, external: 0 }) },
  );
  return Math.max(...r.dq.map(Math.abs));
}

/** Within 10 % of the reference, or `floor` of it (degrees: a friction band makes small ends path-dependent). */
export function agrees(twin: number, ref: number, floor = 0): boolean {
  if (!Number.isFinite(ref)) return twin === ref;
  return Math.abs(twin - ref) <= Math.max(0.1 * Math.abs(ref), floor);
}

function tailMean(xs: readonly number[]): number {
  const tail = xs.slice(-50);
  return tail.reduce((a, b) => a + b, 0) / tail.length;
}

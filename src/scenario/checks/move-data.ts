/**
 * Checks of a move's data against the robot it is meant for, before anything moves: joint limits, speed and
 * acceleration against the servo models (src/dynamixel/registers.ts), duration. Pure: a move and motor descriptions in,
 * check results out, so they run the same for the twin, a remote robot and the deploy gate.
 */
import type { ModelSpec } from '../../dynamixel/registers.ts';
import type { Move } from '../../records/move.ts';
import { type CheckResult, type Finding, checkResult, fmt } from '../result.ts';

/** What the checks need of a motor (a Motor of src/robot/motor.ts fits). */
export interface MotorLimits {
  readonly name: string;
  /** User-frame degrees. */
  readonly minAngle: number;
  readonly maxAngle: number;
  readonly spec: ModelSpec;
}

export interface MoveDataOptions {
  /** Degrees a move must stay inside each joint limit (default 0). */
  readonly limitMarginDeg?: number;
  /** Share of the servo's no-load speed a move may ask for (default 0.9: under load a servo is slower). */
  readonly speedFraction?: number;
  /** Share of stall torque / rotor inertia a move may ask for as acceleration (default 0.5). */
  readonly accelerationFraction?: number;
  /** Longest acceptable move, seconds (default 600). */
  readonly maxDurationS?: number;
}

const DEG_PER_RAD = 180 / Math.PI;

/** The highest acceleration a servo can give even its own rotor, deg/s^2: stall torque over reflected inertia. */
export function servoMaxAcceleration(spec: ModelSpec): number {
  return (spec.stallTorque / spec.rotorInertia) * DEG_PER_RAD;
}

export function moveDataChecks(
  move: Move,
  motors: readonly MotorLimits[],
  opts: MoveDataOptions = {},
): CheckResult[] {
  return [
    jointLimitsCheck(move, motors, opts.limitMarginDeg ?? 0),
    speedCheck(move, motors, opts.speedFraction ?? 0.9),
    accelerationCheck(move, motors, opts.accelerationFraction ?? 0.5),
    durationCheck(move, opts.maxDurationS ?? 600),
  ];
}

/** Motors of the move the robot has, and a finding for each it does not. */
function known(move: Move, motors: readonly MotorLimits[], findings: Finding[]): MotorLimits[] {
  const byName = new Map(motors.map((m) => [m.name, m]));
  const out: MotorLimits[] = [];
  for (const name of move.motors) {
    const m = byName.get(name);
    if (m) out.push(m);
    else findings.push({ message: `${name}: this robot has no such motor`, where: name });
  }
  return out;
}

export function jointLimitsCheck(move: Move, motors: readonly MotorLimits[], marginDeg = 0): CheckResult {
  const findings: Finding[] = [];
  let closest = Infinity;
  let closestWhere = '';
  for (const m of known(move, motors, findings)) {
    const lo = m.minAngle + marginDeg;
    const hi = m.maxAngle - marginDeg;
    let first: number | undefined;
    let worst = 0;
    let worstValue = 0;
    let worstLimit = 0;
    for (const f of move.frames) {
      const p = f.positions.get(m.name)![0];
      const over = Math.max(lo - p, p - hi);
      if (-over < closest) {
        closest = -over;
        closestWhere = m.name;
      }
      if (over <= 0) continue;
      first ??= f.t;
      if (over > worst) {
        worst = over;
        worstValue = p;
        worstLimit = p < lo ? lo : hi;
      }
    }
    if (first === undefined) continue;
    const side = worstValue < lo ? 'lower' : 'upper';
    findings.push({
      message:
        `${m.name} leaves its range [${fmt(m.minAngle)}, ${fmt(m.maxAngle)}] deg at t=${fmt(first)} s and reaches ` +
        `${fmt(worstValue)} deg, ${fmt(worst)} deg beyond the ${side} limit${marginDeg ? ` (with ${fmt(marginDeg)} deg margin)` : ''}`,
      time: first,
      where: m.name,
      value: worstValue,
      limit: worstLimit,
      margin: worst,
      unit: 'deg',
    });
  }
  const summary = Number.isFinite(closest)
    ? `every frame of ${move.motors.length} motor(s) against the joint limits; closest: ${closestWhere}, ${fmt(closest)} deg ${closest >= 0 ? 'inside' : 'outside'}`
    : 'no frames';
  return checkResult(
    'joint limits',
    summary,
    findings,
    Number.isFinite(closest) ? { closest_deg: closest } : {},
  );
}

/** Per motor, the derivative of position between consecutive frames: [time (midpoint), deg/s]. */
function velocities(move: Move, motor: string): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 1; i < move.frames.length; i++) {
    const a = move.frames[i - 1]!;
    const b = move.frames[i]!;
    out.push([(a.t + b.t) / 2, (b.positions.get(motor)![0] - a.positions.get(motor)![0]) / (b.t - a.t)]);
  }
  return out;
}

export function speedCheck(move: Move, motors: readonly MotorLimits[], fraction = 0.9): CheckResult {
  const findings: Finding[] = [];
  const measured: Record<string, number> = {};
  let worstShare = 0;
  let worstWhere = '';
  for (const m of known(move, motors, findings)) {
    const limit = m.spec.noLoadSpeed * fraction;
    let peak: [number, number] = [0, 0];
    for (const v of velocities(move, m.name)) if (Math.abs(v[1]) > Math.abs(peak[1])) peak = v;
    const speed = Math.abs(peak[1]);
    measured[`${m.name}_peak_deg_s`] = speed;
    if (speed / limit > worstShare) {
      worstShare = speed / limit;
      worstWhere = m.name;
    }
    if (speed <= limit) continue;
    findings.push({
      message:
        `${m.name} at t=${fmt(peak[0])} s moves at ${fmt(speed, 0)} deg/s, over the ${fmt(limit, 0)} deg/s allowed ` +
        `(${fmt(fraction * 100, 0)} % of the ${m.spec.name}'s no-load ${m.spec.noLoadSpeed} deg/s) by ${fmt(speed - limit, 0)} deg/s`,
      time: peak[0],
      where: m.name,
      value: speed,
      limit,
      margin: speed - limit,
      unit: 'deg/s',
    });
  }
  return checkResult(
    'speed',
    `peak speed per motor against ${fmt(fraction * 100, 0)} % of the servo's no-load speed; worst: ${worstWhere || 'none'} at ${fmt(worstShare * 100, 0)} % of its limit`,
    findings,
    measured,
  );
}

export function accelerationCheck(move: Move, motors: readonly MotorLimits[], fraction = 0.5): CheckResult {
  const findings: Finding[] = [];
  const measured: Record<string, number> = {};
  let worstShare = 0;
  let worstWhere = '';
  for (const m of known(move, motors, findings)) {
    const limit = servoMaxAcceleration(m.spec) * fraction;
    const v = velocities(move, m.name);
    let peak: [number, number] = [0, 0];
    for (let i = 1; i < v.length; i++) {
      const a = (v[i]![1] - v[i - 1]![1]) / (v[i]![0] - v[i - 1]![0]);
      if (Math.abs(a) > Math.abs(peak[1])) peak = [move.frames[i]!.t, a];
    }
    const acc = Math.abs(peak[1]);
    measured[`${m.name}_peak_deg_s2`] = acc;
    if (acc / limit > worstShare) {
      worstShare = acc / limit;
      worstWhere = m.name;
    }
    if (acc <= limit) continue;
    findings.push({
      message:
        `${m.name} at t=${fmt(peak[0])} s accelerates at ${fmt(acc, 0)} deg/s^2, over the ${fmt(limit, 0)} deg/s^2 the ` +
        `${m.spec.name} can give (${fmt(fraction * 100, 0)} % of stall torque / rotor inertia) by ${fmt(acc - limit, 0)} deg/s^2`,
      time: peak[0],
      where: m.name,
      value: acc,
      limit,
      margin: acc - limit,
      unit: 'deg/s^2',
    });
  }
  return checkResult(
    'acceleration',
    `peak acceleration per motor against the servo model; worst: ${worstWhere || 'none'} at ${fmt(worstShare * 100, 0)} % of its limit`,
    findings,
    measured,
  );
}

export function durationCheck(move: Move, maxSeconds = 600): CheckResult {
  const findings: Finding[] = [];
  const first = move.frames[0]?.t ?? 0;
  const last = move.frames[move.frames.length - 1]?.t ?? 0;
  const span = last - first;
  if (move.frames.length < 2)
    findings.push({
      message: `the move has ${move.frames.length} frame(s): nothing to play`,
      value: move.frames.length,
    });
  if (span > maxSeconds)
    findings.push({
      message: `the move lasts ${fmt(span)} s, over the ${fmt(maxSeconds)} s allowed by ${fmt(span - maxSeconds)} s`,
      value: span,
      limit: maxSeconds,
      margin: span - maxSeconds,
      unit: 's',
    });
  return checkResult(
    'duration',
    `${move.frames.length} frames over ${fmt(span)} s (at most ${fmt(maxSeconds)} s)`,
    findings,
    { duration_s: span, frames: move.frames.length },
  );
}

/**
 * How the requests of the running primitives combine into a motor's commands at each control tick (docs/reference/pypot.md 4.6):
 * numbers add up or average, booleans and colours go to the most recent writer.
 */
import { gainsToRawPid, maxSpeedDegS, rawPidToGains, type LedColour } from '../dynamixel/registers.ts';
import type { Motor } from '../robot/motor.ts';
import type { Robot } from '../robot/robot.ts';
import type { PrimitiveRegister } from './coercion.ts';
import type { ResolvedRequest } from './primitive.ts';

/** How the requests of several primitives on one numeric register combine. */
export type CombineMode = 'sum' | 'mean';

/** Writes to `m`'s commands what its requests, per register, combine to; a REST goto in progress gives way. */
export function applyRequests(
  robot: Robot,
  m: Motor,
  regs: ReadonlyMap<PrimitiveRegister, readonly ResolvedRequest[]>,
  mode: CombineMode,
): void {
  const combine = (requests: readonly ResolvedRequest[]) => combineNumbers(requests, mode);
  const compliant = regs.get('compliant');
  if (compliant) {
    // Booleans do not add up: the most recent request wins.
    const c = lastWriter(compliant).value as boolean;
    if (c !== m.commands.compliant) {
      // Turning stiff holds the motor where it is unless a goal is requested (as the REST write does).
      if (!c && !regs.has('goal_position')) m.set('goalPosition', m.state.presentPosition);
      robot.cancelMotion(m);
      m.set('compliant', c);
    }
  }
  const goal = regs.get('goal_position');
  if (goal) {
    const g = m.clampAngle(combine(goal));
    // A primitive now drives this goal: a REST goto in progress gives way.
    if (robot.isMoving(m)) robot.cancelMotion(m);
    if (Math.abs(m.commands.goalPosition - g) > 1e-6) m.set('goalPosition', g);
  }
  const speed = regs.get('moving_speed');
  if (speed) {
    const v = Math.min(maxSpeedDegS(m.spec), Math.abs(combine(speed)));
    if (m.commands.movingSpeed !== v) m.set('movingSpeed', v);
  }
  const torque = regs.get('torque_limit');
  if (torque) {
    const v = Math.min(100, Math.max(0, combine(torque)));
    if (m.commands.torqueLimit !== v) m.set('torqueLimit', v);
  }
  const led = regs.get('led');
  if (led) {
    // A colour wins over 'off' (docs/reference/pypot.md 4.6); among colours, the most recent request.
    const lit = led.filter((r) => r.value !== 'off');
    const v = (lit.length ? lastWriter(lit) : lastWriter(led)).value as LedColour;
    if (m.commands.led !== v) m.set('led', v);
  }
  const pid = regs.get('pid');
  if (pid) {
    const gains = [0, 1, 2].map((i) =>
      Math.max(0, combine(pid.map((r) => ({ ...r, value: (r.value as readonly number[])[i]! })))),
    );
    const held = rawPidToGains(gainsToRawPid(gains));
    if (held.some((g, i) => g !== m.commands.pid[i])) m.set('pid', held);
  }
}

function combineNumbers(requests: readonly ResolvedRequest[], mode: CombineMode): number {
  let sum = 0;
  for (const r of requests) sum += r.value as number;
  return mode === 'sum' ? sum : sum / requests.length;
}

function lastWriter(requests: readonly ResolvedRequest[]): ResolvedRequest {
  let last = requests[0]!;
  for (const r of requests) if (r.seq > last.seq) last = r;
  return last;
}

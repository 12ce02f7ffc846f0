/**
 * Faults of the physical world put on the twin's joints (the bus emulator's block, weak and push): a rigid stop, a
 * servo whose torque is scaled, a constant external torque. Read by the SimBackend every physics step.
 */
import type { DriveCommand } from './servo.ts';

export interface PhysicalFaults {
  /** A stop at this raw angle (degrees) per motor id, on the side the joint was on when the stop appeared. */
  readonly block: ReadonlyMap<number, number>;
  /** The servo's torque scaled by this factor (0..1: 0.4 is a servo at 40 %) per motor id. */
  readonly weak: ReadonlyMap<number, number>;
  /** A constant external torque (N.m, raw frame) about the joint per motor id. */
  readonly push: ReadonlyMap<number, number>;
}

export const noPhysicalFaults = (): PhysicalFaults => ({
  block: new Map(),
  weak: new Map(),
  push: new Map(),
});

/** A stop of `block` (rad) the joint may not cross; `side` +1: the joint stays above it, -1: below. */
export interface Stop {
  readonly at: number;
  readonly side: 1 | -1;
}

/**
 * The stop's torque (N.m) on a joint at `q` (rad) moving at `qdot`: a spring-damper pushing it back out once past
 * the stop, nothing otherwise. Explicit torques on light links are stable while stiffness * dt^2 / inertia stays well
 * under 1 (here 0.3, damping about critical): an XL-320 joint (armature 1.2e-3 kg.m^2) then gives 87 N.m/rad, so a
 * stalled servo presses 0.26 degree into it: rigid at the scale of the servo's own dead band.
 */
export function stopTorque(stop: Stop, q: number, qdot: number, inertia: number, dt: number): number {
  const depth = stop.side * (stop.at - q);
  if (depth <= 0) return 0;
  const k = (0.3 * inertia) / (dt * dt);
  const c = (1.1 * inertia) / dt;
  const t = stop.side * k * depth - c * qdot;
  return stop.side > 0 ? Math.max(0, t) : Math.min(0, t);
}

/** The servo's drive with its torque scaled by `factor` (a weak servo): its spring, damper and torque. */
export function weakened(cmd: DriveCommand, factor: number): DriveCommand {
  if (factor === 1 || cmd.limp) return cmd;
  return {
    ...cmd,
    stiffness: cmd.stiffness * factor,
    damping: cmd.damping * factor,
    motorTorque: cmd.motorTorque * factor,
  };
}

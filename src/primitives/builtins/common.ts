/** Helpers shared by the built-in behaviours: motor groups by name and pypot's small robot-wide commands. */
import { Primitive } from '../primitive.ts';

export const HEAD = ['head_z', 'head_y'] as const;
export const L_ARM = ['l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y'] as const;
export const R_ARM = ['r_shoulder_y', 'r_shoulder_x', 'r_arm_z', 'r_elbow_y'] as const;
export const ARMS = [...L_ARM, ...R_ARM] as const;
export const TORSO_TORSO = ['abs_z', 'bust_y', 'bust_x'] as const;
export const HUMANOID_TORSO = ['abs_y', 'abs_x', 'abs_z', 'bust_y', 'bust_x'] as const;
export const L_LEG = ['l_hip_x', 'l_hip_z', 'l_hip_y', 'l_knee_y', 'l_ankle_y'] as const;
export const R_LEG = ['r_hip_x', 'r_hip_z', 'r_hip_y', 'r_knee_y', 'r_ankle_y'] as const;
export const LEGS = [...L_LEG, ...R_LEG] as const;
export const ERGO_BASE = ['m1', 'm2', 'm3'] as const;
export const ERGO_TIP = ['m4', 'm5', 'm6'] as const;

/** A built-in behaviour: a Primitive with the robot-wide commands pypot's creatures use. */
export abstract class Behaviour extends Primitive {
  /** Every motor name, in the robot's order. */
  protected get allMotors(): string[] {
    return this.robot.motors.map((m) => m.name);
  }

  protected stiff(motors: readonly string[]): void {
    this.requestAll(motors, 'compliant', false);
  }

  protected limp(motors: readonly string[]): void {
    this.requestAll(motors, 'compliant', true);
  }

  /** pypot's robot.power_up(): stiff, moving_speed 0 (as fast as the servo goes), torque_limit 100. */
  protected powerUp(motors: readonly string[]): void {
    this.stiff(motors);
    this.requestAll(motors, 'moving_speed', 0);
    this.requestAll(motors, 'torque_limit', 100);
  }

  /** All listed motors to one position. */
  protected gotoAll(motors: readonly string[], position: number, duration: number): Promise<void> {
    return this.goto(Object.fromEntries(motors.map((m) => [m, position])), duration);
  }
}

/** pypot's Sin(amplitude, frequency, offset) at time t: A sin(2 pi f t) + o. */
export function sin(amp: number, freq: number, t: number, offset = 0): number {
  return amp * Math.sin(2 * Math.PI * freq * t) + offset;
}

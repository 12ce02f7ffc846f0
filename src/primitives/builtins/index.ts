/** Which built-in primitives a robot gets, in pypot's attach order (docs/reference/robots.md 1.2, 2.2, 3.2). */
import type { RobotConfig } from '../../config/robot-config.ts';
import type { Primitive, PrimitiveContext } from '../primitive.ts';
import { ARMS, HUMANOID_TORSO, LEGS, TORSO_TORSO } from './common.ts';
import { ergoJrPrimitives } from './ergo-jr.ts';
import {
  ArmsCopyMotion,
  ArmsTurnCompliant,
  DanceBeatMotion,
  HeadIdleMotion,
  InitPosition,
  LimitTorque,
  SitPosition,
  StandPosition,
  TemperatureMonitoring,
  UpperBodyIdleMotion,
} from './poppy.ts';

export type RobotFamily = 'ergo-jr' | 'torso' | 'humanoid' | 'other';

const ERGO = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
const UPPER_BODY = ['abs_z', 'bust_y', 'bust_x', 'head_z', 'head_y', ...ARMS];

/** The robot's family: from the config name, else from its motor names (a renamed copy of a config). */
export function robotFamily(config: Pick<RobotConfig, 'name' | 'motors'>): RobotFamily {
  if (config.name === 'ergo-jr' || config.name === 'torso' || config.name === 'humanoid') return config.name;
  const names = new Set(config.motors.map((m) => m.name));
  const has = (list: readonly string[]) => list.every((m) => names.has(m));
  if (has(ERGO)) return 'ergo-jr';
  if (has(UPPER_BODY) && has(LEGS) && has(HUMANOID_TORSO)) return 'humanoid';
  if (has(UPPER_BODY)) return 'torso';
  return 'other';
}

export function builtinPrimitives(ctx: PrimitiveContext): Primitive[] {
  switch (robotFamily(ctx.robot.config)) {
    case 'ergo-jr':
      return ergoJrPrimitives(ctx);
    case 'torso':
      return [
        new LimitTorque(ctx, 'limit_torque', { torqueMax: 80 }),
        new TemperatureMonitoring(ctx, 'temperature_monitoring', [...TORSO_TORSO, ...ARMS]),
        new DanceBeatMotion(ctx, 'dance_beat_motion'),
        new InitPosition(ctx, 'init_position'),
        new UpperBodyIdleMotion(ctx, 'upper_body_idle_motion', TORSO_TORSO),
        new HeadIdleMotion(ctx, 'head_idle_motion'),
        new ArmsTurnCompliant(ctx, 'arms_turn_compliant'),
        new ArmsCopyMotion(ctx, 'arms_copy_motion'),
      ];
    case 'humanoid':
      return [
        new TemperatureMonitoring(ctx, 'temperature_monitoring', [...LEGS, ...HUMANOID_TORSO, ...ARMS]),
        new StandPosition(ctx, 'stand_position'),
        new SitPosition(ctx, 'sit_position'),
        new LimitTorque(ctx, 'limit_torque', { torqueMax: 95 }),
        new DanceBeatMotion(ctx, 'dance_beat_motion', { humanoid: true }),
        new UpperBodyIdleMotion(ctx, 'upper_body_idle_motion', HUMANOID_TORSO),
        new HeadIdleMotion(ctx, 'head_idle_motion'),
        new ArmsTurnCompliant(ctx, 'arms_turn_compliant'),
        new ArmsCopyMotion(ctx, 'arms_copy_motion'),
      ];
    case 'other':
      return [];
  }
}

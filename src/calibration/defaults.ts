/** A calibration that says what the twin assumes: every servo at its model's defaults, nothing identified. */
import type { Calibration, MotorCalibration } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { servoModel } from '../sim/servo-models.ts';

/** One motor at its model's defaults (sigma null everywhere: nothing identified). */
export function defaultMotorCalibration(motor: RobotConfig['motors'][number]): MotorCalibration {
  const m = servoModel(modelSpec(motor.model));
  const d = (value: number) => ({ value, sigma: null });
  return {
    id: motor.id,
    model: motor.model,
    offset: d(0),
    friction: { kc: d(m.friction.kc), kv: d(m.friction.kv), kcs: d(m.friction.kcs) },
    armature: d(m.armature),
    gain: d(m.errorGain),
    residualRmsDeg: null,
    notIdentifiable: [],
  };
}

export function defaultCalibration(
  config: RobotConfig,
  port = config.bus.port,
  date = new Date(0).toISOString(),
): Calibration {
  return {
    schema: 1,
    robot: config.name,
    bus: { port, baud: config.bus.baudrate, protocol: config.bus.protocol },
    date,
    motors: Object.fromEntries(config.motors.map((m) => [m.name, defaultMotorCalibration(m)])),
  };
}

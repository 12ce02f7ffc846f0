/** The control table of a simulated servo: its registers read and written in counts, as the bus sees them. */
import {
  type BusRegister,
  type RawValue,
  ampsToCurrent,
  degSToSpeed,
  degToPosition,
  percentToLoad,
  voltsToVoltage,
} from '../dynamixel/registers.ts';
import { RobotError } from '../core/errors.ts';
import type { SimServo } from './servo.ts';

const DEG = Math.PI / 180;

/** A servo's control-table read, in counts. */
export function readRegister(servo: SimServo, reg: BusRegister): RawValue {
  switch (reg) {
    case 'torque_enable':
      return servo.torqueEnable;
    case 'goal_position':
      return servo.goalPosition;
    case 'moving_speed':
      return servo.movingSpeed;
    case 'torque_limit':
      return servo.torqueLimit;
    case 'present_position':
      return degToPosition(servo.spec, servo.angle / DEG);
    case 'present_speed':
      return degSToSpeed(servo.spec, servo.speed / DEG);
    case 'present_load':
      return percentToLoad((servo.torque / servo.stall) * 100);
    case 'present_voltage':
      return voltsToVoltage(servo.voltage);
    case 'present_temperature':
      return Math.round(servo.temperature);
    case 'present_current':
      return ampsToCurrent((servo.torque / servo.stall) * (servo.spec.stallPower / servo.model.vin));
    case 'pid':
      return servo.pid;
    case 'compliance_margin':
      return servo.complianceMargin;
    case 'compliance_slope':
      return servo.complianceSlope;
    case 'led':
      return servo.led;
    case 'control_mode':
      return servo.controlMode;
    case 'angle_limit':
      return servo.angleLimit;
  }
}

/** A servo's control-table write, in counts. Out-of-range values are refused as the firmware's Range error does. */
export function writeRegister(servo: SimServo, reg: BusRegister, value: RawValue): void {
  const scalar = (max: number): number => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max)
      throw new RobotError(
        'bad_request',
        `servo ${servo.id}: ${reg} value ${String(value)} out of range 0..${max}`,
      );
    return value;
  };
  const pair = (max: number): [number, number] => {
    if (
      !Array.isArray(value) ||
      value.length !== 2 ||
      value.some((v) => !Number.isInteger(v) || v < 0 || v > max)
    )
      throw new RobotError('bad_request', `servo ${servo.id}: ${reg} needs two integers 0..${max}`);
    return [value[0]!, value[1]!];
  };
  switch (reg) {
    case 'torque_enable':
      servo.torqueEnable = scalar(1);
      return;
    case 'goal_position':
      servo.goalPosition = scalar(servo.spec.positionSteps - 1);
      return;
    case 'moving_speed':
      servo.movingSpeed = scalar(2047);
      return;
    case 'torque_limit':
      servo.torqueLimit = scalar(1023);
      return;
    case 'pid': {
      if (
        !Array.isArray(value) ||
        value.length !== 3 ||
        value.some((v) => !Number.isInteger(v) || v < 0 || v > 254)
      )
        throw new RobotError('bad_request', `servo ${servo.id}: pid needs three integers 0..254`);
      servo.pid = [value[0]!, value[1]!, value[2]!];
      return;
    }
    case 'compliance_margin':
      servo.complianceMargin = pair(255);
      return;
    case 'compliance_slope':
      servo.complianceSlope = pair(254);
      return;
    case 'led':
      servo.led = scalar(7);
      return;
    case 'control_mode':
      servo.controlMode = scalar(2);
      return;
    case 'angle_limit':
      servo.angleLimit = pair(servo.spec.positionSteps - 1);
      return;
    default:
      throw new RobotError('read_only', `servo ${servo.id}: ${reg} is read-only`);
  }
}

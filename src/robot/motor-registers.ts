/**
 * The REST view of a motor's registers: one typed entry per register with its reader and, for writable ones, the
 * parser and effect (docs/reference/contract.md 2). Nothing here is reached by reflection: unknown names are 404, others 403.
 */
import { badRequest, hardwareError, notFound, readOnly } from '../core/errors.ts';
import {
  LED_COLOURS,
  type LedColour,
  type MotorRegister,
  WRITABLE_REGISTERS,
  gainsToRawPid,
  maxSpeedDegS,
  percentToTorqueLimit,
  rawPidToGains,
  torqueLimitToPercent,
} from '../dynamixel/registers.ts';
import { parseBoolean, parseIntegerArray, parseNumber, parseNumberArray, describe } from '../core/values.ts';
import type { Motor } from './motor.ts';
import type { Robot } from './robot.ts';

export type RegisterValue = number | boolean | string | number[] | string[] | null;

type Reader = (m: Motor) => RegisterValue;
type Writer = (robot: Robot, m: Motor, value: unknown) => RegisterValue;

const readers: Record<MotorRegister, Reader> = {
  registers: (m) => [...m.registers],
  goal_speed: (m) => Math.sign(m.commands.goalPosition) * m.commands.movingSpeed + 0,
  compliant: (m) => m.commands.compliant,
  safe_compliant: (m) => m.commands.compliant,
  angle_limit: (m) => [m.lowerLimit, m.upperLimit],
  id: (m) => m.id,
  name: (m) => m.name,
  model: (m) => m.spec.name,
  present_position: (m) => m.state.presentPosition,
  goal_position: (m) => round2(m.commands.goalPosition),
  present_speed: (m) => m.state.presentSpeed,
  moving_speed: (m) => round2(m.commands.movingSpeed),
  present_load: (m) => m.state.presentLoad,
  torque_limit: (m) => m.commands.torqueLimit,
  lower_limit: (m) => m.lowerLimit,
  upper_limit: (m) => m.upperLimit,
  present_voltage: (m) => m.state.presentVoltage,
  present_temperature: (m) => m.state.presentTemperature,
  compliance_margin: (m) => [...m.commands.complianceMargin],
  compliance_slope: (m) => [...m.commands.complianceSlope],
  pid: (m) => [...m.commands.pid],
  present_current: (m) => m.state.presentCurrent,
  led: (m) => m.commands.led,
  control_mode: (m) => m.commands.controlMode,
};

function setCompliant(robot: Robot, m: Motor, compliant: boolean): void {
  if (m.commands.compliant && !compliant) m.set('goalPosition', m.state.presentPosition);
  robot.cancelMotion(m);
  m.set('compliant', compliant);
}

const writers: Partial<Record<MotorRegister, Writer>> = {
  goal_position: (robot, m, v) => {
    const target = m.clampAngle(parseNumber(v, 'goal_position'));
    robot.cancelMotion(m);
    m.endGoalSpeed();
    m.set('goalPosition', target);
    return round2(target);
  },
  goal_speed: (robot, m, v) => {
    const speed = parseNumber(v, 'goal_speed');
    robot.cancelMotion(m);
    if (Math.abs(speed) < Number.EPSILON) {
      m.set('goalPosition', m.state.presentPosition);
      m.endGoalSpeed();
      return 0;
    }
    const magnitude = Math.max(Math.abs(speed), 0.7);
    m.speedBeforeGoalSpeed ??= m.commands.movingSpeed;
    m.set('goalPosition', m.clampAngle(Math.sign(speed) * m.spec.goalSpeedTravel));
    m.set('movingSpeed', Math.min(magnitude, maxSpeedDegS(m.spec)));
    return Math.sign(speed) * m.commands.movingSpeed;
  },
  moving_speed: (_robot, m, v) => {
    const speed = parseNumber(v, 'moving_speed');
    m.speedBeforeGoalSpeed = undefined; // an explicit speed outlasts the goal_speed mode
    m.set('movingSpeed', Math.min(Math.abs(speed), maxSpeedDegS(m.spec)));
    return round2(m.commands.movingSpeed);
  },
  torque_limit: (_robot, m, v) => {
    const percent = Math.min(100, Math.max(0, parseNumber(v, 'torque_limit')));
    // What the servo holds after the register round trip, as pypot reads it back (0.1 % steps).
    const limit = torqueLimitToPercent(percentToTorqueLimit(percent));
    m.set('torqueLimit', limit);
    return limit;
  },
  compliant: (robot, m, v) => {
    const compliant = parseBoolean(v, 'compliant');
    m.safeCompliance = robot.config.startup.safeCompliant.includes(m.name);
    setCompliant(robot, m, compliant);
    return compliant;
  },
  safe_compliant: (robot, m, v) => {
    const compliant = parseBoolean(v, 'safe_compliant');
    m.safeCompliance = compliant || robot.config.startup.safeCompliant.includes(m.name);
    setCompliant(robot, m, compliant);
    return compliant;
  },
  pid: (_robot, m, v) => {
    const gains = parseNumberArray(v, 3, 'pid');
    if (gains.some((g) => g < 0))
      throw badRequest(
        'pid gains must not be negative',
        'send [Kp, Ki, Kd], each >= 0',
        `got ${describe(v)}`,
      );
    // What the servo will hold after the register round trip (Kp in steps of 1/8, ...).
    const held = rawPidToGains(gainsToRawPid(gains));
    m.set('pid', held);
    return [...held];
  },
  compliance_margin: (_robot, m, v) => {
    const [cw, ccw] = parseIntegerArray(v, 2, 0, 255, 'compliance_margin');
    m.set('complianceMargin', [cw!, ccw!]);
    return [cw!, ccw!];
  },
  compliance_slope: (_robot, m, v) => {
    const [cw, ccw] = parseIntegerArray(v, 2, 0, 254, 'compliance_slope');
    m.set('complianceSlope', [cw!, ccw!]);
    return [cw!, ccw!];
  },
  led: (_robot, m, v) => {
    const colour = typeof v === 'string' ? v.trim().toLowerCase() : v;
    if (typeof colour !== 'string' || !(LED_COLOURS as readonly string[]).includes(colour))
      throw badRequest('led must be a colour name', `one of ${LED_COLOURS.join(', ')}`, `got ${describe(v)}`);
    m.set('led', colour as LedColour);
    return colour;
  },
  control_mode: (_robot, m, v) => {
    const modes: Record<string, number> = { wheel: 1, joint: 2, '1': 1, '2': 2 };
    const mode = modes[String(v).toLowerCase()];
    if (mode === undefined)
      throw badRequest(
        'control_mode must be "joint" (2) or "wheel" (1)',
        'send 2 for joint mode',
        `got ${describe(v)}`,
      );
    m.set('controlMode', mode);
    return mode;
  },
};

function checkRegister(m: Motor, reg: string): MotorRegister {
  if (!m.hasRegister(reg))
    throw notFound(
      `motor "${m.name}" has no register "${reg}"`,
      `GET /motors/${m.name}/registers/list.json lists its registers`,
      `model ${m.spec.name}`,
    );
  return reg;
}

export function readRegister(m: Motor, reg: string): RegisterValue {
  const r = checkRegister(m, reg);
  checkAnswering(m);
  return readers[r](m);
}

/** 503 for a motor that stopped answering on the bus (its last value would be stale, its writes go nowhere). */
function checkAnswering(m: Motor): void {
  if (m.fault)
    throw hardwareError(
      `motor "${m.name}" does not answer on the bus`,
      'check its cable and power; it is used again as soon as it answers',
      m.fault,
    );
}

/**
 * A write of `reg` on `m`, checked once: 404 for a register the motor lacks and 403 for a read-only one now, before
 * the value is even looked at; the returned write answers 503 for a motor that does not answer, 400 for a bad value.
 */
export function registerWriter(robot: Robot, m: Motor, reg: string): (value: unknown) => RegisterValue {
  const r = checkRegister(m, reg);
  const writer = writers[r];
  if (!WRITABLE_REGISTERS.has(r) || !writer)
    throw readOnly(
      `register "${reg}" of motor "${m.name}" is read-only`,
      `writable registers: ${[...WRITABLE_REGISTERS].filter((w) => m.hasRegister(w)).join(', ')}`,
      'the servo does not accept writes to it',
    );
  return (value) => {
    // The LED moves nothing: it stays writable while the robot is held (a calibration run).
    if (r !== 'led') robot.assertFree(`a write of ${m.name}'s ${r}`);
    checkAnswering(m);
    return writer(robot, m, value);
  };
}

export function writeRegister(robot: Robot, m: Motor, reg: string, value: unknown): RegisterValue {
  return registerWriter(robot, m, reg)(value);
}

/** Every register but safe_compliant, as /robot.json lists them. */
export function motorSnapshot(m: Motor): Record<string, RegisterValue> {
  const out: Record<string, RegisterValue> = {};
  for (const reg of m.registers) if (reg !== 'safe_compliant') out[reg] = readers[reg](m);
  return out;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100 + 0;
}

/**
 * Dynamixel models and registers as typed tables, with the raw <-> SI conversions beside them (docs/reference/dynamixel.md 8.3-8.5).
 * Bus values are register counts ("raw units"); everything above the bus works in SI/raw-frame degrees.
 */
/** Servo models this project knows. "AX-12" is the spelling pypot reports; "AX-12A" is accepted as the same servo. */
export const MOTOR_MODELS = ['AX-12', 'AX-12A', 'MX-28', 'MX-64', 'XL-320'] as const;
export type MotorModelName = (typeof MOTOR_MODELS)[number];

export interface ModelSpec {
  /** Canonical name as reported by the `model` register. */
  readonly name: 'AX-12' | 'MX-28' | 'MX-64' | 'XL-320';
  readonly modelNumber: number;
  readonly protocol: 1 | 2;
  /** Encoder steps and angular span of the position register. */
  readonly positionSteps: number;
  readonly positionSpan: number;
  /** rpm per speed unit. */
  readonly speedUnitRpm: number;
  readonly stallTorque: number; // N.m at nominal voltage
  readonly noLoadSpeed: number; // deg/s at nominal voltage
  readonly nominalVoltage: number; // V
  readonly gearRatio: number;
  /** Reflected rotor inertia at the output shaft (kg.m^2); the geared motor's own inertia matters for light links. */
  readonly rotorInertia: number;
  /** Winding resistance-like factor for the thermal model: W dissipated at stall. */
  readonly stallPower: number;
  readonly maxTemperature: number; // shutdown threshold, deg C
  /** goal_speed turns towards +-maxPosition (user degrees) as pypot does. */
  readonly goalSpeedTravel: number;
  readonly control: 'pid' | 'compliance';
  /** Registers after the common ones, in the order pypot lists them. */
  readonly extraRegisters: readonly MotorRegister[];
}

export const COMMON_REGISTERS = [
  'registers',
  'goal_speed',
  'compliant',
  'safe_compliant',
  'angle_limit',
  'id',
  'name',
  'model',
  'present_position',
  'goal_position',
  'present_speed',
  'moving_speed',
  'present_load',
  'torque_limit',
  'lower_limit',
  'upper_limit',
  'present_voltage',
  'present_temperature',
] as const;
export const EXTRA_REGISTERS = [
  'compliance_margin',
  'compliance_slope',
  'pid',
  'present_current',
  'led',
  'control_mode',
] as const;
export type MotorRegister = (typeof COMMON_REGISTERS)[number] | (typeof EXTRA_REGISTERS)[number];

export const WRITABLE_REGISTERS: ReadonlySet<MotorRegister> = new Set<MotorRegister>([
  'goal_position',
  'goal_speed',
  'moving_speed',
  'torque_limit',
  'compliant',
  'safe_compliant',
  'pid',
  'compliance_margin',
  'compliance_slope',
  'led',
  'control_mode',
]);

const AX12: ModelSpec = {
  name: 'AX-12',
  modelNumber: 12,
  protocol: 1,
  positionSteps: 1024,
  positionSpan: 300,
  speedUnitRpm: 0.111,
  stallTorque: 1.5,
  noLoadSpeed: 354,
  nominalVoltage: 12,
  gearRatio: 254,
  rotorInertia: 3e-3,
  stallPower: 18,
  maxTemperature: 70,
  goalSpeedTravel: 150,
  control: 'compliance',
  extraRegisters: ['compliance_margin', 'compliance_slope'],
};

export const MODELS: Readonly<Record<ModelSpec['name'], ModelSpec>> = {
  'AX-12': AX12,
  'MX-28': {
    name: 'MX-28',
    modelNumber: 29,
    protocol: 1,
    positionSteps: 4096,
    positionSpan: 360,
    speedUnitRpm: 0.114,
    stallTorque: 2.5,
    noLoadSpeed: 330,
    nominalVoltage: 12,
    gearRatio: 193,
    rotorInertia: 3.5e-3,
    stallPower: 16.8,
    maxTemperature: 80,
    goalSpeedTravel: 180,
    control: 'pid',
    extraRegisters: ['pid'],
  },
  'MX-64': {
    name: 'MX-64',
    modelNumber: 310,
    protocol: 1,
    positionSteps: 4096,
    positionSpan: 360,
    speedUnitRpm: 0.114,
    stallTorque: 6.0,
    noLoadSpeed: 378,
    nominalVoltage: 12,
    gearRatio: 200,
    rotorInertia: 8e-3,
    stallPower: 49,
    maxTemperature: 80,
    goalSpeedTravel: 180,
    control: 'pid',
    extraRegisters: ['pid', 'present_current'],
  },
  'XL-320': {
    name: 'XL-320',
    modelNumber: 350,
    protocol: 2,
    positionSteps: 1024,
    positionSpan: 300,
    speedUnitRpm: 0.111,
    stallTorque: 0.39,
    noLoadSpeed: 684,
    nominalVoltage: 7.4,
    gearRatio: 238,
    rotorInertia: 5e-4,
    stallPower: 8.1,
    maxTemperature: 65,
    goalSpeedTravel: 150,
    control: 'pid',
    extraRegisters: ['pid', 'led', 'control_mode'],
  },
};

export function modelSpec(model: MotorModelName): ModelSpec {
  return model === 'AX-12A' ? AX12 : MODELS[model];
}

export function motorRegisters(spec: ModelSpec): readonly MotorRegister[] {
  return [...COMMON_REGISTERS, ...spec.extraRegisters];
}

/** Registers as they travel on the bus. Multi-value registers carry arrays (pid is [D, I, P] as on the wire). */
export type BusRegister =
  | 'torque_enable'
  | 'goal_position'
  | 'moving_speed'
  | 'torque_limit'
  | 'present_position'
  | 'present_speed'
  | 'present_load'
  | 'present_voltage'
  | 'present_temperature'
  | 'present_current'
  | 'pid'
  | 'compliance_margin'
  | 'compliance_slope'
  | 'led'
  | 'control_mode'
  | 'angle_limit';

export type RawValue = number | readonly number[];

/** Registers every control cycle reads. */
export const CYCLE_REGISTERS = [
  'present_position',
  'present_speed',
  'present_load',
] as const satisfies readonly BusRegister[];
/** Registers that change slowly (supply and heat), read at 5 Hz rather than every cycle, as pypot's slower loops do. */
export const SLOW_REGISTERS = [
  'present_voltage',
  'present_temperature',
  'present_current',
] as const satisfies readonly BusRegister[];
export type SlowRegister = (typeof SLOW_REGISTERS)[number];

/**
 * The slow registers control cycle number `cycle` of a loop at `hz` reads: 5 Hz each, one a cycle on consecutive
 * cycles, so that no cycle carries all three (on a 1.0 bus of AX-12s, which have no bulk read, each is a read per
 * motor, and the cycle after such a cycle started late); all three in one cycle when the loop is too slow to spread.
 */
export function slowRegistersDue(cycle: number, hz: number): readonly SlowRegister[] {
  const every = Math.max(1, Math.round(hz / 5));
  const phase = cycle % every;
  if (every <= SLOW_REGISTERS.length) return phase === 1 % every ? SLOW_REGISTERS : [];
  return phase >= 1 && phase <= SLOW_REGISTERS.length ? [SLOW_REGISTERS[phase - 1]!] : [];
}

// --- conversions (docs/reference/dynamixel.md 8.5), raw frame: degrees, deg/s, %, V, deg C ---

const round = (x: number, decimals: number) => {
  const f = 10 ** decimals;
  return Math.round(x * f) / f;
};
const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

export function positionToDeg(spec: ModelSpec, counts: number): number {
  const n = spec.positionSteps;
  return round((spec.positionSpan * counts) / (n - 1) - spec.positionSpan / 2, 2);
}

export function degToPosition(spec: ModelSpec, deg: number): number {
  const n = spec.positionSteps;
  return clamp(Math.round(((n - 1) * (spec.positionSpan / 2 + deg)) / spec.positionSpan), 0, n - 1);
}

/** One position count in degrees. */
export function positionResolution(spec: ModelSpec): number {
  return spec.positionSpan / (spec.positionSteps - 1);
}

export function speedToDegS(spec: ModelSpec, v: number): number {
  const mag = (v % 1024) * spec.speedUnitRpm * 6;
  return v >= 1024 ? -mag : mag;
}

export function maxSpeedDegS(spec: ModelSpec): number {
  return 1023 * 6 * spec.speedUnitRpm;
}

/** Signed deg/s to the 11-bit speed register (bit 10 = negative). */
export function degSToSpeed(spec: ModelSpec, degS: number): number {
  const mag = Math.min(Math.abs(degS), maxSpeedDegS(spec));
  return Math.round(mag / (6 * spec.speedUnitRpm)) + (degS < 0 ? 1024 : 0);
}

export function torqueLimitToPercent(v: number): number {
  return round(v / 10.23, 1);
}

export function percentToTorqueLimit(percent: number): number {
  return clamp(Math.round(percent * 10.23), 0, 1023);
}

export function loadToPercent(v: number): number {
  const mag = round((v % 1024) / 10.23, 1);
  return v >= 1024 ? -mag : mag;
}

export function percentToLoad(percent: number): number {
  const mag = Math.min(1023, Math.round(Math.abs(percent) * 10.23));
  return mag + (percent < 0 ? 1024 : 0);
}

export function voltageToVolts(v: number): number {
  return round(v * 0.1, 1);
}

export function voltsToVoltage(volts: number): number {
  return clamp(Math.round(volts * 10), 0, 255);
}

export function currentToAmps(v: number): number {
  return round((4.5 * (v - 2048)) / 1000, 4);
}

export function ampsToCurrent(amps: number): number {
  return clamp(Math.round((amps * 1000) / 4.5 + 2048), 0, 4095);
}

/** Raw [D, I, P] -> [Kp, Ki, Kd]. */
export function rawPidToGains(raw: readonly number[]): [number, number, number] {
  const [d = 0, i = 0, p = 0] = raw;
  return [p * 0.125, i * 0.48828125, d * 0.004];
}

/** [Kp, Ki, Kd] -> raw [D, I, P], each clamped to 0..254. */
export function gainsToRawPid(gains: readonly number[]): [number, number, number] {
  const [kp = 0, ki = 0, kd = 0] = gains;
  const c = (x: number) => Math.trunc(clamp(x, 0, 254));
  return [c(kd * 250), c(ki * 2.048), c(kp * 8)];
}

export const LED_COLOURS = ['off', 'red', 'green', 'yellow', 'blue', 'pink', 'cyan', 'white'] as const;
export type LedColour = (typeof LED_COLOURS)[number];

/** AX compliance slope register -> effective proportional gain (P-equivalent), docs/reference/dynamixel.md 8.3: 32 <-> P 32. */
export function complianceSlopeToP(slope: number): number {
  const steps = [2, 4, 8, 16, 32, 64, 128];
  const s = steps.find((step) => slope < step * 2) ?? 128;
  return 1024 / Math.max(s, 2);
}

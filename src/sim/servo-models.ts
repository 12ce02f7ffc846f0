/**
 * Measured (and derived) models of the Dynamixel servos the twin simulates: firmware P loop, DC motor line, armature
 * and gearbox friction. The numbers of the XL-320 and MX-64 are the BAM identifications (docs/reference/servo-models.md 3, model
 * m6, the best fit to real trajectories); the AX-12A and MX-28 have no identified model and are derived below from
 * their datasheets as docs/reference/servo-models.md 3 says. All values are SI at the output shaft.
 */
import type { ModelSpec } from '../dynamixel/registers.ts';

/** Gearbox friction budget parameters (docs/reference/servo-models.md 2); unset terms are zero. */
export interface FrictionParams {
  /** Coulomb (friction_base), N.m. */
  readonly kc: number;
  /** Viscous (friction_viscous), N.m.s/rad. */
  readonly kv: number;
  /** Stribeck static surplus (friction_stribeck), N.m. */
  readonly kcs: number;
  /** Stribeck speed (dtheta_stribeck), rad/s, and exponent. */
  readonly dqS: number;
  readonly alpha: number;
  /** M5/M6 directional load terms: external and motor torque factors, plain and Stribeck-weighted. */
  readonly kExt: number;
  readonly kMot: number;
  readonly kExtS: number;
  readonly kMotS: number;
  /** M6 quadratic terms (1/N.m), active when motor and external torques have opposite signs. */
  readonly kExtQuad: number;
  readonly kMotQuad: number;
}

export interface ServoModel {
  /** Where the numbers come from (shown by the fidelity bench). */
  readonly source: string;
  /** Motor torque constant, N.m/A (= V.s/rad), and winding resistance, ohm. */
  readonly kt: number;
  readonly r: number;
  /** Reflected motor inertia about the joint axis, kg.m^2. */
  readonly armature: number;
  /** Supply voltage on Poppy robots, V. */
  readonly vin: number;
  /** Duty per rad of error per unit of the P register (the firmware's error gain) and the duty ceiling. */
  readonly errorGain: number;
  readonly maxPwm: number;
  readonly friction: FrictionParams;
  /** The datasheet's stall torque (N.m) and no-load speed (deg/s) at `vin`: the yardstick of the derived models. */
  readonly datasheet: { readonly stallTorque: number; readonly noLoadDegS: number };
  /** Identified on a real servo (BAM), or derived from the datasheet (docs/reference/servo-models.md 3). */
  readonly measured: boolean;
}

/** XL-320, BAM m6 at 7.4 V (Ergo Jr supply), with the XL-320's measured error gain and full duty range. */
const XL320: ServoModel = {
  source: 'measured (BAM m6)',
  kt: 1.00883,
  r: 31.586,
  armature: 0.001163,
  vin: 7.4,
  errorGain: 0.05048,
  maxPwm: 1.0,
  friction: {
    kc: 4.3e-7,
    kv: 0.0072252,
    kcs: 0.016306,
    dqS: 2.30105,
    alpha: 1.70674,
    kExt: 0.15833,
    kMot: 3.09e-6,
    kExtS: 0.24548,
    kMotS: 5.97e-9,
    kExtQuad: 0.0047109,
    kMotQuad: 0.0036164,
  },
  // ROBOTIS e-manual at 7.4 V: 0.39 N.m, 114 rpm. The real servo is much weaker and slower (docs/reference/servo-models.md 3).
  datasheet: { stallTorque: 0.39, noLoadDegS: 684 },
  measured: true,
};

/** MX-64, BAM m6 at 12 V, with the MX error gain and duty ceiling measured with an oscilloscope. */
const MX64: ServoModel = {
  source: 'measured (BAM m6)',
  kt: 1.60168,
  r: 2.3164,
  armature: 0.012266,
  vin: 12,
  errorGain: 0.158,
  maxPwm: 0.9625,
  friction: {
    kc: 6.2e-7,
    kv: 0.025337,
    kcs: 0.1227,
    dqS: 2.57528,
    alpha: 0.8409,
    kExt: 2.0e-8,
    kMot: 0.31147,
    kExtS: 0.014066,
    kMotS: 0.18774,
    kExtQuad: 0.0099999,
    kMotQuad: 0.0069085,
  },
  // ROBOTIS e-manual at 12 V: 6.0 N.m, 63 rpm.
  datasheet: { stallTorque: 6.0, noLoadDegS: 378 },
  measured: true,
};

/**
 * A servo with no identified model, built from its datasheet as docs/reference/servo-models.md 3 says:
 * - the MX family's error gain and duty ceiling (the AX firmware is the same generation of ATmega P loop);
 * - friction scaled from the MX-64 by the datasheet stall torque ratio: the torque terms (Kc, Kcs, N.m) and the
 *   viscous term (N.m.s/rad) scale with the ratio; the load factors are ratios of torques and stay; the quadratic
 *   terms (1/N.m) scale with its inverse, so that each term keeps the same share of the stall torque;
 * - kt and R from the stall torque and no-load speed: a datasheet measures them at the output shaft, gearbox losses
 *   included, so the motor line (stall kt*Vin*maxPwm/R, no-load speed Vin*maxPwm/kt) is sized so that what is left
 *   after the friction budget matches the datasheet, both at rest against a load and turning freely;
 * - armature scaled from the MX-64 by the same ratio (smaller motor, similar gear ratio), an assumption: no
 *   measurement exists.
 */
function fromDatasheet(stallTorqueNm: number, noLoadDegS: number, vin: number): ServoModel {
  const maxPwm = MX64.maxPwm;
  // The MX-64's datasheet stall torque is the yardstick the derived models are scaled by.
  const s = stallTorqueNm / MX64.datasheet.stallTorque;
  const f = MX64.friction;
  const friction: FrictionParams = {
    ...f,
    kc: f.kc * s,
    kv: f.kv * s,
    kcs: f.kcs * s,
    kExtQuad: f.kExtQuad / s,
    kMotQuad: f.kMotQuad / s,
  };
  const w0 = (noLoadDegS * Math.PI) / 180;
  let motorStall = stallTorqueNm;
  let motorSpeed = w0;
  for (let i = 0; i < 30; i++) {
    motorStall *= stallTorqueNm / netStall(friction, motorStall);
    motorSpeed *= w0 / netSpeed(friction, motorStall, motorSpeed);
  }
  const kt = (vin * maxPwm) / motorSpeed;
  return {
    source: 'derived from the datasheet, friction scaled from the MX-64',
    kt,
    r: (kt * vin * maxPwm) / motorStall,
    armature: MX64.armature * s,
    vin,
    errorGain: MX64.errorGain,
    maxPwm,
    friction,
    datasheet: { stallTorque: stallTorqueNm, noLoadDegS },
    measured: false,
  };
}

/** Torque left at rest and full duty once the gearbox takes its budget (the load pushing back as hard). */
function netStall(f: FrictionParams, motorStall: number): number {
  let out = motorStall;
  for (let i = 0; i < 60; i++) out = Math.max(0, motorStall - frictionBudget(f, 0, motorStall, -out));
  return out;
}

/** Free-running speed at full duty where the motor line meets the friction budget. */
function netSpeed(f: FrictionParams, motorStall: number, motorSpeed: number): number {
  let lo = 0;
  let hi = motorSpeed;
  for (let i = 0; i < 60; i++) {
    const w = (lo + hi) / 2;
    const torque = motorStall * (1 - w / motorSpeed);
    if (torque > frictionBudget(f, w, torque, 0)) lo = w;
    else hi = w;
  }
  return lo;
}

/** The torque the servo delivers at rest and full duty, net of its gearbox friction. */
export function effectiveStallTorque(m: ServoModel): number {
  return netStall(m.friction, stallTorque(m));
}

/** MX-28 (protocol 1 firmware): datasheet 2.5 N.m stall and 55 rpm (330 deg/s) at 12 V. */
const MX28 = fromDatasheet(2.5, 330, 12);
/** AX-12A: datasheet 1.5 N.m stall and 59 rpm (354 deg/s) at 12 V. */
const AX12 = fromDatasheet(1.5, 354, 12);

const BY_MODEL: Readonly<Record<ModelSpec['name'], ServoModel>> = {
  'XL-320': XL320,
  'MX-64': MX64,
  'MX-28': MX28,
  'AX-12': AX12,
};

export function servoModel(spec: ModelSpec): ServoModel {
  return BY_MODEL[spec.name];
}

/** Stall torque (N.m) and no-load speed (rad/s) at full duty and the model's supply. */
export function stallTorque(m: ServoModel): number {
  return (m.kt * m.vin * m.maxPwm) / m.r;
}
export function noLoadSpeed(m: ServoModel): number {
  return (m.vin * m.maxPwm) / m.kt;
}

/** Motor torque (N.m) for a duty in [-maxPwm, maxPwm] at joint speed dq: the DC motor line. */
export function motorTorque(m: ServoModel, duty: number, dq: number, vin = m.vin): number {
  return (m.kt * duty * vin) / m.r - (m.kt * m.kt * dq) / m.r;
}

/**
 * The gearbox friction budget (N.m, >= 0) at speed dq with motor torque tauM and external torque tauE (the torque
 * the load applies about the axis, gravity positive when it turns the joint positively). docs/reference/servo-models.md 2, M6
 * (M1/M4 are the same formula with the extra terms zero).
 */
export function frictionBudget(f: FrictionParams, dq: number, tauM: number, tauE: number): number {
  const stribeck = Math.exp(-Math.pow(Math.abs(dq / f.dqS), f.alpha));
  let budget =
    f.kc +
    f.kv * Math.abs(dq) +
    f.kcs * stribeck +
    Math.abs(tauE * f.kExt - tauM * f.kMot) +
    Math.abs(tauE * f.kExtS - tauM * f.kMotS) * stribeck;
  if (tauM * tauE < 0) {
    // Motor and load oppose: the gears are loaded from one side; the quadratic term of the stronger side applies.
    budget +=
      (Math.abs(tauE) < Math.abs(tauM) ? f.kExtQuad * tauE * tauE : f.kMotQuad * tauM * tauM) * stribeck;
  }
  return budget;
}

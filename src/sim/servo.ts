/**
 * Firmware model of one Dynamixel servo, in its raw frame. Pure: it takes the measured joint angle and speed each
 * physics step and says what the motor drive does (target, stiffness, damping, torque cap). The physics applies it.
 */
import {
  type BusRegister,
  type ModelSpec,
  type RawValue,
  complianceSlopeToP,
  degToPosition,
  degSToSpeed,
  percentToLoad,
  positionResolution,
  positionToDeg,
  rawPidToGains,
  speedToDegS,
  voltsToVoltage,
  ampsToCurrent,
} from '../core/registers.ts';
import { RobotError } from '../core/errors.ts';

const DEG = Math.PI / 180;
/** A proportional gain Kp (P/8) drives full stall torque at an error of SATURATION_ERROR_DEG / Kp degrees. */
const SATURATION_ERROR_DEG = 20;
/**
 * Back-driving a limp servo turns its gearbox: Coulomb-like friction, modelled as strong velocity damping capped at
 * a small torque (a fraction of stall). Enough to feel, not enough to hold a forearm up.
 */
const LIMP_FRICTION_PER_STALL = 0.01;
const AMBIENT_C = 25;
/** Integral action works within this error (rad) and may supply at most this share of the torque cap. */
const INTEGRAL_ZONE = 5 * DEG;
const INTEGRAL_SHARE = 1 / 3;
/** Damping ratio of the drive, and the inertia it is sized for, in units of the reflected rotor inertia. */
const DAMPING_RATIO = 0.8;
const DAMPED_INERTIA_FACTOR = 4;
/** Time constant (s) of the setpoint-speed estimate. */
const SETPOINT_SPEED_FILTER = 0.02;
/** Thermal model: capacity J/K and resistance K/W to ambient (time constant ~5 min). */
const THERMAL_CAPACITY = 30;
const THERMAL_RESISTANCE = 10;
/** Supply sag: volts lost at full stall current. */
const SUPPLY_SAG_AT_STALL = 0.6;

export interface DriveCommand {
  /** Raw-frame angle (rad) the drive pulls towards. */
  readonly target: number;
  /** Raw-frame angular speed (rad/s) the damping pulls towards: the setpoint's own speed, so damping adds no lag. */
  readonly targetVelocity: number;
  /** N.m/rad; 0 = limp. */
  readonly stiffness: number;
  /** N.m.s/rad. */
  readonly damping: number;
  /** Torque cap, N.m. */
  readonly maxTorque: number;
}

export interface ServoOptions {
  readonly id: number;
  readonly spec: ModelSpec;
  /** Raw-frame angle limits, degrees (the CW/CCW limit registers). */
  readonly angleLimit: readonly [number, number];
}

export class SimServo {
  readonly id: number;
  readonly spec: ModelSpec;
  // Registers in counts, as the control table holds them.
  torqueEnable = 0;
  goalPosition: number;
  movingSpeed = 0;
  torqueLimit = 1023;
  pid: [number, number, number] = [0, 0, 32]; // [D, I, P]
  complianceMargin: [number, number] = [1, 1];
  complianceSlope: [number, number] = [32, 32];
  led = 0;
  controlMode = 2;
  angleLimit: [number, number];

  // Physical state.
  #setpoint = 0; // rad, where the speed-limited profile is now
  #integral = 0; // rad.s
  #setpointSpeed = 0; // rad/s
  #q = 0;
  #qdot = 0;
  #torque = 0; // N.m the drive is producing (estimate, as the real firmware does)
  #temperature = AMBIENT_C;
  #voltage: number;
  #wasEnabled = false;

  constructor(opts: ServoOptions) {
    this.id = opts.id;
    this.spec = opts.spec;
    this.goalPosition = degToPosition(opts.spec, 0);
    this.angleLimit = [
      degToPosition(opts.spec, opts.angleLimit[0]),
      degToPosition(opts.spec, opts.angleLimit[1]),
    ];
    this.#voltage = opts.spec.nominalVoltage;
    if (opts.spec.control === 'compliance') this.pid = [0, 0, 0];
  }

  get angle(): number {
    return this.#q;
  }

  get temperature(): number {
    return this.#temperature;
  }

  /** Sets the initial angle (rad) before the first step. */
  placeAt(q: number): void {
    this.#q = q;
    this.#setpoint = q;
    this.goalPosition = degToPosition(this.spec, q / DEG);
  }

  /** One physics step: measured angle/speed in, drive command out. */
  step(dt: number, q: number, qdot: number): DriveCommand {
    this.#q = q;
    this.#qdot = qdot;
    const stall = this.spec.stallTorque * Math.min(1.2, this.#voltage / this.spec.nominalVoltage);
    const maxTorque = (this.torqueLimit / 1023) * stall;
    const enabled = this.torqueEnable !== 0 && this.controlMode === 2;
    let command: DriveCommand;
    if (!enabled) {
      this.#wasEnabled = false;
      this.#integral = 0;
      this.#torque = 0;
      const damping = this.spec.stallTorque / (this.spec.noLoadSpeed * DEG * 0.05);
      command = {
        target: q,
        targetVelocity: 0,
        stiffness: 0,
        damping,
        maxTorque: LIMP_FRICTION_PER_STALL * this.spec.stallTorque,
      };
    } else {
      if (!this.#wasEnabled) {
        this.#setpoint = q;
        this.#setpointSpeed = 0;
        this.#wasEnabled = true;
      }
      const [lo, hi] = this.angleLimit;
      const goal = positionToDeg(this.spec, Math.min(hi, Math.max(lo, this.goalPosition))) * DEG;
      const speedDeg =
        this.movingSpeed % 1024 === 0
          ? this.spec.noLoadSpeed
          : Math.min(speedToDegS(this.spec, this.movingSpeed % 1024), this.spec.noLoadSpeed);
      const maxStep = speedDeg * DEG * dt;
      const delta = goal - this.#setpoint;
      const move = Math.abs(delta) <= maxStep ? delta : Math.sign(delta) * maxStep;
      this.#setpoint += move;
      // The setpoint moves in bursts (goals arrive at the control rate): its speed is smoothed over ~20 ms.
      const alpha = Math.min(1, dt / SETPOINT_SPEED_FILTER);
      this.#setpointSpeed += (move / dt - this.#setpointSpeed) * alpha;

      const { kp, ki, kd, margin } = this.#gains();
      const stiffness = (kp * this.spec.stallTorque) / (SATURATION_ERROR_DEG * DEG);
      let error = this.#setpoint - q;
      if (Math.abs(error) < margin) error = 0;
      else error -= Math.sign(error) * margin;
      if (ki > 0) {
        // Integral action only near the setpoint (conditional integration), worth at most a third of the torque
        // cap: it removes a small steady error (gravity sag) without winding up during large moves or pushes.
        if (Math.abs(error) < INTEGRAL_ZONE) {
          const limit = (INTEGRAL_SHARE * maxTorque) / Math.max(stiffness * ki, 1e-9);
          this.#integral = Math.min(limit, Math.max(-limit, this.#integral + error * dt));
        } else {
          this.#integral *= 0.9;
        }
      }
      const target = q + error + ki * this.#integral;
      // A geared servo's step response is close to critically damped: size the damping from the stiffness and the
      // reflected inertia (the part of the load the servo always carries), never below the motor's back-EMF damping,
      // plus the derivative gain.
      const backEmf = this.spec.stallTorque / (this.spec.noLoadSpeed * DEG);
      const critical =
        2 * DAMPING_RATIO * Math.sqrt(stiffness * DAMPED_INERTIA_FACTOR * this.spec.rotorInertia);
      const damping = Math.max(backEmf, critical) + kd * this.spec.stallTorque * 0.05;
      const targetVelocity = this.#setpointSpeed;
      this.#torque = Math.min(
        maxTorque,
        Math.max(-maxTorque, stiffness * (target - q) + damping * (targetVelocity - qdot)),
      );
      command = { target, targetVelocity, stiffness, damping, maxTorque };
    }
    this.#heat(dt);
    return command;
  }

  #gains(): { kp: number; ki: number; kd: number; margin: number } {
    if (this.spec.control === 'compliance') {
      const p = complianceSlopeToP(Math.min(...this.complianceSlope));
      const margin = Math.min(...this.complianceMargin) * positionResolution(this.spec) * DEG;
      return { kp: p / 8, ki: 0, kd: 0, margin };
    }
    const [kp, ki, kd] = rawPidToGains(this.pid);
    return { kp, ki, kd, margin: 0 };
  }

  #heat(dt: number): void {
    const fraction = Math.abs(this.#torque) / this.spec.stallTorque;
    const power = this.spec.stallPower * fraction * fraction;
    const dT = (power - (this.#temperature - AMBIENT_C) / THERMAL_RESISTANCE) / THERMAL_CAPACITY;
    this.#temperature += dT * dt;
    this.#voltage = this.spec.nominalVoltage - SUPPLY_SAG_AT_STALL * fraction;
  }

  /** Control-table read, in counts. */
  read(reg: BusRegister): RawValue {
    switch (reg) {
      case 'torque_enable':
        return this.torqueEnable;
      case 'goal_position':
        return this.goalPosition;
      case 'moving_speed':
        return this.movingSpeed;
      case 'torque_limit':
        return this.torqueLimit;
      case 'present_position':
        return degToPosition(this.spec, this.#q / DEG);
      case 'present_speed':
        return degSToSpeed(this.spec, this.#qdot / DEG);
      case 'present_load':
        return percentToLoad((this.#torque / this.spec.stallTorque) * 100);
      case 'present_voltage':
        return voltsToVoltage(this.#voltage);
      case 'present_temperature':
        return Math.round(this.#temperature);
      case 'present_current':
        return ampsToCurrent(
          (this.#torque / this.spec.stallTorque) * (this.spec.stallPower / this.spec.nominalVoltage),
        );
      case 'pid':
        return this.pid;
      case 'compliance_margin':
        return this.complianceMargin;
      case 'compliance_slope':
        return this.complianceSlope;
      case 'led':
        return this.led;
      case 'control_mode':
        return this.controlMode;
      case 'angle_limit':
        return this.angleLimit;
    }
  }

  /** Control-table write, in counts. Out-of-range values are refused as the firmware's Range error does. */
  write(reg: BusRegister, value: RawValue): void {
    const scalar = (max: number): number => {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max)
        throw new RobotError(
          'bad_request',
          `servo ${this.id}: ${reg} value ${String(value)} out of range 0..${max}`,
        );
      return value;
    };
    const pair = (max: number): [number, number] => {
      if (
        !Array.isArray(value) ||
        value.length !== 2 ||
        value.some((v) => !Number.isInteger(v) || v < 0 || v > max)
      )
        throw new RobotError('bad_request', `servo ${this.id}: ${reg} needs two integers 0..${max}`);
      return [value[0]!, value[1]!];
    };
    switch (reg) {
      case 'torque_enable':
        this.torqueEnable = scalar(1);
        return;
      case 'goal_position':
        this.goalPosition = scalar(this.spec.positionSteps - 1);
        return;
      case 'moving_speed':
        this.movingSpeed = scalar(2047);
        return;
      case 'torque_limit':
        this.torqueLimit = scalar(1023);
        return;
      case 'pid': {
        if (
          !Array.isArray(value) ||
          value.length !== 3 ||
          value.some((v) => !Number.isInteger(v) || v < 0 || v > 254)
        )
          throw new RobotError('bad_request', `servo ${this.id}: pid needs three integers 0..254`);
        this.pid = [value[0]!, value[1]!, value[2]!];
        return;
      }
      case 'compliance_margin':
        this.complianceMargin = pair(255);
        return;
      case 'compliance_slope':
        this.complianceSlope = pair(254);
        return;
      case 'led':
        this.led = scalar(7);
        return;
      case 'control_mode':
        this.controlMode = scalar(2);
        return;
      case 'angle_limit':
        this.angleLimit = pair(this.spec.positionSteps - 1);
        return;
      default:
        throw new RobotError('read_only', `servo ${this.id}: ${reg} is read-only`);
    }
  }
}

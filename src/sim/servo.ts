// Over 400 lines: one servo's firmware loop, motor and gearbox, which share their state from one physics step to the next.
/**
 * Firmware model of one Dynamixel servo, in its raw frame. Pure: it takes the measured joint angle and speed each
 * physics step and says what the motor does: the firmware's P(ID) duty law through the DC motor line, and the gearbox
 * friction budget, which acts whether the torque is on or off (docs/reference/servo-models.md 1 and 2).
 */
import {
  type ModelSpec,
  complianceSlopeToP,
  degToPosition,
  positionResolution,
  positionToDeg,
  rawPidToGains,
  speedToDegS,
} from '../dynamixel/registers.ts';
import { type ServoModel, frictionBudget, motorTorque, servoModel, stallTorque } from './servo-models.ts';
import type { ServoParams } from '../config/calibration.ts';

const DEG = Math.PI / 180;
/** Speed (rad/s, 0.06 deg/s) both sides of a sign change must exceed to count as a reversal (see step). */
const REVERSAL_SPEED = 1e-3;
/**
 * How far (rad, 0.1 degree) a joint the gearbox holds can be pushed before it slips: the friction motor's anchor
 * trails the joint beyond it (see the physics world), and the servo takes the joint back as sliding.
 */
export const GEARBOX_SLACK = 0.1 * (Math.PI / 180);
const AMBIENT_C = 25;
/** Thermal model: capacity J/K and resistance K/W to ambient (time constant ~5 min). */
const THERMAL_CAPACITY = 30;
const THERMAL_RESISTANCE = 10;
/**
 * Supply sag shown in present_voltage: volts lost at full stall current. The torque uses the model's supply: the
 * identified models were fitted on real supplies, sag included.
 */
const SUPPLY_SAG_AT_STALL = 0.6;
/**
 * The firmware's user gains are the registers scaled (P/8, I*1000/2048, D*4/1000: docs/reference/dynamixel.md 8.3);
 * the duty law uses the raw P (docs/reference/servo-models.md 1), so every user gain is multiplied back by 8.
 */
const USER_TO_RAW_P = 8;

/**
 * What the servo does to its joint during one physics step, as a linear law the physics solves implicitly:
 * torque = stiffness * (target - q) + damping * (targetVelocity - dq). It is the DC motor line at this step's duty:
 * within the P loop's linear range a spring (the duty's error gain) and a damper (back-EMF, plus Kd); with the duty
 * saturated, a damper pulling towards the speed the saturated duty reaches (the back-EMF line).
 */
/** The position loop's gains (per rad, as the duty law takes them) and its dead band (rad). */
interface Gains {
  readonly kp: number;
  readonly ki: number;
  readonly kd: number;
  readonly margin: number;
}

export interface DriveCommand {
  /** Raw-frame angle (rad, unwrapped like the measured angle) and speed (rad/s) the law pulls towards. */
  readonly target: number;
  readonly targetVelocity: number;
  /** N.m/rad and N.m.s/rad; both 0 when limp. */
  readonly stiffness: number;
  readonly damping: number;
  /** The motor torque (N.m) the law gives at this step's angle and speed (what the firmware reports). */
  readonly motorTorque: number;
  /** Gearbox friction budget (N.m, >= 0); sliding with the torque on, it is already folded into the law. */
  readonly frictionBudget: number;
  /**
   * Torque off: the law is void and the physics applies the friction alone, stopping the joint whenever the budget
   * can and letting it slide otherwise.
   */
  readonly limp: boolean;
  /**
   * Torque on and the gearbox stuck: the law is void; the physics applies the friction as when limp (capped at the
   * budget at rest) and the motor's torque beside it as a constant, so the friction is a constraint solved with the
   * contacts and the other joints (docs/decisions/0002-gearbox-hold-in-the-solver.md).
   */
  readonly held: boolean;
  /** Held, but the motor at rest and the load beyond the budget: the physics lets the friction follow the joint. */
  readonly slipping: boolean;
}

export interface ServoOptions {
  readonly id: number;
  readonly spec: ModelSpec;
  /** Raw-frame angle limits, degrees (the CW/CCW limit registers). */
  readonly angleLimit: readonly [number, number];
  /** This servo's own parameters (a calibration, or the emulator's --servo-params); absent: the model's. */
  readonly params?: ServoParams;
}

/** The model with a servo's own armature, gain and friction terms. */
export function withParams(model: ServoModel, p: ServoParams | undefined): ServoModel {
  if (!p) return model;
  return {
    ...model,
    armature: p.armature,
    errorGain: p.errorGain,
    friction: { ...model.friction, ...p.friction },
  };
}

/**
 * The firmware's state that no register shows: the speed profile's setpoint, the I term, the gearbox's hold (how far
 * the joint is from where it took hold) and whether the torque was on. A scratch copy of a servo (the guard's) takes
 * it over, so that its first steps start as the copied servo's next ones would.
 */
export interface FirmwareState {
  /** rad, encoder frame. */
  readonly setpoint: number;
  /** rad.s */
  readonly integral: number;
  /** rad from where the gearbox took hold to the joint; NaN: not held. */
  readonly heldBy: number;
  /** rad/s */
  readonly lastSpeed: number;
  readonly enabled: boolean;
}

export class SimServo {
  readonly id: number;
  readonly spec: ModelSpec;
  readonly model: ServoModel;
  /** Radians the encoder reads above the joint: the firmware sees and drives joint + offset. */
  readonly offset: number;
  // Registers in counts, as the control table holds them.
  torqueEnable = 0;
  goalPosition: number;
  movingSpeed = 0;
  torqueLimit = 1023;
  // Tuples are replaced whole, never changed in place: the loop's gains are worked out again on a new one.
  pid: readonly [number, number, number] = [0, 0, 32]; // [D, I, P]
  complianceMargin: readonly [number, number] = [1, 1];
  complianceSlope: readonly [number, number] = [32, 32];
  led = 0;
  controlMode = 2;
  angleLimit: [number, number];

  // Physical state.
  #setpoint = 0; // rad, where the speed-limited profile is now
  #integral = 0; // rad.s
  #lastQdot = 0; // rad/s, the joint's speed at the last step
  /** Where the gearbox took hold of the joint with the torque on (rad), NaN while it slides. */
  #heldAt = NaN;
  #q = 0;
  #qdot = 0;
  #torque = 0; // N.m the motor is producing
  #temperature = AMBIENT_C;
  #voltage: number;
  #wasEnabled = false;
  readonly #stall: number;
  /** The gains and the register tuples they were worked out from. */
  #gainsFor: { pid: object; slope: object; margin: object; gains: Gains } | undefined;

  constructor(opts: ServoOptions) {
    this.id = opts.id;
    this.spec = opts.spec;
    this.model = withParams(servoModel(opts.spec), opts.params);
    this.offset = (opts.params?.offsetDeg ?? 0) * DEG;
    this.#stall = stallTorque(this.model);
    this.goalPosition = degToPosition(opts.spec, 0);
    this.angleLimit = [
      degToPosition(opts.spec, opts.angleLimit[0]),
      degToPosition(opts.spec, opts.angleLimit[1]),
    ];
    this.#voltage = this.model.vin;
    if (opts.spec.control === 'compliance') this.pid = [0, 0, 0];
  }

  /** The angle the encoder reads (rad, raw frame): the joint's plus the offset. */
  get angle(): number {
    return this.#q;
  }

  get temperature(): number {
    return this.#temperature;
  }

  /** Motor torque (N.m) of the last step. */
  get torque(): number {
    return this.#torque;
  }

  /** Joint speed (rad/s) measured at the last step. */
  get speed(): number {
    return this.#qdot;
  }

  /** Supply voltage (V) the last step left on the servo's terminals (present_voltage). */
  get voltage(): number {
    return this.#voltage;
  }

  /** The model's stall torque (N.m): what present_load and present_current are shares of. */
  get stall(): number {
    return this.#stall;
  }

  /** Sets the joint's angle (rad) before the first step, or after a pose: nothing moves by itself. */
  placeAt(joint: number, speed = 0): void {
    const q = joint + this.offset;
    this.#q = q;
    this.#qdot = speed;
    this.#setpoint = q;
    this.#integral = 0;
    this.#lastQdot = speed;
    this.#heldAt = NaN;
    this.goalPosition = degToPosition(this.spec, q / DEG);
  }

  firmwareState(): FirmwareState {
    return {
      setpoint: this.#setpoint,
      integral: this.#integral,
      heldBy: this.#q - this.#heldAt,
      lastSpeed: this.#lastQdot,
      enabled: this.#wasEnabled,
    };
  }

  /** Takes over another servo's firmware state, at this servo's angle (after placeAt). */
  takeFirmwareState(state: FirmwareState): void {
    this.#setpoint = state.setpoint;
    this.#integral = state.integral;
    this.#heldAt = this.#q - state.heldBy;
    this.#lastQdot = state.lastSpeed;
    this.#wasEnabled = state.enabled;
  }

  /**
   * Sets the I term so that the motor's duty here gives the load the real servo reports (percent of stall torque):
   * the one hidden state a reading pins down. A limp servo, or one without an I term, keeps its own.
   */
  matchLoad(loadPercent: number, at?: { angle: number; speed: number }): void {
    // `at`: the real servo's own encoder angle (rad) and speed (rad/s), where it read that load: the I term it holds.
    const q = at ? at.angle : this.#q;
    const qdot = at ? at.speed : this.#qdot;
    const { kp, ki, kd, error, maxDuty, gain } = this.#loop(q);
    if (!this.#wasEnabled || ki <= 0) return;
    const m = this.model;
    // torque = kt.duty.vin/r - kt^2.dq/r (motorTorque), solved for the duty.
    const duty = (((loadPercent / 100) * this.#stall + (m.kt * m.kt * qdot) / m.r) * m.r) / (m.kt * m.vin);
    const limit = maxDuty / (gain * ki);
    this.#integral = Math.min(limit, Math.max(-limit, (duty / gain - kp * error + kd * qdot) / ki));
  }

  /**
   * One physics step: measured angle and speed, the external (gravity) torque about the axis and the inertia the
   * joint moves, in; the motor's law with its friction out, or the gearbox holding the joint. Angles are the joint's
   * own (never wrapped): a goal 280 degrees away is driven 280 degrees the way the firmware counts, never the short
   * way round.
   */
  step(
    dt: number,
    joint: number,
    qdot: number,
    externalTorque = 0,
    inertia = this.model.armature,
  ): DriveCommand {
    // The law's target is in the encoder's frame; the physics pulls the joint.
    return this.#step(dt, joint + this.offset, qdot, externalTorque, inertia);
  }

  /**
   * The step in the encoder's frame; the command it returns pulls the joint (its target less the offset). The law is
   * kept in locals: this runs for every servo at every physics step.
   */
  #step(dt: number, q: number, qdot: number, externalTorque: number, inertia: number): DriveCommand {
    this.#q = q;
    this.#qdot = qdot;
    // A reversal of a real motion, not the solver's residue about a joint already still.
    const reversed = qdot * this.#lastQdot < -(REVERSAL_SPEED * REVERSAL_SPEED);
    this.#lastQdot = qdot;
    const m = this.model;
    const enabled = this.torqueEnable !== 0 && this.controlMode === 2;
    let target = q;
    let targetVelocity = 0;
    let stiffness = 0;
    let damping = 0;
    let torque = 0;
    if (!enabled) {
      this.#wasEnabled = false;
      this.#integral = 0;
    } else {
      if (!this.#wasEnabled) {
        this.#setpoint = q;
        this.#wasEnabled = true;
      }
      const [lo, hi] = this.angleLimit;
      const goal = positionToDeg(this.spec, Math.min(hi, Math.max(lo, this.goalPosition))) * DEG;
      // moving_speed is the firmware's profile speed; 0 means no profile (the motor line is the only limit).
      const speedDeg =
        this.movingSpeed % 1024 === 0 ? Infinity : speedToDegS(this.spec, this.movingSpeed % 1024);
      const maxStep = speedDeg * DEG * dt;
      const delta = goal - this.#setpoint;
      this.#setpoint += Math.abs(delta) <= maxStep ? delta : Math.sign(delta) * maxStep;

      const { kp, ki, kd, margin } = this.#gains();
      const error = this.#loopError(q, margin);
      const maxDuty = this.#maxDuty();
      const gain = this.model.errorGain * USER_TO_RAW_P;
      if (ki > 0) {
        // Anti-windup by conditional integration (our choice; the firmware's is not documented): the integral grows
        // only while the duty is not saturated (or growing brings it back), and never asks more than the duty ceiling.
        // It integrates the error in whole encoder counts, as the firmware sees it, so in the goal's count it stops.
        const seen =
          (degToPosition(this.spec, this.#setpoint / DEG) - degToPosition(this.spec, q / DEG)) *
          positionResolution(this.spec) *
          DEG;
        const limit = maxDuty / (gain * ki);
        const unsaturated = Math.abs(gain * (kp * error + ki * this.#integral)) < maxDuty;
        if (unsaturated || Math.sign(seen) !== Math.sign(this.#integral))
          this.#integral = Math.min(limit, Math.max(-limit, this.#integral + seen * dt));
      }
      const duty = gain * (kp * error + ki * this.#integral - kd * qdot);
      const perDuty = (m.kt * m.vin) / m.r; // N.m per unit of duty
      const backEmf = (m.kt * m.kt) / m.r; // N.m.s/rad
      if (Math.abs(duty) < maxDuty) {
        // Linear range: duty * perDuty - backEmf * dq as a spring-damper.
        stiffness = perDuty * gain * kp;
        damping = backEmf + perDuty * gain * kd;
        const rest = perDuty * gain * ki * this.#integral;
        if (stiffness > 0) target = q + error + rest / stiffness;
        else targetVelocity = rest / damping;
      } else {
        // Saturated: the back-EMF line towards the speed the duty ceiling reaches with no load.
        targetVelocity = (Math.sign(duty) * maxDuty * m.vin) / m.kt;
        damping = backEmf;
      }
      torque = motorTorque(m, Math.min(maxDuty, Math.max(-maxDuty, duty)), qdot);
    }
    this.#torque = torque;
    this.#heat(dt);
    const budget = frictionBudget(m.friction, qdot, torque, externalTorque);
    const offset = this.offset;
    if (!enabled) {
      this.#heldAt = NaN;
      return {
        target: target - offset,
        targetVelocity,
        stiffness,
        damping,
        limp: true,
        held: false,
        slipping: false,
        motorTorque: 0,
        frictionBudget: budget,
      };
    }
    // The gearbox takes hold when the budget can stop the joint within the step, or when its speed changed sign (it
    // passed through rest: a predicted stop alone overshoots where a light parent gives way), and keeps it until it
    // is pushed past the slack (docs/decisions/0002-gearbox-hold-in-the-solver.md).
    const stopping = inertia / dt; // N.m per rad/s
    const net = stiffness * (target - q) + damping * (targetVelocity - qdot) + externalTorque;
    const stays = Math.abs(q - this.#heldAt) < GEARBOX_SLACK;
    if (stays || reversed || Math.abs(net + stopping * qdot) <= budget) {
      if (!stays) this.#heldAt = q;
      // The motor's torque and its load on the gearbox at rest: the solver's residue about a held joint is no motion.
      const atRest = stiffness * (target - q) + damping * targetVelocity;
      const heldBudget = frictionBudget(m.friction, 0, atRest, externalTorque);
      return {
        target: target - offset,
        targetVelocity,
        stiffness,
        damping,
        limp: false,
        held: true,
        slipping: Math.abs(atRest + externalTorque) > heldBudget,
        motorTorque: atRest,
        frictionBudget: heldBudget,
      };
    }
    this.#heldAt = NaN;
    // Sliding: the budget opposes the motion (or, at rest, the net torque) as a constant torque taken off the law.
    const friction = -Math.sign(net + stopping * qdot) * budget;
    return {
      target: (stiffness > 0 ? target + friction / stiffness : target) - offset,
      targetVelocity: stiffness > 0 ? targetVelocity : targetVelocity + friction / damping,
      stiffness,
      damping,
      limp: false,
      held: false,
      slipping: false,
      motorTorque: torque,
      frictionBudget: budget,
    };
  }

  /** The position loop at encoder angle q: its gains, the error past the margin, the duty ceiling and the gain. */
  #loop(q: number) {
    const { kp, ki, kd, margin } = this.#gains();
    const error = this.#loopError(q, margin);
    return { kp, ki, kd, error, maxDuty: this.#maxDuty(), gain: this.model.errorGain * USER_TO_RAW_P };
  }

  /** The loop's error at encoder angle q past the dead band `margin` (rad). */
  #loopError(q: number, margin: number): number {
    const e = this.#setpoint - q;
    return Math.abs(e) < margin ? 0 : e - Math.sign(e) * margin;
  }

  /** torque_limit caps the duty as the firmware does (the PWM ceiling scales with it). */
  #maxDuty(): number {
    return this.model.maxPwm * (this.torqueLimit / 1023);
  }

  /** The loop's gains from the registers, worked out again only when a register's tuple is replaced. */
  #gains(): Gains {
    const cached = this.#gainsFor;
    if (
      cached &&
      cached.pid === this.pid &&
      cached.slope === this.complianceSlope &&
      cached.margin === this.complianceMargin
    )
      return cached.gains;
    let gains: Gains;
    if (this.spec.control === 'compliance') {
      // AX firmware: the compliance slope sets the error-to-torque slope (slope 32 = P 32) and the margin is a dead
      // band around the goal; mapped onto the same duty law as the MX P loop.
      const p = complianceSlopeToP(Math.min(...this.complianceSlope));
      const margin = Math.min(...this.complianceMargin) * positionResolution(this.spec) * DEG;
      gains = { kp: p / USER_TO_RAW_P, ki: 0, kd: 0, margin };
    } else {
      const [kp, ki, kd] = rawPidToGains(this.pid);
      gains = { kp, ki, kd, margin: 0 };
    }
    this.#gainsFor = { pid: this.pid, slope: this.complianceSlope, margin: this.complianceMargin, gains };
    return gains;
  }

  #heat(dt: number): void {
    const fraction = Math.abs(this.#torque) / this.#stall;
    const power = this.spec.stallPower * fraction * fraction;
    const dT = (power - (this.#temperature - AMBIENT_C) / THERMAL_RESISTANCE) / THERMAL_CAPACITY;
    this.#temperature += dT * dt;
    this.#voltage = this.model.vin - SUPPLY_SAG_AT_STALL * Math.min(1, fraction);
  }
}

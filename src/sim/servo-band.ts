/**
 * How close a servo's position loop brings a joint to its goal at rest, per model and gain (docs/twin.md "Why an Ergo
 * Jr goto ends a couple of degrees off"): the dead band the scenario checks allow, and the tolerance a waited goto's
 * answer holds each motor to (docs/api.md "Honest answers"). The models are of the real servos, so both backends use it.
 */
import type { Motor } from '../robot/motor.ts';
import { servoModel, type ServoModel } from './servo-models.ts';

/** The raw P gain of a motor's loop: Kp x 8 (docs/reference/dynamixel.md 8.5); an AX's default slope 32 acts as P 32. */
export function rawPGain(motor: Motor): number {
  return motor.spec.control === 'pid' ? motor.commands.pid[0] * 8 : 32;
}

/** Drive torque per radian of error at rest (N.m/rad): the DC motor line times the firmware's P loop. */
export function pSlope(model: ServoModel, rawKp: number): number {
  return ((model.kt * model.vin) / model.r) * model.errorGain * rawKp;
}

/**
 * Degrees: where the P loop's torque no longer beats the gearbox's friction at rest with no load (docs/reference/
 * servo-models.md 2: Coulomb and Stribeck, plus the share of the motor's own torque the M6 terms take). XL-320 at
 * P 32: 2.45; the MX family's friction takes half the motor's torque, which doubles its band.
 */
export function deadBandDeg(motor: Motor): number {
  return restBandDeg(servoModel(motor.spec), rawPGain(motor));
}

/** deadBandDeg of a model (a calibrated one: its own friction and gain) at a raw P gain. */
export function restBandDeg(model: ServoModel, rawKp: number): number {
  const f = model.friction;
  // A zero gain holds nothing: counted as the smallest gain, so the band stays a (wide) number.
  const slope = pSlope(model, Math.max(1, rawKp)) * (1 - f.kMot - f.kMotS);
  return ((f.kc + f.kcs) / slope) * (180 / Math.PI);
}

/** Degrees: the dead band plus one encoder count, the step of the position the servo reports (XL-320: 2.74). */
export function gotoToleranceDeg(motor: Motor): number {
  return deadBandDeg(motor) + motor.spec.positionSpan / (motor.spec.positionSteps - 1);
}

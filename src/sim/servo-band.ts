/**
 * How close a servo's position loop brings a joint to its goal at rest, per model and gain (docs/twin.md "Why an Ergo
 * Jr goto ends a couple of degrees off"): the dead band the scenario checks allow, and the tolerance a waited goto's
 * answer holds each motor to (docs/api.md "Honest answers"). The models are of the real servos, so both backends use it.
 */
import { positionResolution } from '../dynamixel/registers.ts';
import type { Motor } from '../robot/motor.ts';
import { frictionBudget, servoModel, stallTorque, type ServoModel } from './servo-models.ts';

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

/**
 * Degrees from the goal, low and high, where the gearbox holds a still joint under a steady torque (N.m along the
 * joint: the weight of its links) with a P loop alone: the loop's torque bears that torque and the friction, which the
 * load itself raises (docs/reference/servo-models.md 2, the M5/M6 terms), holds the rest. With no torque: +-restBandDeg.
 * Undefined when the motor at full duty cannot bear the torque.
 */
export function restSpanDeg(model: ServoModel, rawKp: number, torque: number): [number, number] | undefined {
  const stall = stallTorque(model);
  if (Math.abs(torque) >= stall) return undefined;
  const slope = pSlope(model, Math.max(1, rawKp));
  const holds = (tauM: number) => Math.abs(tauM + torque) <= frictionBudget(model.friction, 0, tauM, torque);
  // The motor torques that hold, from the one balancing the load outward: the edge of each side by doubling, then
  // bisection (the budget grows slower than the net torque, so each side is one interval).
  const edge = (dir: 1 | -1): number => {
    let inside = -torque;
    let step = stall * 1e-3;
    let outside = inside + dir * step;
    while (holds(outside)) {
      if (Math.abs(outside) >= stall) return dir * stall;
      inside = outside;
      step *= 2;
      outside = Math.max(-stall, Math.min(stall, -torque + dir * step));
    }
    for (let k = 0; k < 30; k++) {
      const mid = (inside + outside) / 2;
      if (holds(mid)) inside = mid;
      else outside = mid;
    }
    return inside;
  };
  // The loop's torque at rest is slope x (goal - q): the more torque, the further below the goal.
  const toDeg = (tauM: number) => (-tauM / slope) * (180 / Math.PI);
  return [toDeg(edge(1)), toDeg(edge(-1))];
}

/** Degrees: the dead band plus one encoder count, the step of the position the servo reports (XL-320: 2.74). */
export function gotoToleranceDeg(motor: Motor): number {
  return deadBandDeg(motor) + positionResolution(motor.spec);
}

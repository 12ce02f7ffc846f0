/**
 * The fit's forward model: one joint of the robot as one ODE (the servo model's firmware P law, DC motor line,
 * gearbox friction budget; the URDF's links beyond the joint as the load, the other joints where the run held
 * them), the same law the twin's servo follows (docs/reference/servo-models.md), fast enough to run hundreds of
 * times per fit. Replays a run's logged commands and returns the positions the encoder would read.
 */
import type { ServoParams } from '../config/calibration.ts';
import { type ModelSpec, degToPosition, positionToDeg } from '../dynamixel/registers.ts';
import { frictionBudget, servoModel } from '../sim/servo-models.ts';
import { withParams } from '../sim/servo.ts';
import type { LoadLaw } from '../lab/fidelity.ts';
import type { MotorLog } from './run.ts';

const DEG = Math.PI / 180;
/** The firmware's raw P at the default gains (P register 32; AX compliance slope 32). */
const P_RAW = 32;
/** Substeps per log sample: 0.25 ms at the 20 ms sample (the reference integrator's step). */
const SUB = 80;

/** The load law tabulated every half degree over the joint's span (the URDF's kinematics are slow to ask). */
export function tabulate(law: LoadLaw, limits: readonly [number, number]): LoadLaw {
  const lo = (limits[0] - 10) * DEG;
  const step = 0.5 * DEG;
  const n = Math.ceil(((limits[1] + 10) * DEG - lo) / step) + 1;
  const table = Float64Array.from({ length: n }, (_, i) => law.torque(lo + i * step));
  return {
    inertia: law.inertia,
    torque(q) {
      const x = Math.min(n - 1.000001, Math.max(0, (q - lo) / step));
      const i = Math.floor(x);
      return table[i]! + (table[i + 1]! - table[i]!) * (x - i);
    },
  };
}

/** Encoder readings (raw degrees, unquantised) at the log's sample times, for servo parameters `p`. */
export function simulate(spec: ModelSpec, p: ServoParams, load: LoadLaw, log: MotorLog): Float64Array {
  const m = withParams(servoModel(spec), p);
  const off = p.offsetDeg * DEG;
  const inertia = load.inertia + m.armature;
  const out = new Float64Array(log.t.length);
  // The joint starts where the first reading says (encoder minus offset), at rest.
  let q = log.position[0]! * DEG - off;
  let dq = 0;
  for (let k = 0; k < log.t.length; k++) {
    out[k] = (q + off) / DEG;
    const u = log.command[k]!;
    const dt = k + 1 < log.t.length ? log.t[k + 1]! - log.t[k]! : 0;
    const h = dt / SUB;
    const goal = positionToDeg(spec, degToPosition(spec, u.goal)) * DEG;
    const maxDuty = m.maxPwm * (u.torqueLimit / 1023);
    for (let s = 0; s < SUB && h > 0; s++) {
      let tauM = 0;
      if (u.torqueOn) {
        const duty = Math.max(-maxDuty, Math.min(maxDuty, (goal - q - off) * P_RAW * m.errorGain));
        tauM = (m.kt * (duty * m.vin - m.kt * dq)) / m.r;
      }
      const tauE = load.torque(q);
      const budget = frictionBudget(m.friction, dq, tauM, tauE);
      const drive = tauM + tauE;
      const stop = (-dq * inertia) / h - drive;
      if (Math.abs(stop) <= budget) dq = 0;
      else dq += ((drive + Math.sign(stop) * budget) / inertia) * h;
      q += dq * h;
    }
  }
  return out;
}

/**
 * The identification testbench of docs/reference/servo-models.md 4, reproduced twice: a pendulum on one servo in the twin's
 * physics world (Rapier bodies and joint, the SimServo firmware model, the friction motor) and a one-joint
 * reference integration written straight from the published equations. Comparing the two checks the 3D physics,
 * the solver and the servo code against the model. Used by test/lab/fidelity*.test.ts and `npm run bench -- fidelity`.
 */
import type { ModelSpec } from '../dynamixel/registers.ts';
import { degToPosition, modelSpec, positionToDeg } from '../dynamixel/registers.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { PhysicsWorld } from '../sim/world.ts';
import { SimServo } from '../sim/servo.ts';
import {
  type ServoModel,
  effectiveStallTorque,
  frictionBudget,
  noLoadSpeed,
  servoModel,
  stallTorque,
} from '../sim/servo-models.ts';

const DEG = Math.PI / 180;
const G = 9.80665;

export type ModelName = ModelSpec['name'];
export const FIDELITY_MODELS: readonly ModelName[] = ['XL-320', 'AX-12', 'MX-28', 'MX-64'];

/** A point mass at `length` from the axis (q = 0 hangs down). */
export interface Pendulum {
  readonly mass: number;
  readonly length: number;
}

/** Any load on one joint: its inertia about the axis (kg.m^2, armature apart) and gravity's torque (N.m) at q (rad). */
export interface LoadLaw {
  readonly inertia: number;
  torque(q: number): number;
}

function lawOf(load: Pendulum | LoadLaw): LoadLaw {
  if ('inertia' in load) return load;
  return {
    inertia: load.mass * load.length * load.length,
    torque: (q) => -load.mass * G * load.length * Math.sin(q),
  };
}

/** Loads sized like the identification bench: about half the stall torque with the arm horizontal. */
export function benchPendulum(model: ModelName): Pendulum {
  const stall = effectiveStall(model);
  const length = model === 'XL-320' ? 0.1 : 0.15;
  return { mass: (0.5 * stall) / (G * length), length };
}

/** What the bench does to the servo over time: goal (deg), torque on/off, and an external torque (N.m). */
export interface Program {
  readonly duration: number;
  readonly start: number; // deg
  at(t: number): { goal: number; torqueOn: boolean; external: number };
  /** The torque_limit register (counts of 1023) throughout; full when absent. */
  readonly torqueLimit?: number;
}

export interface Run {
  readonly t: number[];
  readonly q: number[]; // deg
  readonly dq: number[]; // deg/s
}

/** Shared firmware settings: P 32 (the default), no profile speed, full torque limit. */
const P_RAW = 32;

function setUp(servo: SimServo): void {
  servo.pid = [0, 0, P_RAW];
  servo.complianceSlope = [32, 32];
  servo.complianceMargin = [0, 0];
  servo.angleLimit = [0, servo.spec.positionSteps - 1];
}

/**
 * One continuous joint about x, from a fixed stand to an arm whose mass sits `length` below the axis at zero (a small
 * ball rather than a true point, so that no axis has zero inertia).
 */
export function pendulumUrdf(mass: number, length: number): UrdfRobot {
  return {
    name: 'bench',
    root: 'stand',
    links: new Map([
      ['stand', { name: 'stand', visuals: [], collisions: [] }],
      [
        'arm',
        {
          name: 'arm',
          visuals: [],
          collisions: [],
          inertial: { mass, com: [0, 0, -length], inertia: [1e-7, 0, 0, 1e-7, 0, 1e-7] },
        },
      ],
    ]),
    joints: [
      {
        name: 'q',
        type: 'continuous',
        parent: 'stand',
        child: 'arm',
        xyz: [0, 0, 0],
        rpy: [0, 0, 0],
        axis: [1, 0, 0],
      },
    ],
  };
}

/** The pendulum in the physics world, stepped as the twin steps (2 ms). */
export async function runTwin(model: ModelName, load: Pendulum, program: Program, dt = 0.002): Promise<Run> {
  const spec = modelSpec(model);
  const m = servoModel(spec);
  const urdf = pendulumUrdf(load.mass, load.length);
  const world = await PhysicsWorld.create(urdf, {
    dt,
    armature: new Map([['q', m.armature]]),
    initialAngles: new Map([['q', program.start * DEG]]),
    gravity: G,
  });
  const servo = new SimServo({ id: 1, spec, angleLimit: [-180, 180] });
  setUp(servo);
  servo.placeAt(program.start * DEG);
  servo.torqueLimit = program.torqueLimit ?? 1023;
  const run: Run = { t: [], q: [], dq: [] };
  try {
    const steps = Math.round(program.duration / dt);
    for (let k = 0; k < steps; k++) {
      const t = k * dt;
      const u = program.at(t);
      servo.torqueEnable = u.torqueOn ? 1 : 0;
      servo.goalPosition = goalCounts(spec, u.goal);
      world.setExternalTorque(0, u.external);
      const q = world.angle(0);
      const dq = world.velocity(0);
      run.t.push(t);
      run.q.push(q / DEG);
      run.dq.push(dq / DEG);
      const carried = world.load(0);
      world.drive(0, servo.step(dt, q, dq, carried.torque, carried.inertia));
      world.step();
    }
  } finally {
    world.free();
  }
  return run;
}

function goalCounts(spec: ModelSpec, deg: number): number {
  return Math.min(spec.positionSteps - 1, Math.max(0, degToPosition(spec, deg)));
}

/**
 * The same bench as one ODE, from docs/reference/servo-models.md alone: duty = clamp(error * Kp * error_gain), the DC motor line,
 * gravity on the point mass, and the friction budget clipping the torque that would stop the joint (the way the
 * identification simulator applies it). Integrated at a finer step than the twin; samples every `dt`.
 */
export function runReference(model: ModelName, load: Pendulum | LoadLaw, program: Program, dt = 0.002): Run {
  const spec = modelSpec(model);
  const m: ServoModel = servoModel(spec);
  const sub = 8;
  const h = dt / sub;
  const law = lawOf(load);
  const inertia = law.inertia + m.armature;
  const maxDuty = m.maxPwm * ((program.torqueLimit ?? 1023) / 1023);
  // The firmware holds goals in register counts, within its span: the goal goes through the bus's own conversion
  // (count 512 of an XL-320 is +0.15 degrees, not 0: a grid of its own here put goals half a count off the twin's).
  let q = program.start * DEG;
  let dq = 0;
  const run: Run = { t: [], q: [], dq: [] };
  const steps = Math.round(program.duration / dt);
  for (let k = 0; k < steps; k++) {
    const t = k * dt;
    const u = program.at(t);
    run.t.push(t);
    run.q.push(q / DEG);
    run.dq.push(dq / DEG);
    const goal = positionToDeg(spec, goalCounts(spec, u.goal)) * DEG;
    for (let s = 0; s < sub; s++) {
      let tauM = 0;
      if (u.torqueOn) {
        const duty = Math.max(-maxDuty, Math.min(maxDuty, (goal - q) * P_RAW * m.errorGain));
        tauM = (m.kt * (duty * m.vin - m.kt * dq)) / m.r;
      }
      const tauE = law.torque(q) + u.external;
      const budget = frictionBudget(m.friction, dq, tauM, tauE);
      const drive = tauM + tauE;
      // Torque that would bring the joint to rest within this step.
      const stop = (-dq * inertia) / h - drive;
      if (Math.abs(stop) <= budget) dq = 0;
      else dq += ((drive + Math.sign(stop) * budget) / inertia) * h;
      q += dq * h;
    }
  }
  return run;
}

// ---- Trajectories (docs/reference/servo-models.md 4) ----

export function stepProgram(from: number, to: number, duration = 1.5): Program {
  return { duration, start: from, at: (t) => ({ goal: t < 0.1 ? from : to, torqueOn: true, external: 0 }) };
}

/** Lift to horizontal and hold, then torque off at the top: the fall shows the back-driven friction. */
export function liftAndDropProgram(): Program {
  return {
    duration: 3,
    start: 0,
    at: (t) => ({ goal: t < 0.1 ? 0 : 90, torqueOn: t < 1.5, external: 0 }),
  };
}

export function sineProgram(amplitude = 45, hz = 0.5, duration = 4): Program {
  return {
    duration,
    start: 0,
    at: (t) => ({ goal: amplitude * Math.sin(2 * Math.PI * hz * t), torqueOn: true, external: 0 }),
  };
}

/** Sine with time squared: the frequency sweeps up (a chirp). */
export function chirpProgram(amplitude = 30, duration = 4): Program {
  return {
    duration,
    start: 0,
    at: (t) => ({ goal: amplitude * Math.sin(0.6 * t * t * Math.PI), torqueOn: true, external: 0 }),
  };
}

export function rmsDifference(a: Run, b: Run): number {
  const n = Math.min(a.q.length, b.q.length);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += (a.q[i]! - b.q[i]!) ** 2;
  return Math.sqrt(sum / n);
}

// ---- The figures of the fidelity table ----

export interface Figures {
  /** deg/s, the light arm's peak speed on a long step. */
  readonly noLoadSpeed: number;
  /** N.m, the opposing torque that brings a saturated servo to a stop (net of its gearbox friction). */
  readonly stallTorque: number;
  /** deg/s against half the effective stall torque. */
  readonly speedAtHalfStall: number;
  /** deg past the final angle on a 30-degree step, and seconds to stay within 1 degree of it. */
  readonly overshoot: number;
  readonly settling: number;
  /** deg below the goal, arm held horizontal. */
  readonly holdError: number;
  /** seconds for the limp arm to fall from horizontal to 45 degrees (Infinity: friction holds it). */
  readonly dropTime: number;
  /** RMS (deg) twin vs reference on the lift-and-drop, step, sine and chirp trajectories (0 for the reference). */
  readonly rms: { liftAndDrop: number; step: number; sine: number; chirp: number };
}

type Runner = (load: Pendulum, program: Program) => Promise<Run> | Run;

const LIGHT: Pendulum = { mass: 0.001, length: 0.01 };
/**
 * deg: the stall and half-stall runs head from -170 to 170 (clamped to 150 on the AX and XL ranges); past this the arm
 * nears its goal, and a stop there is an arrival.
 */
const STALL_CLEAR_OF_GOAL = 100;

export async function measure(model: ModelName, runner: Runner): Promise<Omit<Figures, 'rms'>> {
  const load = benchPendulum(model);
  const stall = effectiveStall(model);

  const free = await runner(LIGHT, {
    duration: 1.5,
    start: -170,
    at: () => ({ goal: 170, torqueOn: true, external: 0 }),
  });
  const noLoad = Math.max(...free.dq);

  // Gravity off (a light arm), an opposing torque ramped up slowly from half the stall torque: where the saturated
  // servo stops, well before its goal. Ramped from zero at this rate, the arm reached its goal first (after about
  // 1 s) and that arrival was taken for the stall: the table read a third of the real figure for every model.
  const rampRate = stall / 2; // N.m per second
  const rampFrom = 0.5 * stall;
  const ramp = await runner(LIGHT, {
    duration: 3,
    start: -170,
    at: (t) => ({ goal: 170, torqueOn: true, external: -(rampFrom + Math.max(0, t - 0.3) * rampRate) }),
  });
  let stallAt = NaN;
  for (let i = 1; i < ramp.t.length; i++)
    if (ramp.t[i]! > 0.35 && ramp.dq[i]! <= 0) {
      // A stop near the goal is an arrival, not a stall: the figure stays NaN and the comparison fails.
      if (ramp.q[i]! < STALL_CLEAR_OF_GOAL) stallAt = rampFrom + Math.max(0, ramp.t[i]! - 0.3) * rampRate;
      break;
    }

  const half = await runner(LIGHT, {
    duration: 1.5,
    start: -170,
    at: () => ({ goal: 170, torqueOn: true, external: -0.5 * stall }),
  });
  // The steady speed: past the start's acceleration and clear of the goal. The second half of the run, taken before,
  // held the AX-12A's and the MX-64's arrival (226 and 254 deg/s read 199 and 203).
  const halfSpeed = mean(half.dq.filter((_, i) => half.t[i]! >= 0.3 && half.q[i]! < STALL_CLEAR_OF_GOAL));

  const step = await runner(load, stepProgram(0, 30));
  const final = mean(step.q.slice(-50));
  const overshoot = Math.max(0, Math.max(...step.q) - final);
  let settling = 0;
  for (let i = step.q.length - 1; i >= 0; i--)
    if (Math.abs(step.q[i]! - final) > 1) {
      settling = step.t[i]! - 0.1;
      break;
    }

  const hold = await runner(load, {
    duration: 2,
    start: 90,
    at: () => ({ goal: 90, torqueOn: true, external: 0 }),
  });
  const holdError = 90 - mean(hold.q.slice(-50));

  const drop = await runner(load, {
    duration: 2,
    start: 90,
    at: () => ({ goal: 90, torqueOn: false, external: 0 }),
  });
  const fell = drop.q.findIndex((q) => q <= 45);
  const dropTime = fell < 0 ? Infinity : drop.t[fell]!;

  return {
    noLoadSpeed: noLoad,
    stallTorque: stallAt,
    speedAtHalfStall: halfSpeed,
    overshoot,
    settling,
    holdError,
    dropTime,
  };
}

/** Trajectory errors of the twin against the reference, degrees RMS. */
export async function trajectoryRms(model: ModelName): Promise<Figures['rms']> {
  const load = benchPendulum(model);
  const pair = async (p: Program) =>
    rmsDifference(await runTwin(model, load, p), runReference(model, load, p));
  return {
    liftAndDrop: await pair(liftAndDropProgram()),
    step: await pair(stepProgram(0, 30)),
    sine: await pair(sineProgram()),
    chirp: await pair(chirpProgram()),
  };
}

/** The torque the servo delivers at rest and full duty, net of its gearbox friction. */
export function effectiveStall(model: ModelName): number {
  return effectiveStallTorque(servoModel(modelSpec(model)));
}

/**
 * The model's own figures at its supply: its motor line (what the equations say before the gearbox takes its share),
 * its datasheet's, and whether it was identified on a real servo or derived from that datasheet.
 */
export function modelFigures(model: ModelName): {
  stall: number;
  noLoadDegS: number;
  source: string;
  datasheet: ServoModel['datasheet'];
  measured: boolean;
} {
  const m = servoModel(modelSpec(model));
  return {
    stall: stallTorque(m),
    noLoadDegS: noLoadSpeed(m) / DEG,
    source: m.source,
    datasheet: m.datasheet,
    measured: m.measured,
  };
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}

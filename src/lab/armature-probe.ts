/**
 * Why the twin adds a share of each servo's armature about its link's other two axes (OFF_AXIS_ARMATURE_SHARE in
 * build-world.ts), and why Rapier's multibody joints are no way out in rapier.js 0.20. Printed by `npm run bench --
 * armature` (bench/armature.ts) and checked by test/lab/armature.test.ts.
 *
 * The probe: four light links stacked upright (30, 20, 10, 5 g, 5 cm apart), joint axes X, Y, X, Y, each joint an
 * XL-320 whose armature (BAM m6, 0.00116 kg.m^2) turns about its own axis. Joint 1 is sent 60 degrees, then joint 0
 * (0.5 s later): the servo's P law at P 32 through the DC motor line, capped at the stall torque. Joint 1's motion is
 * compared with a one-joint integration of the same bodies swung rigidly about its axis, its armature on the axis only.
 */
import RAPIER from '@dimforge/rapier3d-simd-compat';
import { modelSpec } from '../dynamixel/registers.ts';
import { servoModel, stallTorque } from '../sim/servo-models.ts';
import { initRapier } from '../sim/build-world.ts';
import { type V3, qconj, qmul, qrotate, twistAngle } from '../sim/quat.ts';

const DEG = Math.PI / 180;
const DT = 0.002;
const G = 9.81;
const SPACING = 0.05;
const MASSES = [0.03, 0.02, 0.01, 0.005];
const AXES: readonly (readonly [number, number, number])[] = [
  [1, 0, 0],
  [0, 1, 0],
  [1, 0, 0],
  [0, 1, 0],
];
/** A link's own inertia about each axis (kg.m^2): a few grams of bracket. */
const LINK_INERTIA = 2e-6;
const GOAL = 60 * DEG;

const XL320 = servoModel(modelSpec('XL-320'));
const STALL = stallTorque(XL320);
/** The P law in its linear range (N.m/rad) and the back-EMF (N.m.s/rad): docs/reference/servo-models.md 1 at P 32. */
const STIFFNESS = STALL * XL320.errorGain * 32;
const DAMPING = (XL320.kt * XL320.kt) / XL320.r;

export type ChainMode = 'impulse' | 'multibody-motor' | 'multibody-torque';

export interface ChainRun {
  readonly mode: ChainMode;
  readonly share: number;
  /** Joint 1 (deg) at 0.1, 0.2 and 0.4 s after its goal, and its highest angle over 0.5 s. */
  readonly at: readonly [number, number, number];
  readonly peak: number;
  /** RMS (deg) of joint 1 against the one-joint reference over the 0.5 s. */
  readonly rms: number;
  /** The largest |angle| (deg) any joint reached in the 0.5 s after joint 0's goal (60 for a chain that holds). */
  readonly worstAfterBase: number;
}

/** Joint 1 swung as one rigid body about its axis: the inertia the bodies below give it, gravity, the motor law. */
export function referenceJoint1(seconds: number): number[] {
  let inertia = 0;
  let moment = 0; // sum of m d: gravity torque is moment * g * sin(q) (the stack stands upright)
  for (let k = 1; k < 4; k++) {
    const d = SPACING * (k - 1) + SPACING / 2;
    const onAxis = AXES[k]![1] === 1 ? XL320.armature : 0;
    inertia += LINK_INERTIA + onAxis + MASSES[k]! * d * d;
    moment += MASSES[k]! * d;
  }
  const sub = 20;
  const h = DT / sub;
  let q = 0;
  let dq = 0;
  const out: number[] = [];
  for (let n = 0; n < Math.round(seconds / DT); n++) {
    for (let s = 0; s < sub; s++) {
      const motor = Math.max(-STALL, Math.min(STALL, STIFFNESS * (GOAL - q) - DAMPING * dq));
      dq += ((motor + moment * G * Math.sin(q)) / inertia) * h;
      q += dq * h;
    }
    out.push(q / DEG);
  }
  return out;
}

/** Joint angle from the two bodies' rotations (both start aligned with the world): the twist of parent^-1 child. */
function relativeAngle(parent: RAPIER.RigidBody, child: RAPIER.RigidBody, axis: V3): number {
  return twistAngle(qmul(qconj(parent.rotation()), child.rotation()), axis);
}

export async function runChain(mode: ChainMode, share: number): Promise<ChainRun> {
  await initRapier();
  const world = new RAPIER.World({ x: 0, y: 0, z: -G });
  world.timestep = DT;
  try {
    const bodies = [world.createRigidBody(RAPIER.RigidBodyDesc.fixed())];
    for (let i = 0; i < AXES.length; i++) {
      const a = AXES[i]!;
      const desc = RAPIER.RigidBodyDesc.dynamic()
        .setTranslation(0, 0, SPACING * (i + 1))
        .setCanSleep(false)
        .setAdditionalMassProperties(
          MASSES[i]!,
          { x: 0, y: 0, z: SPACING / 2 },
          {
            x: LINK_INERTIA + XL320.armature * (a[0] + share * (1 - a[0])),
            y: LINK_INERTIA + XL320.armature * (a[1] + share * (1 - a[1])),
            z: LINK_INERTIA + XL320.armature * share,
          },
          { x: 0, y: 0, z: 0, w: 1 },
        );
      bodies.push(world.createRigidBody(desc));
    }
    const motors: RAPIER.RevoluteImpulseJoint[] = [];
    for (let i = 0; i < AXES.length; i++) {
      const [x, y, z] = AXES[i]!;
      const data = () =>
        RAPIER.JointData.revolute({ x: 0, y: 0, z: SPACING }, { x: 0, y: 0, z: 0 }, { x, y, z });
      if (mode !== 'impulse') world.createMultibodyJoint(data(), bodies[i]!, bodies[i + 1]!, true);
      if (mode === 'multibody-torque') continue;
      const joint = world.createImpulseJoint(
        data(),
        bodies[i]!,
        bodies[i + 1]!,
        true,
      ) as RAPIER.RevoluteImpulseJoint;
      joint.configureMotorModel(RAPIER.MotorModel.ForceBased);
      joint.setMotorMaxForce(STALL);
      joint.setContactsEnabled(false);
      motors.push(joint);
    }
    const goals = [0, 0, 0, 0];
    const last = [0, 0, 0, 0];
    const angles = () => AXES.map((a, i) => relativeAngle(bodies[i]!, bodies[i + 1]!, a));
    const stepMotors = () => {
      const q = angles();
      if (mode === 'multibody-torque') {
        for (const b of bodies) b.resetTorques(false);
        for (let i = 0; i < AXES.length; i++) {
          const dq = (q[i]! - last[i]!) / DT;
          const tau = Math.max(-STALL, Math.min(STALL, STIFFNESS * (goals[i]! - q[i]!) - DAMPING * dq));
          const [x, y, z] = qrotate(bodies[i]!.rotation(), AXES[i]!);
          bodies[i + 1]!.addTorque({ x: x * tau, y: y * tau, z: z * tau }, true);
          if (i > 0) bodies[i]!.addTorque({ x: -x * tau, y: -y * tau, z: -z * tau }, true);
        }
      } else {
        for (let i = 0; i < AXES.length; i++) motors[i]!.configureMotor(goals[i]!, 0, STIFFNESS, DAMPING);
      }
      for (let i = 0; i < AXES.length; i++) last[i] = q[i]!;
    };
    for (let n = 0; n < 100; n++) {
      stepMotors();
      world.step();
    }
    const joint1: number[] = [];
    goals[1] = GOAL;
    for (let n = 0; n < 250; n++) {
      stepMotors();
      world.step();
      joint1.push(angles()[1]! / DEG);
    }
    goals[0] = GOAL;
    let worst = 0;
    for (let n = 0; n < 250; n++) {
      stepMotors();
      world.step();
      for (const q of angles()) worst = Math.max(worst, Math.abs(q / DEG));
    }
    const ref = referenceJoint1(0.5);
    const rms = Math.sqrt(joint1.reduce((s, q, k) => s + (q - ref[k]!) ** 2, 0) / joint1.length);
    return {
      mode,
      share,
      at: [joint1[49]!, joint1[99]!, joint1[199]!],
      peak: Math.max(...joint1),
      rms,
      worstAfterBase: worst,
    };
  } finally {
    world.free();
  }
}

export interface PendulumRun {
  readonly mode: 'impulse' | 'multibody';
  /** Angular acceleration over the first 20 ms against m g l / I (1 = right). */
  readonly ratio: number;
}

/** A horizontal pendulum (a 1 cm ball of 1000 kg/m^3, 5 cm from a Y axis) released: its first 20 ms. */
export async function runPendulum(mode: PendulumRun['mode']): Promise<PendulumRun> {
  await initRapier();
  const world = new RAPIER.World({ x: 0, y: 0, z: -G });
  world.timestep = DT;
  try {
    const base = world.createRigidBody(RAPIER.RigidBodyDesc.fixed());
    const bob = world.createRigidBody(RAPIER.RigidBodyDesc.dynamic().setCanSleep(false));
    const r = 0.01;
    const l = 0.05;
    world.createCollider(RAPIER.ColliderDesc.ball(r).setTranslation(l, 0, 0).setDensity(1000), bob);
    const data = RAPIER.JointData.revolute({ x: 0, y: 0, z: 0 }, { x: 0, y: 0, z: 0 }, { x: 0, y: 1, z: 0 });
    if (mode === 'multibody') world.createMultibodyJoint(data, base, bob, true);
    else world.createImpulseJoint(data, base, bob, true);
    const steps = 10;
    for (let n = 0; n < steps; n++) world.step();
    const m = bob.mass();
    const inertia = 0.4 * m * r * r + m * l * l;
    return { mode, ratio: bob.angvel().y / (((m * G * l) / inertia) * steps * DT) };
  } finally {
    world.free();
  }
}

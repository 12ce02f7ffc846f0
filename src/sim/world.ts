/**
 * The Rapier world of one robot, built from its URDF: one rigid body per link (the root fixed to the table),
 * one revolute impulse joint per URDF joint whose motor is driven by the servo model each step.
 */
import RAPIER from '@dimforge/rapier3d-compat';
import type { UrdfRobot, UrdfJoint } from '../urdf/types.ts';
import type { DriveCommand } from './servo.ts';
import {
  type Quat,
  type V3,
  IDENTITY,
  qaxisAngle,
  qalignX,
  qconj,
  qmul,
  qrotate,
  qrpy,
  symmetricEigen,
  twistAngle,
  vadd,
} from './quat.ts';

let rapierReady: Promise<void> | undefined;
/** Loads Rapier's WASM once per process (it is a module, not state of ours to reset). */
export function initRapier(): Promise<void> {
  rapierReady ??= RAPIER.init();
  return rapierReady;
}

export interface WorldOptions {
  /** Fixed physics timestep, seconds. */
  readonly dt: number;
  /** Reflected rotor inertia (kg.m^2) per joint name, added about the joint axis to the child link. */
  readonly rotorInertia: ReadonlyMap<string, number>;
  /** Initial joint angles (rad) by joint name; others start at 0. */
  readonly initialAngles?: ReadonlyMap<string, number>;
  readonly solverIterations?: number;
  /**
   * Fraction of the rotor inertia also added about the other two axes (default 1). The servo's own mass sits on
   * these light links; without it the impulse solver cannot hold joint limits on 4-gram links.
   */
  readonly isotropicRotor?: number;
}

interface JointRuntime {
  readonly urdf: UrdfJoint;
  readonly joint: RAPIER.RevoluteImpulseJoint;
  readonly parent: RAPIER.RigidBody;
  readonly child: RAPIER.RigidBody;
  /** Joint frame in the parent body (origin rotation, then x aligned to the axis) and in the child body. */
  readonly frame1: Quat;
  readonly frame2: Quat;
  lastTarget: number;
  lastVelocity: number;
  lastStiffness: number;
  lastDamping: number;
  lastMaxTorque: number;
  externalTorque: number;
}

const X_AXIS: V3 = [1, 0, 0];

export class PhysicsWorld {
  readonly dt: number;
  readonly #world: RAPIER.World;
  readonly #joints: JointRuntime[];
  readonly #byName: Map<string, number>;
  readonly #bodies: Map<string, RAPIER.RigidBody>;
  #freed = false;

  private constructor(
    world: RAPIER.World,
    joints: JointRuntime[],
    bodies: Map<string, RAPIER.RigidBody>,
    dt: number,
  ) {
    this.#world = world;
    this.#joints = joints;
    this.#bodies = bodies;
    this.dt = dt;
    this.#byName = new Map(joints.map((j, i) => [j.urdf.name, i]));
  }

  static async create(urdf: UrdfRobot, opts: WorldOptions): Promise<PhysicsWorld> {
    await initRapier();
    const world = new RAPIER.World({ x: 0, y: 0, z: -9.81 });
    world.timestep = opts.dt;
    world.integrationParameters.numSolverIterations = opts.solverIterations ?? 4;

    const childJoint = new Map(urdf.joints.map((j) => [j.child, j]));
    // World pose of every link frame, walking from the root with the initial angles.
    const poses = new Map<string, { p: [number, number, number]; q: Quat }>();
    const poseOf = (link: string): { p: [number, number, number]; q: Quat } => {
      const known = poses.get(link);
      if (known) return known;
      const j = childJoint.get(link);
      let pose: { p: [number, number, number]; q: Quat };
      if (!j) pose = { p: [0, 0, 0], q: { ...IDENTITY } };
      else {
        const parent = poseOf(j.parent);
        const angle = opts.initialAngles?.get(j.name) ?? 0;
        const q = qmul(qmul(parent.q, qrpy(j.rpy)), qaxisAngle(j.axis, angle));
        pose = { p: vadd(parent.p, qrotate(parent.q, j.xyz)), q };
      }
      poses.set(link, pose);
      return pose;
    };

    const bodies = new Map<string, RAPIER.RigidBody>();
    for (const link of urdf.links.values()) {
      const pose = poseOf(link.name);
      const desc = link.name === urdf.root ? RAPIER.RigidBodyDesc.fixed() : RAPIER.RigidBodyDesc.dynamic();
      desc
        .setTranslation(...pose.p)
        .setRotation(pose.q)
        .setCanSleep(false);
      if (link.name !== urdf.root) {
        const inertial = link.inertial;
        const j = childJoint.get(link.name);
        const rotor = j ? (opts.rotorInertia.get(j.name) ?? 0) : 0;
        const [ixx, ixy, ixz, iyy, iyz, izz] = inertial?.inertia ?? [1e-7, 0, 0, 1e-7, 0, 1e-7];
        const a = j ? normalized(j.axis) : X_AXIS;
        const iso = rotor * (opts.isotropicRotor ?? 1);
        const axial = rotor - iso;
        const tensor = [
          [ixx + iso + axial * a[0] * a[0], ixy + axial * a[0] * a[1], ixz + axial * a[0] * a[2]],
          [ixy + axial * a[1] * a[0], iyy + iso + axial * a[1] * a[1], iyz + axial * a[1] * a[2]],
          [ixz + axial * a[2] * a[0], iyz + axial * a[2] * a[1], izz + iso + axial * a[2] * a[2]],
        ];
        const { values, rotation } = symmetricEigen(tensor);
        const mass = Math.max(inertial?.mass ?? 1e-3, 1e-4);
        const com = inertial?.com ?? [0, 0, 0];
        desc.setAdditionalMassProperties(
          mass,
          { x: com[0], y: com[1], z: com[2] },
          { x: Math.max(values[0], 1e-9), y: Math.max(values[1], 1e-9), z: Math.max(values[2], 1e-9) },
          rotation,
        );
      }
      bodies.set(link.name, world.createRigidBody(desc));
    }

    const joints: JointRuntime[] = [];
    for (const j of urdf.joints) {
      if (j.type !== 'revolute' && j.type !== 'continuous') continue;
      const parent = bodies.get(j.parent)!;
      const child = bodies.get(j.child)!;
      const align = qalignX(j.axis);
      const frame1 = qmul(qrpy(j.rpy), align);
      const frame2 = align;
      const anchor1 = { x: j.xyz[0], y: j.xyz[1], z: j.xyz[2] };
      const data = RAPIER.JointData.revolute(anchor1, { x: 0, y: 0, z: 0 }, { x: 1, y: 0, z: 0 });
      const joint = world.createImpulseJoint(data, parent, child, true) as RAPIER.RevoluteImpulseJoint;
      joint.setLocalFrame1(anchor1, frame1);
      joint.setLocalFrame2({ x: 0, y: 0, z: 0 }, frame2);
      joint.setContactsEnabled(false);
      joint.configureMotorModel(RAPIER.MotorModel.ForceBased);
      if (j.type === 'revolute' && j.limit) joint.setLimits(j.limit.lower, j.limit.upper);
      joints.push({
        urdf: j,
        joint,
        parent,
        child,
        frame1,
        frame2,
        lastTarget: NaN,
        lastVelocity: NaN,
        lastStiffness: NaN,
        lastDamping: NaN,
        lastMaxTorque: NaN,
        externalTorque: 0,
      });
    }
    return new PhysicsWorld(world, joints, bodies, opts.dt);
  }

  jointIndex(name: string): number {
    const i = this.#byName.get(name);
    if (i === undefined) throw new Error(`no joint named ${name} in the physics world`);
    return i;
  }

  get jointNames(): string[] {
    return this.#joints.map((j) => j.urdf.name);
  }

  /** Joint angle (rad) from the two bodies' relative rotation. */
  angle(i: number): number {
    const j = this.#joints[i]!;
    const f1 = qmul(j.parent.rotation(), j.frame1);
    const f2 = qmul(j.child.rotation(), j.frame2);
    return twistAngle(qmul(qconj(f1), f2), X_AXIS);
  }

  /** Joint speed (rad/s). */
  velocity(i: number): number {
    const j = this.#joints[i]!;
    const axis = qrotate(qmul(j.parent.rotation(), j.frame1), X_AXIS);
    const wc = j.child.angvel();
    const wp = j.parent.angvel();
    return (wc.x - wp.x) * axis[0] + (wc.y - wp.y) * axis[1] + (wc.z - wp.z) * axis[2];
  }

  /** Applies a servo drive command; Rapier is only called when something changed. */
  drive(i: number, cmd: DriveCommand): void {
    const j = this.#joints[i]!;
    if (
      cmd.target !== j.lastTarget ||
      cmd.targetVelocity !== j.lastVelocity ||
      cmd.stiffness !== j.lastStiffness ||
      cmd.damping !== j.lastDamping
    ) {
      j.joint.configureMotor(cmd.target, cmd.targetVelocity, cmd.stiffness, cmd.damping);
      j.lastVelocity = cmd.targetVelocity;
      j.lastTarget = cmd.target;
      j.lastStiffness = cmd.stiffness;
      j.lastDamping = cmd.damping;
    }
    if (cmd.maxTorque !== j.lastMaxTorque) {
      j.joint.setMotorMaxForce(cmd.maxTorque);
      j.lastMaxTorque = cmd.maxTorque;
    }
  }

  /** An external torque (N.m) about joint i's axis, applied each step until changed (a hand pushing). */
  setExternalTorque(i: number, torque: number): void {
    this.#joints[i]!.externalTorque = torque;
  }

  step(): void {
    for (const j of this.#joints) {
      if (j.externalTorque === 0) continue;
      const axis = qrotate(qmul(j.parent.rotation(), j.frame1), X_AXIS);
      const imp = j.externalTorque * this.dt;
      j.child.applyTorqueImpulse({ x: axis[0] * imp, y: axis[1] * imp, z: axis[2] * imp }, true);
      if (j.parent.isDynamic())
        j.parent.applyTorqueImpulse({ x: -axis[0] * imp, y: -axis[1] * imp, z: -axis[2] * imp }, true);
    }
    this.#world.step();
  }

  /** World pose of a link frame (for the camera and tests). */
  linkPose(link: string): { position: [number, number, number]; rotation: Quat } | undefined {
    const body = this.#bodies.get(link);
    if (!body) return undefined;
    const t = body.translation();
    const r = body.rotation();
    return { position: [t.x, t.y, t.z], rotation: { x: r.x, y: r.y, z: r.z, w: r.w } };
  }

  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    this.#world.free();
  }
}

function normalized(v: V3): V3 {
  const n = Math.hypot(v[0], v[1], v[2]) || 1;
  return [v[0] / n, v[1] / n, v[2] / n];
}

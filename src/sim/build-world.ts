/**
 * Builds the Rapier world of one robot from its URDF: one rigid body per link (the root fixed to the table), its
 * collision shapes as colliders, one revolute impulse joint per URDF joint, and the table or floor under it.
 */
import RAPIER from '@dimforge/rapier3d-simd-compat';
import type { UrdfRobot, UrdfJoint } from '../urdf/types.ts';
import type { RobotConfig, TableConfig } from '../config/robot-config.ts';
import { ConfigError } from '../core/errors.ts';
import { type Quat, type V3, qalignX, qmul, qrpy, symmetricEigen } from './quat.ts';
import { linkPoses } from './link-poses.ts';
import {
  type LinkCollider,
  pairsTwoJointsApart,
  separateDesignedOverlaps,
  settledShape,
  shapeOf,
} from './collision-shapes.ts';

let rapierReady: Promise<void> | undefined;
/** Loads Rapier's WASM once per process (it is a module, not state of ours to reset). */
export function initRapier(): Promise<void> {
  rapierReady ??= RAPIER.init();
  return rapierReady;
}

/** The solver's iterations a step, each a substep of its own in Rapier 0.20: the sim's and the emulator's. */
export const DEFAULT_SOLVER_ITERATIONS = 4;

export interface WorldOptions {
  /** Fixed physics timestep, seconds. */
  readonly dt: number;
  /**
   * Armature (reflected motor inertia, kg.m^2) per joint name, added to the child link about the joint axis (and
   * OFF_AXIS_ARMATURE_SHARE of it about the link's other two axes, for the solver).
   */
  readonly armature: ReadonlyMap<string, number>;
  /** Initial joint angles (rad) by joint name; others start at 0. */
  readonly initialAngles?: ReadonlyMap<string, number>;
  /** The solver's iterations a step (default DEFAULT_SOLVER_ITERATIONS). */
  readonly solverIterations?: number;
  /** The table or floor under the robot, in the root link's frame (null or absent: none). */
  readonly table?: TableConfig | null;
  /** Gravity, m/s^2, along -z of the root frame. */
  readonly gravity?: number;
  /** Stop stepping the solver while the robot is at rest (default true; see rest.ts). */
  readonly restWhenStill?: boolean;
  /** Which links collide (robot config world.selfCollision; default every two not sharing a joint). */
  readonly selfCollision?: 'beyond-one-joint' | 'beyond-two-joints';
  /** Where the parts stop a joint (rad), by joint name: lower, upper (null: no stop that side); robot config. */
  readonly jointStops?: ReadonlyMap<string, readonly [number | null, number | null]>;
}

/** Plastic cases on plastic and on a wooden table: they slide, but grip. */
const FRICTION = 0.5;
/** Barely bouncy: printed parts and servo cases thud. */
const RESTITUTION = 0.05;
const DEFAULT_GRAVITY = 9.81;
/**
 * Share of the armature also added about a link's other two axes: physically it turns about the joint axis only, but
 * without this Rapier's impulse solver cannot pass a motor's torque through the light brackets of a chain. 3 % is the
 * share nearest a one-joint reference (docs/decisions/0001-off-axis-armature-share.md; test/lab/armature.test.ts).
 */
export const OFF_AXIS_ARMATURE_SHARE = 0.03;

/** One joint of the world: its Rapier parts and what the stepping core and the rest detection keep of it. */
export interface JointRuntime {
  readonly urdf: UrdfJoint;
  readonly joint: RAPIER.RevoluteImpulseJoint;
  readonly parent: RAPIER.RigidBody;
  readonly child: RAPIER.RigidBody;
  /** Joint frame in the parent body (origin rotation, then x aligned to the axis) and in the child body. */
  readonly frame1: Quat;
  readonly frame2: Quat;
  /** Links whose mass hangs on this joint (the child's subtree), as indices into the world's body list. */
  readonly subtree: readonly number[];
  /** The armature of this joint's servo (kg.m^2). */
  readonly armature: number;
  /** Joint axis and origin in the world after the last step (load() reads them); undefined until measured. */
  axisNow?: [number, number, number];
  originNow?: [number, number, number];
  /** The joint angle after the last step, never wrapped (rad), and its change over that step (rad/s). */
  unwrapped: number;
  speed: number;
  /** The angle (rad) where the current window of stillness began (see rest.ts). */
  stillFrom: number;
  lastBudget: number;
  lastLaw: [number, number, number, number];
  /** Where the friction motor holds the joint (rad, unwrapped), trailing it within GEARBOX_SLACK. */
  anchor: number;
  /** How the last drive moves the joint ('slipping': DriveCommand.slipping), and how it did as the world came to rest. */
  mode: DriveMode;
  modeAtRest: DriveMode;
  /** The motor's torque (N.m) applied beside the friction motor while the gearbox holds the joint; 0 otherwise. */
  heldTorque: number;
  externalTorque: number;
  /** While the world rests: the drive it rests under (law, force cap, applied torque), taken at its first step. */
  restDrive?: { law: [number, number, number, number]; budget: number; torque: number };
}

/** A drive's kind: torque off; held by the gearbox; held but its motor outpulls it; sliding under the motor's law. */
export type DriveMode = 'limp' | 'held' | 'slipping' | 'sliding';

/** The torque (N.m) applied explicitly about a joint's axis each step: the hand's, and a held motor's. */
export function appliedTorque(j: JointRuntime): number {
  return j.externalTorque + j.heldTorque;
}

/** What buildWorld makes: the Rapier world and the robot's parts in it. */
export interface WorldParts {
  readonly world: RAPIER.World;
  readonly joints: JointRuntime[];
  /** Rigid body per link name, in the URDF's link order (the world's body list). */
  readonly bodies: Map<string, RAPIER.RigidBody>;
  /** Collider handle -> link name, or the table's kind. */
  readonly colliderNames: Map<number, string>;
  /** Body masses (kg), in body-list order (0 for the fixed root). */
  readonly masses: number[];
  readonly gravity: number;
  /** Pairs of links that overlap at the zero pose and so never collide (separateDesignedOverlaps). */
  readonly designedOverlaps: readonly (readonly [string, string])[];
}

const X_AXIS: V3 = [1, 0, 0];

/** The robot config's joint stops (degrees) in radians, each naming a joint of the URDF. */
export function jointStopsOf(
  config: RobotConfig,
  urdf: UrdfRobot,
): Map<string, [number | null, number | null]> {
  const names = new Set(urdf.joints.map((j) => j.name));
  const rad = (deg: number | null) => (deg === null ? null : (deg * Math.PI) / 180);
  return new Map(
    Object.entries(config.world.jointStops).map(([name, [lo, hi]]) => {
      if (!names.has(name))
        throw new ConfigError(
          `world.jointStops.${name}`,
          `no joint "${name}" in ${config.urdfPath}`,
          config.source || undefined,
        );
      return [name, [rad(lo), rad(hi)]];
    }),
  );
}

export async function buildWorld(urdf: UrdfRobot, opts: WorldOptions): Promise<WorldParts> {
  await initRapier();
  const gravity = opts.gravity ?? DEFAULT_GRAVITY;
  const world = new RAPIER.World({ x: 0, y: 0, z: -gravity });
  world.timestep = opts.dt;
  world.integrationParameters.numSolverIterations = opts.solverIterations ?? DEFAULT_SOLVER_ITERATIONS;

  const childJoint = new Map(urdf.joints.map((j) => [j.child, j]));
  const poses = linkPoses(urdf, opts.initialAngles);
  const bodies = new Map<string, RAPIER.RigidBody>();
  const colliderNames = new Map<number, string>();
  const linkColliders: LinkCollider[] = [];
  for (const link of urdf.links.values()) {
    const pose = poses.get(link.name)!;
    const desc = link.name === urdf.root ? RAPIER.RigidBodyDesc.fixed() : RAPIER.RigidBodyDesc.dynamic();
    desc
      .setTranslation(...pose.p)
      .setRotation(pose.q)
      .setCanSleep(false);
    if (link.name !== urdf.root) {
      const inertial = link.inertial;
      const j = childJoint.get(link.name);
      const armature = j ? (opts.armature.get(j.name) ?? 0) : 0;
      const [ixx, ixy, ixz, iyy, iyz, izz] = inertial?.inertia ?? [1e-7, 0, 0, 1e-7, 0, 1e-7];
      const a = j ? normalized(j.axis) : X_AXIS;
      // The motor's reflected inertia turns with the joint only: it adds to the inertia about the axis, plus the small
      // off-axis share the solver needs (OFF_AXIS_ARMATURE_SHARE).
      const iso = armature * OFF_AXIS_ARMATURE_SHARE;
      const tensor = [
        [iso + ixx + armature * a[0] * a[0], ixy + armature * a[0] * a[1], ixz + armature * a[0] * a[2]],
        [ixy + armature * a[1] * a[0], iso + iyy + armature * a[1] * a[1], iyz + armature * a[1] * a[2]],
        [ixz + armature * a[2] * a[0], iyz + armature * a[2] * a[1], iso + izz + armature * a[2] * a[2]],
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
    const body = world.createRigidBody(desc);
    bodies.set(link.name, body);
    for (const s of link.collisions) {
      const { shape, p, q } = shapeOf(s);
      const cd = new RAPIER.ColliderDesc(shape)
        .setTranslation(p[0], p[1], p[2])
        .setRotation(q)
        .setDensity(0)
        .setFriction(FRICTION)
        .setRestitution(RESTITUTION);
      const collider = world.createCollider(cd, body);
      colliderNames.set(collider.handle, link.name);
      linkColliders.push({ link: link.name, collider, shape: settledShape(collider, shape), p, q });
    }
  }
  const apart = opts.selfCollision === 'beyond-two-joints' ? pairsTwoJointsApart(urdf) : [];
  const designedOverlaps = separateDesignedOverlaps(urdf, linkColliders, linkPoses(urdf), apart);
  if (opts.table) {
    const t = opts.table;
    const body = world.createRigidBody(
      RAPIER.RigidBodyDesc.fixed().setTranslation(t.xyz[0], t.xyz[1], t.xyz[2] - t.size[2] / 2),
    );
    const cd = RAPIER.ColliderDesc.cuboid(t.size[0] / 2, t.size[1] / 2, t.size[2] / 2)
      .setFriction(FRICTION)
      .setRestitution(RESTITUTION);
    colliderNames.set(world.createCollider(cd, body).handle, t.kind);
  }

  const bodyIndex = new Map([...bodies.keys()].map((name, i) => [name, i]));
  const subtreeOf = (link: string): number[] => [
    bodyIndex.get(link)!,
    ...urdf.joints.filter((j) => j.parent === link).flatMap((j) => subtreeOf(j.child)),
  ];
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
    // The two links of a joint touch by design: no contacts between them. Every other pair of links collides, but
    // for those whose shapes already overlap at the zero pose (separateDesignedOverlaps; the generated boxes leave
    // out each link's own joint, so none of theirs do) and, where the robot says so, those two joints apart.
    joint.setContactsEnabled(false);
    joint.configureMotorModel(RAPIER.MotorModel.ForceBased);
    joint.setMotorMaxForce(0);
    // A Dynamixel's angle limits are firmware (the goal is clamped to them), not stops: a limp joint can be turned
    // past them by hand. What stops a link is another link, the table, or where the robot's parts meet (jointStops;
    // Rapier measures the angle within +-180 degrees, so a side without a stop is left at 180).
    const stop = opts.jointStops?.get(j.name);
    if (stop) joint.setLimits(stop[0] ?? -Math.PI, stop[1] ?? Math.PI);
    const start = opts.initialAngles?.get(j.name) ?? 0;
    joints.push({
      urdf: j,
      joint,
      parent,
      child,
      frame1,
      frame2,
      subtree: subtreeOf(j.child),
      armature: opts.armature.get(j.name) ?? 0,
      unwrapped: start,
      stillFrom: start,
      speed: 0,
      lastBudget: 0,
      lastLaw: [NaN, NaN, NaN, NaN],
      anchor: start,
      mode: 'limp',
      modeAtRest: 'limp',
      heldTorque: 0,
      externalTorque: 0,
    });
  }

  const masses = [...urdf.links.values()].map((l) =>
    l.name === urdf.root ? 0 : Math.max(l.inertial?.mass ?? 1e-3, 1e-4),
  );
  return { world, joints, bodies, colliderNames, masses, gravity, designedOverlaps };
}

function normalized(v: V3): V3 {
  const n = Math.hypot(v[0], v[1], v[2]) || 1;
  return [v[0] / n, v[1] / n, v[2] / n];
}

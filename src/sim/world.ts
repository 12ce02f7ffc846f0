/**
 * The Rapier world of one robot, built from its URDF: one rigid body per link (the root fixed to the table), its
 * collision shapes as colliders, one revolute impulse joint per URDF joint, and the table or floor under it.
 *
 * Each servo acts through its joint's Rapier motor, solved implicitly with the other constraints (light links in a
 * chain make explicit torques unstable): with the torque on and the joint sliding, the servo's motor law of the step
 * (spring-damper or back-EMF line, gearbox friction folded in, see DriveCommand); limp, or with the gearbox holding
 * the joint, the gearbox friction as a motor capped at the friction budget (SERVO-MODELS.md §2), the held motor's
 * torque beside it as a constant.
 */
import RAPIER from '@dimforge/rapier3d-simd-compat';
import type { UrdfRobot, UrdfJoint, UrdfShape } from '../urdf/types.ts';
import type { Contact } from './controls.ts';
import type { TableConfig } from '../config/robot-config.ts';
import { type DriveCommand, GEARBOX_SLACK } from './servo.ts';
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
  /**
   * Armature (reflected motor inertia, kg.m^2) per joint name, added to the child link about the joint axis (and
   * OFF_AXIS_ARMATURE_SHARE of it about the link's other two axes, for the solver).
   */
  readonly armature: ReadonlyMap<string, number>;
  /** Initial joint angles (rad) by joint name; others start at 0. */
  readonly initialAngles?: ReadonlyMap<string, number>;
  readonly solverIterations?: number;
  /** The table or floor under the robot, in the root link's frame (null or absent: none). */
  readonly table?: TableConfig | null;
  /** Gravity, m/s^2, along -z of the root frame. */
  readonly gravity?: number;
  /** Stop stepping the solver while the robot is at rest (default true; see REST_STEPS). */
  readonly restWhenStill?: boolean;
}

/** Plastic cases on plastic and on a wooden table: they slide, but grip. */
const FRICTION = 0.5;
/** A resting contact can settle a few hundredths of a millimetre apart: still touching. */
const TOUCHING_GAP = 1e-4;
/** Barely bouncy: printed parts and servo cases thud. */
const RESTITUTION = 0.05;
/**
 * The friction motor: a stiff spring-damper towards an anchor angle that follows the joint within GEARBOX_SLACK, capped
 * at the friction budget. Sliding, the anchor trails the joint and the cap makes it a Coulomb-viscous drag; stuck, it
 * holds the joint where it stopped, where a velocity motor alone lets the solver's residue creep. A held joint that the
 * servo says slips (its motor and load beyond the budget) has the anchor follow it exactly, so that friction never
 * springs it back across the slack once the push is gone. Damping (N.m.s/rad) and stiffness (N.m/rad) are large
 * against every link's inertia over one step, so the cap is what limits them.
 */
const FRICTION_MOTOR_DAMPING = 1e4;
const FRICTION_MOTOR_STIFFNESS = 5e6;
/** The motor's force cap with the torque on: the law itself bounds the torque. */
const UNLIMITED = 1e6;
/**
 * A world at rest stops stepping the solver until its drive changes (a goal, the torque, a hand, a teleport). At rest
 * means no joint has moved more than REST_DRIFT from where it was REST_STEPS steps ago (its angle as the encoder sees
 * it: the bodies' own velocities carry the solver's corrections, 1 mm/s on a Torso held still). A window, not a
 * speed: the limp Humanoid's joints jitter at 0.2 deg/s and go nowhere. A creep faster than REST_DRIFT over the window
 * (0.01 deg/s) keeps the world stepping. A Torso at rest cost its server a step of Rapier every 2 ms (8-9 % of a core
 * at real time) for nothing a client could see.
 */
const REST_DRIFT = 1e-4; // rad: 0.006 deg
const REST_STEPS = 250; // 0.5 s of 2 ms steps
/** A drive that moves less than this leaves the world at rest: target 1e-6 rad, speed 1e-5 rad/s, gains 0.1 %. */
const REST_TARGET = 1e-6;
const REST_TARGET_SPEED = 1e-5;
const REST_RELATIVE = 1e-3;
const REST_TORQUE = 1e-6; // N.m
const DEFAULT_GRAVITY = 9.81;
/**
 * Share of the armature also added about a link's other two axes. Physically the armature turns about the joint axis
 * only, but Rapier's impulse solver then cannot pass a motor's torque through the light brackets of a chain (a few
 * grams between two servos): measured on the Torso's shoulder_x driving the arm at a 5 rad/s target, the arm reached
 * 40 % of it with 16 solver iterations and none of this, 97 % with 3 % of the armature off-axis and the default 4
 * iterations (the old model added 100 %). Measured again (2026-11-23) with the servo law, a 60-degree goal on each
 * stiff Torso joint, 0.4 s: with none of this, l_elbow_y moved 0.5-1.7 degrees and l_shoulder_x 9-18 with 4 or 16
 * solver iterations and 1, 4 or 16 internal PGS iterations (at up to 3.4x the step cost); with 3 %, 57 and 19
 * (peaks 335 and 255 deg/s), the other joints alike either way. `npm run bench -- armature` shows it on a light
 * four-joint XL-320 chain against a one-joint integration of the same bodies (2026-11-25): 0 % lags the reference by
 * half and flies apart (joints past 300 degrees) once the base joint moves; 1 % is 4.9 degrees RMS off, 3 % 2.3,
 * 10 % 1.9, 100 % 5.4. Folding the armature into the joint motor instead (a damper of armature/dt towards the last
 * speed, nothing in the bodies) made the whole Torso fly apart. Rapier's multibody joints (reduced coordinates) have
 * no motor, no frame and no coordinate setter in rapier.js 0.20 and 0.21, and in the same bench a multibody pendulum
 * accelerates at 0.005x m g l / I where an impulse joint's gives 1.000x (misused or broken in the JS build: not found).
 * test/sim/armature.test.ts checks the share against the reference, and fails if a Rapier upgrade lifts either limit.
 */
export const OFF_AXIS_ARMATURE_SHARE = 0.03;

interface JointRuntime {
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
  /** The angle (rad) where the current window of stillness began (see REST_STEPS). */
  stillFrom: number;
  lastBudget: number;
  lastLaw: [number, number, number, number];
  /** Where the friction motor holds the joint (rad, unwrapped), trailing it within GEARBOX_SLACK. */
  anchor: number;
  /** The last drive said the held joint slips (DriveCommand.slipping). */
  slipped: boolean;
  /** The motor's torque (N.m) applied beside the friction motor while the gearbox holds the joint; 0 otherwise. */
  heldTorque: number;
  externalTorque: number;
  /** While the world rests: the drive it rests under (law, force cap, applied torque), taken at its first step. */
  restDrive?: { law: [number, number, number, number]; budget: number; torque: number };
}

interface LinkPose {
  readonly p: [number, number, number];
  readonly q: Quat;
}

const X_AXIS: V3 = [1, 0, 0];

/** World pose (root frame) of every link frame for the given joint angles (rad; absent joints at 0). */
export function linkPoses(urdf: UrdfRobot, angles?: ReadonlyMap<string, number>): Map<string, LinkPose> {
  const childJoint = new Map(urdf.joints.map((j) => [j.child, j]));
  const poses = new Map<string, LinkPose>();
  const poseOf = (link: string): LinkPose => {
    const known = poses.get(link);
    if (known) return known;
    const j = childJoint.get(link);
    let pose: LinkPose;
    if (!j) pose = { p: [0, 0, 0], q: { ...IDENTITY } };
    else {
      const parent = poseOf(j.parent);
      const angle = angles?.get(j.name) ?? 0;
      const q = qmul(qmul(parent.q, qrpy(j.rpy)), qaxisAngle(j.axis, angle));
      pose = { p: vadd(parent.p, qrotate(parent.q, j.xyz)), q };
    }
    poses.set(link, pose);
    return pose;
  };
  for (const link of urdf.links.keys()) poseOf(link);
  return poses;
}

/** Deeper than this at the zero pose, two links' shapes overlap by design (meshes drawn through each other). */
const DESIGNED_OVERLAP = 0.001;

/** A link's collider with its shape and the shape's pose in the link frame (shapeOf). */
type LinkCollider = { link: string; collider: RAPIER.Collider; shape: RAPIER.Shape; p: V3; q: Quat };
/** A shape placed in the world. */
type Placed = { shape: RAPIER.Shape; p: RAPIER.Vector; q: Quat };

/** A shape given in its link's frame (shapeOf), placed where the link is. */
export function placeShape(link: LinkPose, s: { shape: RAPIER.Shape; p: V3; q: Quat }): Placed {
  const p = vadd(link.p, qrotate(link.q, s.p));
  return { shape: s.shape, p: { x: p[0], y: p[1], z: p[2] }, q: qmul(link.q, s.q) };
}

/** Radius (m) of a sphere about the shape's own origin that holds it: a cheap test of two shapes apart. */
function boundingRadius(s: RAPIER.Shape): number {
  if (s instanceof RAPIER.Cuboid) return Math.hypot(s.halfExtents.x, s.halfExtents.y, s.halfExtents.z);
  if (s instanceof RAPIER.Ball) return s.radius;
  if (s instanceof RAPIER.Cylinder) return Math.hypot(s.halfHeight, s.radius);
  if (s instanceof RAPIER.ConvexPolyhedron) {
    let r = 0;
    const v = s.vertices;
    for (let i = 0; i < v.length; i += 3) r = Math.max(r, Math.hypot(v[i]!, v[i + 1]!, v[i + 2]!));
    return r;
  }
  return Infinity;
}

/**
 * Links whose collision shapes already overlap at the zero pose, where the robot is assembled with nothing in
 * collision, overlap by design (a collision mesh drawn through a neighbour's neighbour, such as the Poppy spine's
 * through the chest across the two-servo bust block): they never collide with each other. Computed from the shapes,
 * not listed by hand, as robot setup tools do. Applied with Rapier's collision groups: one membership bit per link
 * on one side of such a pair, left out of the filter of the links it must not meet (16 bits: enough for the Poppy
 * robots; more pairs than bits is an error, not a silent miss).
 */
function separateDesignedOverlaps(
  urdf: UrdfRobot,
  colliders: readonly LinkCollider[],
): (readonly [string, string])[] {
  const zero = linkPoses(urdf);
  const neighbours = new Set(
    urdf.joints.flatMap((j) => [`${j.parent}|${j.child}`, `${j.child}|${j.parent}`]),
  );
  const placed = colliders.map((c) => ({
    link: c.link,
    radius: boundingRadius(c.shape),
    ...placeShape(zero.get(c.link)!, c),
  }));
  const pairs: (readonly [string, string])[] = [];
  const paired = new Set<string>(); // "a|b" both ways: a link with several shapes is one pair
  for (let i = 0; i < placed.length; i++)
    for (let k = i + 1; k < placed.length; k++) {
      const a = placed[i]!;
      const b = placed[k]!;
      const key = `${a.link}|${b.link}`;
      if (a.link === b.link || neighbours.has(key) || paired.has(key)) continue;
      // Apart for sure: most pairs, and a hull's exact query costs tens of microseconds (it is rebuilt each call).
      const centres = Math.hypot(a.p.x - b.p.x, a.p.y - b.p.y, a.p.z - b.p.z);
      if (centres > a.radius + b.radius) continue;
      if (overlapDepth(a, b) <= DESIGNED_OVERLAP) continue;
      pairs.push([a.link, b.link]);
      paired.add(key).add(`${b.link}|${a.link}`);
    }
  const bitOf = new Map<string, number>();
  const excluded = new Map<string, number>(); // link -> bits it must not meet
  for (const [a, b] of pairs) {
    let [owner, other] = [a, b];
    if (!bitOf.has(owner) && bitOf.has(other)) [owner, other] = [other, owner];
    if (!bitOf.has(owner)) {
      if (bitOf.size === 16) throw new Error(`more than 16 links overlap by design at the zero pose`);
      bitOf.set(owner, bitOf.size);
    }
    excluded.set(other, (excluded.get(other) ?? 0) | (1 << bitOf.get(owner)!));
  }
  for (const c of colliders) {
    const bit = bitOf.get(c.link);
    const membership = bit === undefined ? 0xffff : 1 << bit;
    const filter = 0xffff & ~(excluded.get(c.link) ?? 0);
    if (membership !== 0xffff || filter !== 0xffff)
      c.collider.setCollisionGroups(((membership << 16) | filter) >>> 0);
  }
  return pairs;
}

/** How deep two placed shapes overlap (m; 0 apart or touching). */
export function overlapDepth(a: Placed, b: Placed): number {
  const depthAt = (dx: number, dy: number, dz: number): number => {
    const p = { x: b.p.x + dx, y: b.p.y + dy, z: b.p.z + dz };
    const contact = a.shape.contactShape(a.p, a.q, b.shape, p, b.q, 0);
    return contact ? Math.max(0, -contact.distance) : 0;
  };
  const depth = depthAt(0, 0, 0);
  if (depth > 0 || !a.shape.intersectsShape(a.p, a.q, b.shape, b.p, b.q)) return depth;
  // Intersecting at depth 0: touching, or a penetration the solver cannot measure (shapes on the same centre). A
  // tenth of a millimetre's nudge either way tells them apart.
  const nudge = 1e-4;
  return Math.max(
    ...[-nudge, nudge]
      .flatMap((d) => [depthAt(d, 0, 0), depthAt(0, d, 0), depthAt(0, 0, d)])
      .map((x) => x - nudge),
    0,
  );
}

/** A URDF collision shape as a Rapier shape and its pose in the link frame. */
export function shapeOf(s: UrdfShape): { shape: RAPIER.Shape; p: V3; q: Quat } {
  const g = s.geometry;
  let q = qrpy(s.rpy);
  let shape: RAPIER.Shape;
  if (g.kind === 'box') shape = new RAPIER.Cuboid(g.size[0] / 2, g.size[1] / 2, g.size[2] / 2);
  else if (g.kind === 'sphere') shape = new RAPIER.Ball(g.radius);
  else if (g.kind === 'mesh') {
    // A mesh collides as its convex hull (URDF collision meshes are meant as simple convex shapes).
    const hull = RAPIER.ColliderDesc.convexHull(g.triangles);
    if (!hull) throw new Error(`collision mesh ${g.filename}: no convex hull (flat or empty)`);
    shape = hull.shape;
  } else {
    // URDF cylinders lie along z, Rapier's along y: turn y onto z.
    shape = new RAPIER.Cylinder(g.length / 2, g.radius);
    q = qmul(q, qaxisAngle([1, 0, 0], Math.PI / 2));
  }
  return { shape, p: s.xyz, q };
}

export class PhysicsWorld {
  readonly dt: number;
  /** Pairs of links that overlap at the zero pose and so never collide (separateDesignedOverlaps). */
  readonly designedOverlaps: readonly (readonly [string, string])[];
  readonly #world: RAPIER.World;
  readonly #urdf: UrdfRobot;
  readonly #joints: JointRuntime[];
  readonly #byName: Map<string, number>;
  readonly #bodies: Map<string, RAPIER.RigidBody>;
  /** Collider handle -> link name, or the table's kind. */
  readonly #colliderNames: Map<number, string>;
  readonly #gravity: number;
  #contacts: Contact[] | undefined;
  readonly #bodyList: RAPIER.RigidBody[];
  /** Body masses (kg), constant, in body-list order. */
  readonly #masses: number[];
  readonly #comCache: Float64Array;
  /** Per joint, the body-list index of its child and of its parent (-1: fixed), for the torques applied each step. */
  readonly #jointBodies: Int32Array;
  /** This step's applied torque per body (x, y, z in body-list order), and whether each body carries one in Rapier. */
  readonly #torques: Float64Array;
  readonly #torqued: Uint8Array;
  #comsFresh = false;
  #freed = false;
  /** Steps in a row with everything still, whether the world rests (see REST_STEPS), and the steps it skipped so. */
  #stillSteps = 0;
  #resting = false;
  #restingSteps = 0;
  readonly #restWhenStill: boolean;

  private constructor(parts: {
    world: RAPIER.World;
    urdf: UrdfRobot;
    joints: JointRuntime[];
    bodies: Map<string, RAPIER.RigidBody>;
    colliderNames: Map<number, string>;
    masses: number[];
    dt: number;
    gravity: number;
    restWhenStill: boolean;
    designedOverlaps: readonly (readonly [string, string])[];
  }) {
    this.designedOverlaps = parts.designedOverlaps;
    this.#world = parts.world;
    this.#urdf = parts.urdf;
    this.#joints = parts.joints;
    this.#bodies = parts.bodies;
    this.#colliderNames = parts.colliderNames;
    this.dt = parts.dt;
    this.#gravity = parts.gravity;
    this.#restWhenStill = parts.restWhenStill;
    this.#byName = new Map(parts.joints.map((j, i) => [j.urdf.name, i]));
    this.#bodyList = [...parts.bodies.values()];
    // Rapier settles mass properties in its first step: read them from the descriptions' totals then.
    this.#masses = parts.masses;
    this.#comCache = new Float64Array(3 * this.#bodyList.length);
    this.#jointBodies = new Int32Array(
      parts.joints.flatMap((j) => [
        this.#bodyList.indexOf(j.child),
        j.parent.isDynamic() ? this.#bodyList.indexOf(j.parent) : -1,
      ]),
    );
    this.#torques = new Float64Array(3 * this.#bodyList.length);
    this.#torqued = new Uint8Array(this.#bodyList.length);
  }

  static async create(urdf: UrdfRobot, opts: WorldOptions): Promise<PhysicsWorld> {
    await initRapier();
    const gravity = opts.gravity ?? DEFAULT_GRAVITY;
    const world = new RAPIER.World({ x: 0, y: 0, z: -gravity });
    world.timestep = opts.dt;
    world.integrationParameters.numSolverIterations = opts.solverIterations ?? 4;

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
        linkColliders.push({ link: link.name, collider, shape, p, q });
      }
    }
    const designedOverlaps = separateDesignedOverlaps(urdf, linkColliders);
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
      // out each link's own joint, so none of theirs do).
      joint.setContactsEnabled(false);
      joint.configureMotorModel(RAPIER.MotorModel.ForceBased);
      joint.setMotorMaxForce(0);
      // No Rapier limits: a Dynamixel's angle limits are firmware (the goal is clamped to them), not stops; a limp
      // joint can be turned past them by hand, and what stops a link is another link or the table.
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
        slipped: false,
        heldTorque: 0,
        externalTorque: 0,
      });
    }

    const masses = [...urdf.links.values()].map((l) =>
      l.name === urdf.root ? 0 : Math.max(l.inertial?.mass ?? 1e-3, 1e-4),
    );
    return new PhysicsWorld({
      world,
      urdf,
      joints,
      bodies,
      colliderNames,
      masses,
      dt: opts.dt,
      gravity,
      restWhenStill: opts.restWhenStill ?? true,
      designedOverlaps,
    });
  }

  jointIndex(name: string): number {
    const i = this.#byName.get(name);
    if (i === undefined) throw new Error(`no joint named ${name} in the physics world`);
    return i;
  }

  get jointNames(): string[] {
    return this.#joints.map((j) => j.urdf.name);
  }

  /** Joint angle (rad) after the last step, continued across +-180 degrees (never wrapped). */
  angle(i: number): number {
    return this.#joints[i]!.unwrapped;
  }

  /**
   * Joint speed (rad/s) over the last step, from the angle's change as an encoder sees it. The bodies' own angular
   * velocities carry the solver's position corrections, a phantom motion of a joint held still by its friction.
   */
  velocity(i: number): number {
    return this.#joints[i]!.speed;
  }

  /** The joint's angle now; also caches its axis and origin in the world for this step's load(). */
  #measure(j: JointRuntime): number {
    const f1 = qmul(j.parent.rotation(), j.frame1);
    const f2 = qmul(j.child.rotation(), j.frame2);
    j.axisNow = qrotate(f1, X_AXIS);
    const o = j.child.translation();
    j.originNow = [o.x, o.y, o.z];
    const raw = twistAngle(qmul(qconj(f1), f2), X_AXIS);
    const turn = 2 * Math.PI;
    return j.unwrapped + raw - j.unwrapped - turn * Math.round((raw - j.unwrapped) / turn);
  }

  /**
   * What joint i carries: the torque (N.m) that gravity and the hand apply about its axis (contact forces are not
   * included), and the inertia (kg.m^2) of the links beyond it about the axis, as point masses at their centres,
   * plus the armatures (what stopping the joint has to stop).
   */
  load(i: number): { torque: number; inertia: number } {
    const j = this.#joints[i]!;
    if (!j.axisNow) this.#measure(j);
    const axis = j.axisNow!;
    const [ox, oy, oz] = j.originNow!;
    const com = this.#coms();
    let cx = 0;
    let cy = 0;
    let inertia = j.armature;
    for (const k of j.subtree) {
      const m = this.#masses[k]!;
      const rx = com[3 * k]! - ox;
      const ry = com[3 * k + 1]! - oy;
      const rz = com[3 * k + 2]! - oz;
      const along = rx * axis[0] + ry * axis[1] + rz * axis[2];
      inertia += m * (rx * rx + ry * ry + rz * rz - along * along);
      cx += m * rx;
      cy += m * ry;
    }
    // (r x F) . axis with F = (0, 0, -m g): (-ry m g, rx m g, 0) . axis
    const g = this.#gravity;
    return { torque: -cy * g * axis[0] + cx * g * axis[1] + j.externalTorque, inertia };
  }

  /** World centres of mass of every body, read once per step (x, y, z per body, in body-list order). */
  #coms(): Float64Array {
    if (this.#comsFresh) return this.#comCache;
    let k = 0;
    for (const b of this.#bodyList) {
      const c = b.worldCom();
      this.#comCache[k++] = c.x;
      this.#comCache[k++] = c.y;
      this.#comCache[k++] = c.z;
    }
    this.#comsFresh = true;
    return this.#comCache;
  }

  /**
   * Applies a servo's drive for the next step on the joint's motor: the servo's law (friction folded in) when the
   * joint slides with the torque on; otherwise the gearbox friction, as a stiff spring-damper towards an anchor that
   * trails the joint within GEARBOX_SLACK, capped at the friction budget, and the motor's torque, if the torque is on,
   * applied beside it as a constant torque (held: the motor's law at rest is nearly constant, stable explicit).
   */
  drive(i: number, cmd: DriveCommand): void {
    const j = this.#joints[i]!;
    const q = j.unwrapped;
    // Rapier measures the angle within +-180 degrees: targets go relative to its reading, so a goal never wraps.
    const turn = 2 * Math.PI;
    const rapierQ = q - turn * Math.round(q / turn);
    let law: [number, number, number, number];
    let maxForce: number;
    if (cmd.limp || cmd.held) {
      // Slipping, the friction follows the joint; the step after, it takes hold where the joint is now.
      const follow = cmd.slipping || j.slipped;
      j.anchor = follow ? q : Math.min(q + GEARBOX_SLACK, Math.max(q - GEARBOX_SLACK, j.anchor));
      j.slipped = cmd.slipping;
      law = [rapierQ + (j.anchor - q), 0, FRICTION_MOTOR_STIFFNESS, FRICTION_MOTOR_DAMPING];
      maxForce = Math.max(0, cmd.frictionBudget);
      j.heldTorque = cmd.held ? cmd.motorTorque : 0;
    } else {
      j.anchor = q;
      j.slipped = false;
      j.heldTorque = 0;
      law = [rapierQ + (cmd.target - q), cmd.targetVelocity, cmd.stiffness, cmd.damping];
      maxForce = UNLIMITED;
    }
    const last = j.lastLaw;
    if (law[0] !== last[0] || law[1] !== last[1] || law[2] !== last[2] || law[3] !== last[3]) {
      j.joint.configureMotor(law[0], law[1], law[2], law[3]);
      j.lastLaw = law;
    }
    if (maxForce !== j.lastBudget) {
      j.joint.setMotorMaxForce(maxForce);
      j.lastBudget = maxForce;
    }
    if (this.#resting) this.#keepResting(j);
  }

  /**
   * Steps taken at rest: the solver is not run until a joint's drive changes (see REST_STEPS). Joint speeds then read
   * 0; angles, poses and contacts are those of the last step taken.
   */
  get restingSteps(): number {
    return this.#restingSteps;
  }

  /**
   * Ends the rest if joint j's drive moved from the one the world rests under (its first at rest, else taken now).
   * Called for every driven joint at every resting step: it allocates nothing once the drive is taken.
   */
  #keepResting(j: JointRuntime): void {
    const rest = j.restDrive;
    const law = j.lastLaw;
    if (!rest) {
      j.restDrive = {
        law: [law[0], law[1], law[2], law[3]],
        budget: j.lastBudget,
        torque: appliedTorque(j),
      };
      return;
    }
    if (
      Math.abs(law[0] - rest.law[0]) > REST_TARGET ||
      Math.abs(law[1] - rest.law[1]) > REST_TARGET_SPEED ||
      !near(law[2], rest.law[2], 0) ||
      !near(law[3], rest.law[3], 0) ||
      !near(j.lastBudget, rest.budget, 0) ||
      !near(appliedTorque(j), rest.torque, REST_TORQUE)
    )
      this.#wake();
  }

  #wake(): void {
    this.#resting = false;
    for (const j of this.#joints) j.restDrive = undefined;
    this.#restartStillness();
  }

  /** A new window of stillness begins at the joints' angles now. */
  #restartStillness(): void {
    this.#stillSteps = 0;
    for (const j of this.#joints) j.stillFrom = j.unwrapped;
  }

  /** An external torque (N.m) about joint i's axis, applied each step until changed (a hand pushing). */
  setExternalTorque(i: number, torque: number): void {
    const j = this.#joints[i]!;
    j.externalTorque = torque;
    if (this.#resting && j.restDrive) this.#keepResting(j);
  }

  step(): void {
    if (this.#resting) {
      this.#restingSteps++;
      return;
    }
    // The hand's torques as forces, not impulses: Rapier applies forces in each of its substeps, where the friction
    // motor's cap is budget x substep; an impulse given all at once up front would slip past it in the first substep.
    this.#applyTorques();
    this.#world.step();
    this.#comsFresh = false;
    let still = this.#restWhenStill;
    for (const j of this.#joints) {
      const q = this.#measure(j);
      j.speed = (q - j.unwrapped) / this.dt;
      j.unwrapped = q;
      if (Math.abs(q - j.stillFrom) > REST_DRIFT) still = false;
    }
    this.#contacts = undefined;
    if (still) this.#stillSteps++;
    else this.#restartStillness();
    if (this.#stillSteps >= REST_STEPS) {
      this.#resting = true;
      for (const j of this.#joints) j.speed = 0;
    }
  }

  /**
   * The joints' explicit torques (the hand, held motors) summed per body, then handed to Rapier once per body: a Torso
   * holding every joint would otherwise cost two Rapier calls (each allocating a vector) per joint per step. A body
   * that carried a torque and carries none now is reset.
   */
  #applyTorques(): void {
    const t = this.#torques;
    t.fill(0);
    let any = false;
    for (let i = 0; i < this.#joints.length; i++) {
      const j = this.#joints[i]!;
      const torque = appliedTorque(j);
      if (torque === 0) continue;
      any = true;
      // The axis where the last step left it (measured then), unless a teleport since.
      const axis = j.axisNow ?? this.#axis(j);
      const child = 3 * this.#jointBodies[2 * i]!;
      const parent = this.#jointBodies[2 * i + 1]!;
      for (let k = 0; k < 3; k++) {
        const part = axis[k]! * torque;
        t[child + k] = t[child + k]! + part;
        if (parent >= 0) t[3 * parent + k] = t[3 * parent + k]! - part;
      }
    }
    if (!any && !this.#torqued.includes(1)) return;
    for (let b = 0; b < this.#bodyList.length; b++) {
      const x = t[3 * b]!;
      const y = t[3 * b + 1]!;
      const z = t[3 * b + 2]!;
      const has = x !== 0 || y !== 0 || z !== 0;
      if (!has && !this.#torqued[b]) continue;
      const body = this.#bodyList[b]!;
      body.resetTorques(false);
      if (has) body.addTorque({ x, y, z }, true);
      this.#torqued[b] = has ? 1 : 0;
    }
  }

  /** Puts every joint at the given angle (rad, others unchanged), at rest: a teleport, not a move. */
  setAngles(angles: ReadonlyMap<string, number>): void {
    this.#wake();
    const all = new Map<string, number>();
    for (const j of this.#joints) all.set(j.urdf.name, angles.get(j.urdf.name) ?? j.unwrapped);
    const poses = linkPoses(this.#urdf, all);
    for (const [name, body] of this.#bodies) {
      if (!body.isDynamic()) continue;
      const pose = poses.get(name)!;
      body.setTranslation({ x: pose.p[0], y: pose.p[1], z: pose.p[2] }, false);
      body.setRotation(pose.q, false);
      body.setLinvel({ x: 0, y: 0, z: 0 }, false);
      body.setAngvel({ x: 0, y: 0, z: 0 }, false);
    }
    for (const j of this.#joints) {
      j.unwrapped = all.get(j.urdf.name)!;
      j.anchor = j.unwrapped;
      j.slipped = false;
      j.axisNow = undefined;
      j.speed = 0;
      j.heldTorque = 0;
    }
    this.#contacts = undefined;
    this.#comsFresh = false;
  }

  /** The contacts of the last step: touching pairs of links (or a link and the table), deepest first. */
  contacts(): readonly Contact[] {
    if (this.#contacts) return this.#contacts;
    const out: Contact[] = [];
    const world = this.#world;
    world.forEachCollider((c1) => {
      const a = this.#colliderNames.get(c1.handle);
      if (a === undefined) return;
      world.contactPairsWith(c1, (c2) => {
        if (c2.handle <= c1.handle) return;
        const b = this.#colliderNames.get(c2.handle);
        if (b === undefined) return;
        // Only pairs Rapier makes contacts for (not a joint's two links, not a designed overlap).
        let impulse = 0;
        let tracked = false;
        world.contactPair(c1, c2, (manifold) => {
          if (manifold.numContacts() > 0) tracked = true;
          for (let k = 0; k < manifold.numContacts(); k++) impulse += manifold.contactImpulse(k);
        });
        if (!tracked) return;
        // Depth and point from the shapes where they are now. Rapier's manifold carries its points over from step to
        // step while each step's slide is small: a forearm that crept along the table read 3.4 mm above it there
        // while one corner sat 0.5 mm in.
        // The colliders' own query: Shape.contactShape rebuilds a hull in WASM on every call (88 us against 0.5).
        const hit = c1.contactCollider(c2, TOUCHING_GAP);
        if (!hit || hit.distance > TOUCHING_GAP) return;
        const depth = Math.max(0, -hit.distance);
        const point: [number, number, number] = [
          (hit.point1.x + hit.point2.x) / 2,
          (hit.point1.y + hit.point2.y) / 2,
          (hit.point1.z + hit.point2.z) / 2,
        ];
        out.push({ a, b, depth, impulse, point });
      });
    });
    out.sort((x, y) => y.depth - x.depth);
    this.#contacts = out;
    return out;
  }

  /** World pose of a link frame (for the camera and tests). */
  linkPose(link: string): { position: [number, number, number]; rotation: Quat } | undefined {
    const body = this.#bodies.get(link);
    if (!body) return undefined;
    const t = body.translation();
    const r = body.rotation();
    return { position: [t.x, t.y, t.z], rotation: { x: r.x, y: r.y, z: r.z, w: r.w } };
  }

  #axis(j: JointRuntime): [number, number, number] {
    return qrotate(qmul(j.parent.rotation(), j.frame1), X_AXIS);
  }

  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    this.#world.free();
  }
}

/** The torque (N.m) applied explicitly about a joint's axis each step: the hand's, and a held motor's. */
function appliedTorque(j: JointRuntime): number {
  return j.externalTorque + j.heldTorque;
}

/** a and b within `floor` of each other, or within REST_RELATIVE of the larger. */
function near(a: number, b: number, floor: number): boolean {
  return Math.abs(a - b) <= Math.max(floor, REST_RELATIVE * Math.max(Math.abs(a), Math.abs(b)));
}

function normalized(v: V3): V3 {
  const n = Math.hypot(v[0], v[1], v[2]) || 1;
  return [v[0] / n, v[1] / n, v[2] / n];
}

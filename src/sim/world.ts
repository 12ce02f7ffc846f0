// Over 400 lines: one robot's Rapier state and what is read of it (angles, loads, contacts) stay in one class.
/**
 * The stepping core of one robot's Rapier world (built by build-world.ts): each servo acts through its joint's Rapier
 * motor, solved implicitly with the other constraints (light links in a chain make explicit torques unstable). With the
 * torque on and the joint sliding, the servo's motor law of the step (spring-damper or back-EMF line, gearbox friction
 * folded in, see DriveCommand); limp, or with the gearbox holding the joint, the gearbox friction as a motor capped at
 * the friction budget (docs/reference/servo-models.md 2), the held motor's torque beside it as a constant.
 */
import type RAPIER from '@dimforge/rapier3d-simd-compat';
import type { UrdfRobot } from '../urdf/types.ts';
import type { Contact } from './controls.ts';
import { type DriveCommand, GEARBOX_SLACK } from './servo.ts';
import { type Quat, type V3, qaxisAngle, qmul, qnormalize, qrotate } from './quat.ts';
import {
  type JointRuntime,
  type WorldOptions,
  type WorldParts,
  appliedTorque,
  buildWorld,
} from './build-world.ts';
import { linkPoses } from './link-poses.ts';
import { nearestGap, pairKey, readContacts, staleContactColliders } from './contacts.ts';
import { RestWatch } from './rest.ts';

/**
 * The friction motor: a stiff spring-damper towards an anchor angle that follows the joint within GEARBOX_SLACK, capped
 * at the friction budget. Sliding, the anchor trails the joint and the cap makes it a Coulomb-viscous drag; stuck, it
 * holds the joint where it stopped (a velocity motor alone lets the solver's residue creep); slipping, the anchor
 * follows the joint exactly (docs/decisions/0002-gearbox-hold-in-the-solver.md). Damping (N.m.s/rad) and stiffness
 * (N.m/rad) are large against every link's inertia over one step, so the cap is what limits them.
 */
const FRICTION_MOTOR_DAMPING = 1e4;
const FRICTION_MOTOR_STIFFNESS = 5e6;
/** The motor's force cap with the torque on: the law itself bounds the torque. */
const UNLIMITED = 1e6;
const X_AXIS: V3 = [1, 0, 0];
/** Steps between looks for contacts left behind: 50 ms at 500 Hz, about 0.2 % of a core for the Torso. */
const CONTACT_CHECK_STEPS = 25;

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
  /** Each joint's subtree as a set of link names, made when first asked (pressedJoints, jointsNear). */
  #subtreeLinks: Set<string>[] | undefined;
  /** The pairs of links a joint joins (pairKey): they never touch. */
  #joined: Set<string> | undefined;
  /** Body masses (kg), constant, in body-list order. */
  readonly #masses: number[];
  readonly #comCache: Float64Array;
  /** Per joint, the body-list index of its child and of its parent (-1: fixed), for the torques applied each step. */
  readonly #jointBodies: Int32Array;
  /** Per joint, the body-list index of its parent, fixed or not; and each body's rotation, refilled every step. */
  readonly #jointParents: Int32Array;
  readonly #rotations: Quat[];
  /** What Rapier's vector getters fill instead of allocating one a call. */
  readonly #scratchVector = { x: 0, y: 0, z: 0 };
  /** This step's applied torque per body (x, y, z in body-list order), and whether each body carries one in Rapier. */
  readonly #torques: Float64Array;
  readonly #torqued: Uint8Array;
  #comsFresh = false;
  #freed = false;
  /** Steps since the contacts were last looked over for manifolds left behind. */
  #sinceContactCheck = 0;
  /** Link colliders left out of one step with their collision groups, their pairs' manifolds dropped. */
  #parked: [RAPIER.Collider, number][] = [];
  readonly #rest: RestWatch;

  private constructor(urdf: UrdfRobot, dt: number, restWhenStill: boolean, parts: WorldParts) {
    this.designedOverlaps = parts.designedOverlaps;
    this.#world = parts.world;
    this.#urdf = urdf;
    this.#joints = parts.joints;
    this.#bodies = parts.bodies;
    this.#colliderNames = parts.colliderNames;
    this.dt = dt;
    this.#gravity = parts.gravity;
    this.#rest = new RestWatch(parts.joints, restWhenStill);
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
    this.#jointParents = new Int32Array(parts.joints.map((j) => this.#bodyList.indexOf(j.parent)));
    this.#rotations = this.#bodyList.map(() => ({ x: 0, y: 0, z: 0, w: 1 }));
    this.#torques = new Float64Array(3 * this.#bodyList.length);
    this.#torqued = new Uint8Array(this.#bodyList.length);
  }

  static async create(urdf: UrdfRobot, opts: WorldOptions): Promise<PhysicsWorld> {
    return new PhysicsWorld(urdf, opts.dt, opts.restWhenStill ?? true, await buildWorld(urdf, opts));
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

  /**
   * Joint i's angle now, from every body's rotation (#readRotations: a parent serves all its children); also caches
   * its axis and origin in the world for this step's load().
   */
  #measure(i: number, rotations: readonly Quat[]): number {
    const j = this.#joints[i]!;
    const pr = rotations[this.#jointParents[i]!]!;
    const cr = rotations[this.#jointBodies[2 * i]!]!;
    // f1 = pr * frame1 and f2 = cr * frame2, the joint's frame seen from each side; written out, as this runs for every
    // joint at every step.
    const a = j.frame1;
    const f1w = pr.w * a.w - pr.x * a.x - pr.y * a.y - pr.z * a.z;
    const f1x = pr.w * a.x + pr.x * a.w + pr.y * a.z - pr.z * a.y;
    const f1y = pr.w * a.y - pr.x * a.z + pr.y * a.w + pr.z * a.x;
    const f1z = pr.w * a.z + pr.x * a.y - pr.y * a.x + pr.z * a.w;
    const b = j.frame2;
    const f2w = cr.w * b.w - cr.x * b.x - cr.y * b.y - cr.z * b.z;
    const f2x = cr.w * b.x + cr.x * b.w + cr.y * b.z - cr.z * b.y;
    const f2y = cr.w * b.y - cr.x * b.z + cr.y * b.w + cr.z * b.x;
    const f2z = cr.w * b.z + cr.x * b.y - cr.y * b.x + cr.z * b.w;
    // The axis: f1 (0, x) f1*, term by term as that product rounds them, not the shorter unit-quaternion form whose
    // last bits differ: the stepping is chaotic enough that those bits moved test/sim/rest.test.ts's two worlds
    // 0.12 degree apart instead of 0.0003.
    const axis = (j.axisNow ??= [0, 0, 0]);
    axis[0] = f1x * f1x + f1w * f1w - f1z * f1z - f1y * f1y;
    axis[1] = f1x * f1y + f1w * f1z + f1z * f1w + f1y * f1x;
    axis[2] = f1x * f1z - f1w * f1y + f1z * f1x - f1y * f1w;
    const o = j.child.translation(this.#scratchVector);
    const origin = (j.originNow ??= [0, 0, 0]);
    origin[0] = o.x;
    origin[1] = o.y;
    origin[2] = o.z;
    // The twist about x of conj(f1) * f2: its x and w parts.
    const relX = f1w * f2x - f1x * f2w - f1y * f2z + f1z * f2y;
    const relW = f1w * f2w + f1x * f2x + f1y * f2y + f1z * f2z;
    const raw = 2 * Math.atan2(relX, relW);
    const turn = 2 * Math.PI;
    return j.unwrapped + raw - j.unwrapped - turn * Math.round((raw - j.unwrapped) / turn);
  }

  /** Every body's rotation after the last step, read from Rapier once into reused objects. */
  #readRotations(): readonly Quat[] {
    const rotations = this.#rotations;
    for (let b = 0; b < this.#bodyList.length; b++) this.#bodyList[b]!.rotation(rotations[b]!);
    return rotations;
  }

  /**
   * What joint i carries: the torque (N.m) that gravity and the hand apply about its axis (contact forces are not
   * included), and the inertia (kg.m^2) of the links beyond it about the axis, as point masses at their centres,
   * plus the armatures (what stopping the joint has to stop).
   */
  load(i: number): { torque: number; inertia: number } {
    const j = this.#joints[i]!;
    if (!j.axisNow) this.#measure(i, this.#readRotations());
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
    const c = this.#scratchVector;
    for (const b of this.#bodyList) {
      b.worldCom(c);
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
      const follow = cmd.slipping || j.mode === 'slipping';
      j.anchor = follow ? q : Math.min(q + GEARBOX_SLACK, Math.max(q - GEARBOX_SLACK, j.anchor));
      j.mode = cmd.limp ? 'limp' : cmd.slipping ? 'slipping' : 'held';
      law = [rapierQ + (j.anchor - q), 0, FRICTION_MOTOR_STIFFNESS, FRICTION_MOTOR_DAMPING];
      maxForce = Math.max(0, cmd.frictionBudget);
      j.heldTorque = cmd.held ? cmd.motorTorque : 0;
    } else {
      j.anchor = q;
      j.mode = 'sliding';
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
    this.#rest.driven(j);
  }

  /**
   * Steps taken at rest: the solver is not run until a joint's drive changes (see rest.ts). Joint speeds then read
   * 0; angles, poses and contacts are those of the last step taken.
   */
  get restingSteps(): number {
    return this.#rest.restingSteps;
  }

  /** An external torque (N.m) about joint i's axis, applied each step until changed (a hand pushing). */
  /** The external torque on joint `i` this step (N.m: a hand's, a fault's). */
  externalTorque(i: number): number {
    return this.#joints[i]!.externalTorque;
  }

  setExternalTorque(i: number, torque: number): void {
    const j = this.#joints[i]!;
    j.externalTorque = torque;
    this.#rest.pushed(j);
  }

  /** The solver's iterations (substeps) a step, as Rapier holds them. */
  get solverIterations(): number {
    return this.#world.integrationParameters.numSolverIterations;
  }

  step(): void {
    if (this.#rest.skip()) return;
    // The hand's torques as forces, not impulses: Rapier applies forces in each of its substeps, where the friction
    // motor's cap is budget x substep; an impulse given all at once up front would slip past it in the first substep.
    this.#applyTorques();
    const parked = this.#parked;
    this.#parked = [];
    this.#world.step();
    // Out for that one step, their pairs were dropped: the next step finds them afresh.
    for (const [collider, groups] of parked) collider.setCollisionGroups(groups);
    this.#comsFresh = false;
    const rotations = this.#readRotations();
    for (let i = 0; i < this.#joints.length; i++) {
      const j = this.#joints[i]!;
      const q = this.#measure(i, rotations);
      j.speed = (q - j.unwrapped) / this.dt;
      j.unwrapped = q;
    }
    this.#contacts = undefined;
    this.#dropContactsLeftBehind();
    this.#rest.stepped();
  }

  /**
   * Every CONTACT_CHECK_STEPS steps taken: a pair pushing across a gap or from points deeper than its shapes
   * (staleContactColliders) has its link's collider left out of the next step, so Rapier makes its contact anew
   * (docs/decisions/0087-contacts-left-behind.md). A world at rest takes no step and looks at nothing.
   */
  #dropContactsLeftBehind(): void {
    if (++this.#sinceContactCheck < CONTACT_CHECK_STEPS) return;
    this.#sinceContactCheck = 0;
    for (const collider of staleContactColliders(this.#world, this.#colliderNames, (n) =>
      this.#bodies.has(n),
    )) {
      this.#parked.push([collider, collider.collisionGroups()]);
      collider.setCollisionGroups(0);
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
    this.#rest.wake();
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
      if (j.mode === 'slipping') j.mode = 'held';
      j.axisNow = undefined;
      j.speed = 0;
      j.heldTorque = 0;
    }
    this.#contacts = undefined;
    this.#comsFresh = false;
  }

  /**
   * Turns joint i to `angle` (rad), turning at `speed` (rad/s) against its parent link, with everything beyond it
   * carried rigidly: the rest of the world keeps its motion and its gearbox states (setAngles stops them all).
   */
  turnJoint(i: number, angle: number, speed = 0): void {
    const j = this.#joints[i]!;
    const delta = angle - j.unwrapped;
    this.#rest.wake();
    const axis = this.#axis(j);
    const o = j.child.translation();
    const origin: V3 = [o.x, o.y, o.z];
    const turn = qaxisAngle(axis, delta);
    const about = (p: { x: number; y: number; z: number }) => {
      const r = qrotate(turn, [p.x - origin[0], p.y - origin[1], p.z - origin[2]]);
      return { x: r[0] + origin[0], y: r[1] + origin[1], z: r[2] + origin[2] };
    };
    const parentMoves = j.parent.isDynamic();
    const w = parentMoves ? j.parent.angvel() : { x: 0, y: 0, z: 0 };
    // The subtree spins with its parent, plus the joint's own turn about its axis through the joint's origin.
    const spin = { x: w.x + axis[0] * speed, y: w.y + axis[1] * speed, z: w.z + axis[2] * speed };
    for (const k of j.subtree) {
      const body = this.#bodyList[k]!;
      const com = about(body.worldCom());
      body.setTranslation(about(body.translation()), false);
      body.setRotation(qnormalize(qmul(turn, body.rotation())), false);
      body.setAngvel(spin, false);
      const carried = parentMoves ? j.parent.velocityAtPoint(com) : { x: 0, y: 0, z: 0 };
      const [rx, ry, rz] = [com.x - origin[0], com.y - origin[1], com.z - origin[2]];
      body.setLinvel(
        {
          x: carried.x + speed * (axis[1] * rz - axis[2] * ry),
          y: carried.y + speed * (axis[2] * rx - axis[0] * rz),
          z: carried.z + speed * (axis[0] * ry - axis[1] * rx),
        },
        false,
      );
    }
    j.unwrapped = angle;
    j.anchor = angle;
    if (j.mode === 'slipping') j.mode = 'held';
    j.speed = speed;
    j.heldTorque = 0;
    for (const other of this.#joints) other.axisNow = undefined;
    this.#contacts = undefined;
    this.#comsFresh = false;
  }

  /** The contacts of the last step: touching pairs of links (or a link and the table), deepest first. */
  contacts(): readonly Contact[] {
    this.#contacts ??= readContacts(this.#world, this.#colliderNames);
    return this.#contacts;
  }

  /**
   * The joints a pressing contact of the last step acts across: one of its links in the joint's subtree, the other
   * outside it (another link, or the table). Such a joint holds part of its load against the contact.
   */
  pressedJoints(): Set<string> {
    const pressed = new Set<string>();
    const pressing = this.contacts().filter((c) => c.impulse > 0);
    if (!pressing.length) return pressed;
    const subtrees = this.#subtrees();
    for (const [k, j] of this.#joints.entries()) {
      const subtree = subtrees[k]!;
      if (pressing.some((c) => subtree.has(c.a) !== subtree.has(c.b))) pressed.add(j.urdf.name);
    }
    return pressed;
  }

  /**
   * Of `joints` (names), those with a pair of links across them (one in the joint's subtree, the other outside it, or
   * the table) whose shapes may meet and are within `gap` (m) of each other: where the twin's links nearly touch.
   */
  jointsNear(joints: Iterable<string>, gap: number): Set<string> {
    const near = new Set<string>();
    const subtrees = this.#subtrees();
    this.#joined ??= new Set(this.#urdf.joints.map((j) => pairKey(j.parent, j.child)));
    for (const name of joints) {
      const subtree = subtrees[this.jointIndex(name)]!;
      const inside = (link: string) => subtree.has(link);
      if (nearestGap(this.#world, this.#colliderNames, inside, this.#joined, gap) !== undefined)
        near.add(name);
    }
    return near;
  }

  /** Each joint's subtree as a set of link names, made when first asked. */
  #subtrees(): Set<string>[] {
    const names = [...this.#bodies.keys()];
    return (this.#subtreeLinks ??= this.#joints.map((j) => new Set(j.subtree.map((i) => names[i]!))));
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

import type { ChainConfig, MotorConfig } from '../config/robot-config.ts';
import { ConfigError, badRequest } from '../core/errors.ts';
import { degToRad, jointToUser, rawToUser, userToJoint } from '../core/frames.ts';
import { IDENTITY_POSE, composePoses, jointPose, type Mat3, type Pose } from '../urdf/transform.ts';
import type { UrdfJoint, UrdfRobot, Vec3 } from '../urdf/types.ts';

/** End frame of a chain in the URDF root frame. `rotation` is row-major; its first column is the end frame's X axis. */
export interface ChainPose {
  readonly position: Vec3;
  readonly rotation: Mat3;
}

/**
 * Scratch buffers filled by KinematicChain.computeFrames: per joint its origin and unit axis in the root frame, and the end pose.
 * Reused across calls so the solver does not allocate in its inner loop.
 */
export class ChainFrames {
  readonly origins: Float64Array;
  readonly axes: Float64Array;
  readonly position = new Float64Array(3);
  /** Row-major. */
  readonly rotation = new Float64Array(9);
  constructor(dof: number) {
    this.origins = new Float64Array(3 * dof);
    this.axes = new Float64Array(3 * dof);
  }
}

/** A serial chain of revolute joints from the URDF root to an end link, driven in user degrees through src/core/frames.ts. */
export class KinematicChain {
  readonly name: string;
  readonly motors: readonly string[];
  readonly passive: readonly boolean[];
  readonly dof: number;
  /** Joint limits (rad, URDF/raw frame) from the motors' raw angleLimit. */
  readonly lower: readonly number[];
  readonly upper: readonly number[];
  /** User-frame limits [min, max] in degrees. */
  readonly userLimits: readonly (readonly [number, number])[];
  readonly endLink: string;
  readonly tip: Vec3;

  private readonly frames: readonly MotorConfig[];
  /** Per joint: constant rotation (9, row-major) and translation (3) from the previous joint frame, and the axis (3). */
  private readonly originR: Float64Array;
  private readonly originT: Float64Array;
  private readonly axis: Float64Array;
  /** End frame in the last joint's child frame, tip included. */
  private readonly endR: Float64Array;
  private readonly endT: Float64Array;
  private readonly scratch: ChainFrames;

  private constructor(
    name: string,
    motors: readonly MotorConfig[],
    passive: readonly boolean[],
    joints: readonly { origin: Pose; axis: Vec3 }[],
    end: Pose,
    endLink: string,
    tip: Vec3,
  ) {
    this.name = name;
    this.frames = motors;
    this.motors = motors.map((m) => m.name);
    this.passive = passive;
    this.dof = motors.length;
    this.lower = motors.map((m) => degToRad(m.angleLimit[0]));
    this.upper = motors.map((m) => degToRad(m.angleLimit[1]));
    this.userLimits = motors.map((m) => {
      const a = rawToUser(m, m.angleLimit[0]);
      const b = rawToUser(m, m.angleLimit[1]);
      return [Math.min(a, b), Math.max(a, b)] as const;
    });
    this.endLink = endLink;
    this.tip = tip;
    this.originR = new Float64Array(joints.flatMap((j) => j.origin.rotation));
    this.originT = new Float64Array(joints.flatMap((j) => j.origin.translation));
    this.axis = new Float64Array(joints.flatMap((j) => j.axis));
    this.endR = new Float64Array(end.rotation);
    this.endT = new Float64Array(end.translation);
    this.scratch = new ChainFrames(this.dof);
  }

  /**
   * Builds the chain of `chainCfg.motors` (in order) from the URDF root to `chainCfg.endLink`.
   * Fixed joints on the way are folded in; any other movable joint on the path is a config error.
   */
  static fromUrdf(
    urdf: UrdfRobot,
    chainName: string,
    chainCfg: ChainConfig,
    motorConfigs: readonly MotorConfig[],
  ): KinematicChain {
    const field = `chains.${chainName}`;
    if (!urdf.links.has(chainCfg.endLink))
      throw new ConfigError(`${field}.endLink`, `URDF has no link "${chainCfg.endLink}"`);
    const byChild = new Map(urdf.joints.map((j) => [j.child, j]));
    const path: UrdfJoint[] = [];
    for (let link = chainCfg.endLink; link !== urdf.root;) {
      const joint = byChild.get(link);
      if (!joint)
        throw new ConfigError(
          `${field}.endLink`,
          `link "${link}" is not connected to the URDF root "${urdf.root}"`,
        );
      path.unshift(joint);
      link = joint.parent;
    }
    const movable = path.filter((j) => j.type !== 'fixed');
    const names = movable.map((j) => j.name);
    if (names.length !== chainCfg.motors.length || names.some((n, i) => n !== chainCfg.motors[i])) {
      throw new ConfigError(
        `${field}.motors`,
        `the joints from "${urdf.root}" to "${chainCfg.endLink}" are [${names.join(', ')}], not [${chainCfg.motors.join(', ')}]`,
      );
    }
    const motors = chainCfg.motors.map((name) => {
      const m = motorConfigs.find((c) => c.name === name);
      if (!m) throw new ConfigError(`${field}.motors`, `unknown motor "${name}"`);
      return m;
    });
    for (const p of chainCfg.passive) {
      if (!chainCfg.motors.includes(p))
        throw new ConfigError(`${field}.passive`, `"${p}" is not a motor of the chain`);
    }
    const joints: { origin: Pose; axis: Vec3 }[] = [];
    let pending: Pose = IDENTITY_POSE;
    for (const j of path) {
      if (j.type === 'fixed') {
        pending = composePoses(pending, jointPose(j, 0));
        continue;
      }
      if (j.type !== 'revolute' && j.type !== 'continuous') {
        throw new ConfigError(
          `${field}.motors`,
          `joint "${j.name}" is ${j.type}; only revolute joints are supported`,
        );
      }
      joints.push({ origin: composePoses(pending, jointPose({ ...j, type: 'fixed' }, 0)), axis: j.axis });
      pending = IDENTITY_POSE;
    }
    const end = composePoses(pending, { rotation: IDENTITY_POSE.rotation, translation: chainCfg.tip });
    return new KinematicChain(
      chainName,
      motors,
      motors.map((m) => chainCfg.passive.includes(m.name)),
      joints,
      end,
      chainCfg.endLink,
      chainCfg.tip,
    );
  }

  /** User degrees -> joint radians. Throws bad_request on a wrong arity or a non-finite value. */
  toJoint(userDegrees: readonly number[]): number[] {
    this.checkArity(userDegrees, 'angles');
    return userDegrees.map((u, i) => userToJoint(this.frames[i]!, u));
  }

  /** Joint radians -> user degrees. */
  toUser(q: ArrayLike<number>): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.dof; i++) out.push(jointToUser(this.frames[i]!, q[i]!));
    return out;
  }

  checkArity(values: readonly number[], what: string): void {
    if (!Array.isArray(values) || values.length !== this.dof) {
      throw badRequest(
        `chain ${this.name} needs ${this.dof} ${what}, got ${Array.isArray(values) ? values.length : typeof values}`,
        `give one value per motor: ${this.motors.join(', ')}`,
      );
    }
    values.forEach((v, i) => {
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        throw badRequest(
          `chain ${this.name}: ${what} for ${this.motors[i]} is not a finite number`,
          'use finite numbers',
        );
      }
    });
  }

  /** End pose (URDF root frame) for user-degree motor positions. */
  forward(userDegrees: readonly number[]): ChainPose {
    return this.forwardJoint(this.toJoint(userDegrees));
  }

  /** End pose (URDF root frame) for joint values in radians. */
  forwardJoint(q: ArrayLike<number>): ChainPose {
    const f = this.scratch;
    this.computeFrames(q, f);
    const p = f.position;
    const r = f.rotation;
    return {
      position: [p[0]!, p[1]!, p[2]!],
      rotation: [r[0]!, r[1]!, r[2]!, r[3]!, r[4]!, r[5]!, r[6]!, r[7]!, r[8]!],
    };
  }

  /** Fills `out` with each joint's origin and axis in the root frame and the end pose, for joint values q (rad). */
  computeFrames(q: ArrayLike<number>, out: ChainFrames): void {
    const { originR, originT, axis } = this;
    let r0 = 1,
      r1 = 0,
      r2 = 0,
      r3 = 0,
      r4 = 1,
      r5 = 0,
      r6 = 0,
      r7 = 0,
      r8 = 1;
    let px = 0,
      py = 0,
      pz = 0;
    for (let i = 0; i < this.dof; i++) {
      const o = 9 * i;
      const t = 3 * i;
      const tx = originT[t]!,
        ty = originT[t + 1]!,
        tz = originT[t + 2]!;
      px += r0 * tx + r1 * ty + r2 * tz;
      py += r3 * tx + r4 * ty + r5 * tz;
      pz += r6 * tx + r7 * ty + r8 * tz;
      const a0 = originR[o]!,
        a1 = originR[o + 1]!,
        a2 = originR[o + 2]!;
      const a3 = originR[o + 3]!,
        a4 = originR[o + 4]!,
        a5 = originR[o + 5]!;
      const a6 = originR[o + 6]!,
        a7 = originR[o + 7]!,
        a8 = originR[o + 8]!;
      const j0 = r0 * a0 + r1 * a3 + r2 * a6,
        j1 = r0 * a1 + r1 * a4 + r2 * a7,
        j2 = r0 * a2 + r1 * a5 + r2 * a8;
      const j3 = r3 * a0 + r4 * a3 + r5 * a6,
        j4 = r3 * a1 + r4 * a4 + r5 * a7,
        j5 = r3 * a2 + r4 * a5 + r5 * a8;
      const j6 = r6 * a0 + r7 * a3 + r8 * a6,
        j7 = r6 * a1 + r7 * a4 + r8 * a7,
        j8 = r6 * a2 + r7 * a5 + r8 * a8;
      const x = axis[t]!,
        y = axis[t + 1]!,
        z = axis[t + 2]!;
      out.origins[t] = px;
      out.origins[t + 1] = py;
      out.origins[t + 2] = pz;
      out.axes[t] = j0 * x + j1 * y + j2 * z;
      out.axes[t + 1] = j3 * x + j4 * y + j5 * z;
      out.axes[t + 2] = j6 * x + j7 * y + j8 * z;
      // Rodrigues rotation about the joint axis (joint frame), then R = J * Rot.
      const c = Math.cos(q[i]!);
      const s = Math.sin(q[i]!);
      const k = 1 - c;
      const b0 = k * x * x + c,
        b1 = k * x * y - s * z,
        b2 = k * x * z + s * y;
      const b3 = k * x * y + s * z,
        b4 = k * y * y + c,
        b5 = k * y * z - s * x;
      const b6 = k * x * z - s * y,
        b7 = k * y * z + s * x,
        b8 = k * z * z + c;
      r0 = j0 * b0 + j1 * b3 + j2 * b6;
      r1 = j0 * b1 + j1 * b4 + j2 * b7;
      r2 = j0 * b2 + j1 * b5 + j2 * b8;
      r3 = j3 * b0 + j4 * b3 + j5 * b6;
      r4 = j3 * b1 + j4 * b4 + j5 * b7;
      r5 = j3 * b2 + j4 * b5 + j5 * b8;
      r6 = j6 * b0 + j7 * b3 + j8 * b6;
      r7 = j6 * b1 + j7 * b4 + j8 * b7;
      r8 = j6 * b2 + j7 * b5 + j8 * b8;
    }
    const { endR: e, endT: et } = this;
    const tx = et[0]!,
      ty = et[1]!,
      tz = et[2]!;
    out.position[0] = px + r0 * tx + r1 * ty + r2 * tz;
    out.position[1] = py + r3 * tx + r4 * ty + r5 * tz;
    out.position[2] = pz + r6 * tx + r7 * ty + r8 * tz;
    const rot = out.rotation;
    for (let row = 0; row < 3; row++) {
      const a = row === 0 ? r0 : row === 1 ? r3 : r6;
      const b = row === 0 ? r1 : row === 1 ? r4 : r7;
      const c = row === 0 ? r2 : row === 1 ? r5 : r8;
      rot[3 * row] = a * e[0]! + b * e[3]! + c * e[6]!;
      rot[3 * row + 1] = a * e[1]! + b * e[4]! + c * e[7]!;
      rot[3 * row + 2] = a * e[2]! + b * e[5]! + c * e[8]!;
    }
  }
}

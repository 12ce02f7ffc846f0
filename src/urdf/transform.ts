/**
 * Small pure rigid-body helpers shared by the IK and physics code.
 * Mat3 is a row-major 3x3 matrix stored flat: [m00, m01, m02, m10, m11, m12, m20, m21, m22].
 * Rotations follow the URDF convention: rpy is fixed-axis roll-pitch-yaw, R = Rz(y) Ry(p) Rx(r).
 */
import type { UrdfJoint, Vec3 } from './types.ts';

export type { Vec3 };
export type Mat3 = readonly [number, number, number, number, number, number, number, number, number];
/** Quaternion as [x, y, z, w]. */
export type Quat = readonly [number, number, number, number];

/** A rigid transform: p_parent = rotation * p_child + translation. */
export interface Pose {
  readonly rotation: Mat3;
  readonly translation: Vec3;
}

export const IDENTITY3: Mat3 = [1, 0, 0, 0, 1, 0, 0, 0, 1];
export const ZERO3: Vec3 = [0, 0, 0];
export const IDENTITY_POSE: Pose = { rotation: IDENTITY3, translation: ZERO3 };

export function vec3(x: number, y: number, z: number): Vec3 {
  return [x, y, z];
}

export function addVec3(a: Vec3, b: Vec3): Vec3 {
  return [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
}

export function subVec3(a: Vec3, b: Vec3): Vec3 {
  return [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
}

export function scaleVec3(a: Vec3, s: number): Vec3 {
  return [a[0] * s, a[1] * s, a[2] * s];
}

export function dotVec3(a: Vec3, b: Vec3): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

export function crossVec3(a: Vec3, b: Vec3): Vec3 {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

export function normVec3(a: Vec3): number {
  return Math.hypot(a[0], a[1], a[2]);
}

export function distanceVec3(a: Vec3, b: Vec3): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

/** Throws on a zero (or non-finite) vector. */
export function normalizeVec3(a: Vec3): Vec3 {
  const n = normVec3(a);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`cannot normalise vector (${a.join(', ')})`);
  return [a[0] / n, a[1] / n, a[2] / n];
}

export function rotX(a: number): Mat3 {
  const c = Math.cos(a);
  const s = Math.sin(a);
  return [1, 0, 0, 0, c, -s, 0, s, c];
}

export function rotY(a: number): Mat3 {
  const c = Math.cos(a);
  const s = Math.sin(a);
  return [c, 0, s, 0, 1, 0, -s, 0, c];
}

export function rotZ(a: number): Mat3 {
  const c = Math.cos(a);
  const s = Math.sin(a);
  return [c, -s, 0, s, c, 0, 0, 0, 1];
}

/** R = Rz(yaw) Ry(pitch) Rx(roll). */
export function rpyToMatrix(roll: number, pitch: number, yaw: number): Mat3 {
  const cr = Math.cos(roll);
  const sr = Math.sin(roll);
  const cp = Math.cos(pitch);
  const sp = Math.sin(pitch);
  const cy = Math.cos(yaw);
  const sy = Math.sin(yaw);
  return [
    cy * cp,
    cy * sp * sr - sy * cr,
    cy * sp * cr + sy * sr,
    sy * cp,
    sy * sp * sr + cy * cr,
    sy * sp * cr - cy * sr,
    -sp,
    cp * sr,
    cp * cr,
  ];
}

/** Inverse of rpyToMatrix; pitch in [-pi/2, pi/2]. At gimbal lock the roll is set to 0. */
export function matrixToRpy(m: Mat3): Vec3 {
  const sp = Math.max(-1, Math.min(1, -m[6]));
  const pitch = Math.asin(sp);
  if (Math.abs(sp) > 1 - 1e-12) {
    return [0, pitch, Math.atan2(-m[1], m[4])];
  }
  return [Math.atan2(m[7], m[8]), pitch, Math.atan2(m[3], m[0])];
}

/** Rotation of `angle` rad about the unit vector `axis` (Rodrigues). */
export function axisAngleToMatrix(axis: Vec3, angle: number): Mat3 {
  const [x, y, z] = axis;
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const t = 1 - c;
  return [
    t * x * x + c,
    t * x * y - s * z,
    t * x * z + s * y,
    t * x * y + s * z,
    t * y * y + c,
    t * y * z - s * x,
    t * x * z - s * y,
    t * y * z + s * x,
    t * z * z + c,
  ];
}

/** Rotation vector (axis * angle, angle in [0, pi]) of a rotation matrix: the log map. */
export function matrixToRotationVector(m: Mat3): Vec3 {
  const cos = Math.max(-1, Math.min(1, (m[0] + m[4] + m[8] - 1) / 2));
  const angle = Math.acos(cos);
  const wx = m[7] - m[5];
  const wy = m[2] - m[6];
  const wz = m[3] - m[1];
  if (angle < 1e-6) return [wx / 2, wy / 2, wz / 2];
  if (Math.PI - angle > 1e-4) {
    const k = angle / (2 * Math.sin(angle));
    return [wx * k, wy * k, wz * k];
  }
  // Near pi the skew part vanishes: take the axis from the symmetric part, its sign from the skew part.
  const xx = Math.sqrt(Math.max(0, (m[0] + 1) / 2));
  const yy = Math.sqrt(Math.max(0, (m[4] + 1) / 2));
  const zz = Math.sqrt(Math.max(0, (m[8] + 1) / 2));
  let axis: Vec3;
  if (xx >= yy && xx >= zz) axis = [xx, (m[1] + m[3]) / (4 * xx), (m[2] + m[6]) / (4 * xx)];
  else if (yy >= zz) axis = [(m[1] + m[3]) / (4 * yy), yy, (m[5] + m[7]) / (4 * yy)];
  else axis = [(m[2] + m[6]) / (4 * zz), (m[5] + m[7]) / (4 * zz), zz];
  if (axis[0] * wx + axis[1] * wy + axis[2] * wz < 0) axis = [-axis[0], -axis[1], -axis[2]];
  const n = normVec3(axis);
  return [(axis[0] / n) * angle, (axis[1] / n) * angle, (axis[2] / n) * angle];
}

export function mulMat3(a: Mat3, b: Mat3): Mat3 {
  return [
    a[0] * b[0] + a[1] * b[3] + a[2] * b[6],
    a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
    a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
    a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
    a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
    a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
    a[6] * b[0] + a[7] * b[3] + a[8] * b[6],
    a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
    a[6] * b[2] + a[7] * b[5] + a[8] * b[8],
  ];
}

export function transposeMat3(a: Mat3): Mat3 {
  return [a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]];
}

export function mulMat3Vec3(a: Mat3, v: Vec3): Vec3 {
  return [
    a[0] * v[0] + a[1] * v[1] + a[2] * v[2],
    a[3] * v[0] + a[4] * v[1] + a[5] * v[2],
    a[6] * v[0] + a[7] * v[1] + a[8] * v[2],
  ];
}

/** Column `i` (0..2) of a matrix: the image of the i-th basis vector. */
export function mat3Column(a: Mat3, i: 0 | 1 | 2): Vec3 {
  if (i === 0) return [a[0], a[3], a[6]];
  if (i === 1) return [a[1], a[4], a[7]];
  return [a[2], a[5], a[8]];
}

/** Angle (rad, 0..pi) of the rotation taking a to b. */
export function rotationAngle(a: Mat3, b: Mat3): number {
  const trace =
    a[0] * b[0] + a[3] * b[3] + a[6] * b[6] + a[1] * b[1] + a[4] * b[4] + a[7] * b[7] + a[2] * b[2] + a[5] * b[5] + a[8] * b[8];
  const cos = Math.max(-1, Math.min(1, (trace - 1) / 2));
  // acos loses precision near 0; the chord formula does not.
  if (cos > 0.99) {
    const d = Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5], a[6] - b[6], a[7] - b[7], a[8] - b[8]);
    return 2 * Math.asin(Math.min(1, d / (2 * Math.SQRT2)));
  }
  return Math.acos(cos);
}

/** Angle (rad, 0..pi) between two non-zero vectors. */
export function angleBetween(a: Vec3, b: Vec3): number {
  return Math.atan2(normVec3(crossVec3(a, b)), dotVec3(a, b));
}

export function mat3ToRows(a: Mat3): number[][] {
  return [
    [a[0], a[1], a[2]],
    [a[3], a[4], a[5]],
    [a[6], a[7], a[8]],
  ];
}

/** Throws unless `rows` is 3 rows of 3 numbers. */
export function rowsToMat3(rows: readonly (readonly number[])[]): Mat3 {
  if (rows.length !== 3 || rows.some((r) => r.length !== 3)) throw new Error('a 3x3 matrix needs 3 rows of 3 numbers');
  const [r0, r1, r2] = rows as readonly [readonly number[], readonly number[], readonly number[]];
  return [r0[0]!, r0[1]!, r0[2]!, r1[0]!, r1[1]!, r1[2]!, r2[0]!, r2[1]!, r2[2]!];
}

export function matrixToQuaternion(m: Mat3): Quat {
  const trace = m[0] + m[4] + m[8];
  let x: number, y: number, z: number, w: number;
  if (trace > 0) {
    const s = Math.sqrt(trace + 1) * 2;
    w = s / 4;
    x = (m[7] - m[5]) / s;
    y = (m[2] - m[6]) / s;
    z = (m[3] - m[1]) / s;
  } else if (m[0] > m[4] && m[0] > m[8]) {
    const s = Math.sqrt(1 + m[0] - m[4] - m[8]) * 2;
    w = (m[7] - m[5]) / s;
    x = s / 4;
    y = (m[1] + m[3]) / s;
    z = (m[2] + m[6]) / s;
  } else if (m[4] > m[8]) {
    const s = Math.sqrt(1 + m[4] - m[0] - m[8]) * 2;
    w = (m[2] - m[6]) / s;
    x = (m[1] + m[3]) / s;
    y = s / 4;
    z = (m[5] + m[7]) / s;
  } else {
    const s = Math.sqrt(1 + m[8] - m[0] - m[4]) * 2;
    w = (m[3] - m[1]) / s;
    x = (m[2] + m[6]) / s;
    y = (m[5] + m[7]) / s;
    z = s / 4;
  }
  const n = Math.hypot(x, y, z, w);
  return w < 0 ? [-x / n, -y / n, -z / n, -w / n] : [x / n, y / n, z / n, w / n];
}

export function quaternionToMatrix(q: Quat): Mat3 {
  const [x, y, z, w] = q;
  const n = Math.hypot(x, y, z, w);
  const a = x / n;
  const b = y / n;
  const c = z / n;
  const d = w / n;
  return [
    1 - 2 * (b * b + c * c),
    2 * (a * b - c * d),
    2 * (a * c + b * d),
    2 * (a * b + c * d),
    1 - 2 * (a * a + c * c),
    2 * (b * c - a * d),
    2 * (a * c - b * d),
    2 * (b * c + a * d),
    1 - 2 * (a * a + b * b),
  ];
}

export function poseFromOrigin(xyz: Vec3, rpy: Vec3): Pose {
  return { rotation: rpyToMatrix(rpy[0], rpy[1], rpy[2]), translation: xyz };
}

/** a * b: first b, then a (b expressed in a's child frame). */
export function composePoses(a: Pose, b: Pose): Pose {
  return {
    rotation: mulMat3(a.rotation, b.rotation),
    translation: addVec3(mulMat3Vec3(a.rotation, b.translation), a.translation),
  };
}

export function invertPose(a: Pose): Pose {
  const rt = transposeMat3(a.rotation);
  return { rotation: rt, translation: scaleVec3(mulMat3Vec3(rt, a.translation), -1) };
}

export function transformPoint(pose: Pose, p: Vec3): Vec3 {
  return addVec3(mulMat3Vec3(pose.rotation, p), pose.translation);
}

/** Pose of a joint's child frame in its parent frame for joint value q (rad, or m for prismatic). */
export function jointPose(joint: UrdfJoint, q: number): Pose {
  const origin = poseFromOrigin(joint.xyz, joint.rpy);
  switch (joint.type) {
    case 'fixed':
      return origin;
    case 'prismatic':
      return composePoses(origin, { rotation: IDENTITY3, translation: scaleVec3(joint.axis, q) });
    case 'revolute':
    case 'continuous':
      return composePoses(origin, { rotation: axisAngleToMatrix(joint.axis, q), translation: ZERO3 });
  }
}

/** Minimal quaternion math for the physics world (x, y, z, w), Rapier's convention. */
import { matrixToQuaternion, rowsToMat3 } from '../urdf/transform.ts';
export interface Quat {
  x: number;
  y: number;
  z: number;
  w: number;
}
export type V3 = readonly [number, number, number];

export const IDENTITY: Quat = { x: 0, y: 0, z: 0, w: 1 };

export function qmul(a: Quat, b: Quat): Quat {
  return {
    w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
    y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
    z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
  };
}

export function qconj(q: Quat): Quat {
  return { x: -q.x, y: -q.y, z: -q.z, w: q.w };
}

export function qaxisAngle(axis: V3, angle: number): Quat {
  const n = Math.hypot(axis[0], axis[1], axis[2]) || 1;
  const s = Math.sin(angle / 2) / n;
  return { x: axis[0] * s, y: axis[1] * s, z: axis[2] * s, w: Math.cos(angle / 2) };
}

/** URDF fixed-axis roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r). */
export function qrpy(rpy: V3): Quat {
  return qmul(
    qaxisAngle([0, 0, 1], rpy[2]),
    qmul(qaxisAngle([0, 1, 0], rpy[1]), qaxisAngle([1, 0, 0], rpy[0])),
  );
}

export function qrotate(q: Quat, v: V3): [number, number, number] {
  const p = qmul(qmul(q, { x: v[0], y: v[1], z: v[2], w: 0 }), qconj(q));
  return [p.x, p.y, p.z];
}

/** The shortest rotation taking the unit x axis onto `axis`. */
export function qalignX(axis: V3): Quat {
  const n = Math.hypot(axis[0], axis[1], axis[2]);
  const a: V3 = [axis[0] / n, axis[1] / n, axis[2] / n];
  const dot = a[0];
  if (dot > 1 - 1e-12) return { ...IDENTITY };
  if (dot < -1 + 1e-12) return qaxisAngle([0, 0, 1], Math.PI);
  // cross(x, a) = (0, -a.z, a.y)
  return qnormalize({ x: 0, y: -a[2], z: a[1], w: 1 + dot });
}

export function qnormalize(q: Quat): Quat {
  const n = Math.hypot(q.x, q.y, q.z, q.w) || 1;
  return { x: q.x / n, y: q.y / n, z: q.z / n, w: q.w / n };
}

/** Signed rotation angle of `q` about unit `axis` (twist part), in (-pi, pi]. */
export function twistAngle(q: Quat, axis: V3): number {
  const proj = q.x * axis[0] + q.y * axis[1] + q.z * axis[2];
  return 2 * Math.atan2(proj, q.w);
}

export function vadd(a: V3, b: V3): [number, number, number] {
  return [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
}

/** Eigen-decomposition of a symmetric 3x3 (Jacobi): principal values and the rotation whose columns are the axes. */
export function symmetricEigen(m: readonly number[][]): { values: [number, number, number]; rotation: Quat } {
  const a = m.map((r) => [...r]);
  const v = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ];
  for (let sweep = 0; sweep < 50; sweep++) {
    const off = Math.abs(a[0]![1]!) + Math.abs(a[0]![2]!) + Math.abs(a[1]![2]!);
    if (off < 1e-18) break;
    for (const [p, q] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ] as const) {
      const apq = a[p]![q]!;
      if (Math.abs(apq) < 1e-30) continue;
      const theta = (a[q]![q]! - a[p]![p]!) / (2 * apq);
      const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
      const c = 1 / Math.sqrt(t * t + 1);
      const s = t * c;
      for (let k = 0; k < 3; k++) {
        const akp = a[k]![p]!;
        const akq = a[k]![q]!;
        a[k]![p] = c * akp - s * akq;
        a[k]![q] = s * akp + c * akq;
      }
      for (let k = 0; k < 3; k++) {
        const apk = a[p]![k]!;
        const aqk = a[q]![k]!;
        a[p]![k] = c * apk - s * aqk;
        a[q]![k] = s * apk + c * aqk;
      }
      for (let k = 0; k < 3; k++) {
        const vkp = v[k]![p]!;
        const vkq = v[k]![q]!;
        v[k]![p] = c * vkp - s * vkq;
        v[k]![q] = s * vkp + c * vkq;
      }
    }
  }
  // Make the eigenvector basis right-handed, then convert to a quaternion.
  const det =
    v[0]![0]! * (v[1]![1]! * v[2]![2]! - v[1]![2]! * v[2]![1]!) -
    v[0]![1]! * (v[1]![0]! * v[2]![2]! - v[1]![2]! * v[2]![0]!) +
    v[0]![2]! * (v[1]![0]! * v[2]![1]! - v[1]![1]! * v[2]![0]!);
  if (det < 0) for (let k = 0; k < 3; k++) v[k]![2] = -v[k]![2]!;
  return {
    values: [a[0]![0]!, a[1]![1]!, a[2]![2]!],
    rotation: quatFromTuple(matrixToQuaternion(rowsToMat3(v))),
  };
}

function quatFromTuple([x, y, z, w]: readonly [number, number, number, number]): Quat {
  return { x, y, z, w };
}

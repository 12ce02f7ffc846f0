import { expect } from 'chai';
import {
  angleBetween,
  axisAngleToMatrix,
  composePoses,
  crossVec3,
  invertPose,
  jointPose,
  mat3Column,
  mat3ToRows,
  matrixToQuaternion,
  matrixToRotationVector,
  matrixToRpy,
  mulMat3,
  mulMat3Vec3,
  normalizeVec3,
  quaternionToMatrix,
  rotationAngle,
  rotX,
  rotY,
  rotZ,
  rowsToMat3,
  rpyToMatrix,
  transformPoint,
  transposeMat3,
  IDENTITY3,
  type Mat3,
} from '../../src/urdf/transform.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import type { UrdfJoint } from '../../src/urdf/types.ts';

function expectMatClose(a: Mat3, b: Mat3, tol = 1e-12): void {
  a.forEach((v, i) => expect(v, `element ${i}`).to.be.closeTo(b[i]!, tol));
}

describe('urdf/transform', () => {
  const rand = mulberry32(42);
  const angles = Array.from({ length: 50 }, () => [(rand() - 0.5) * 6, (rand() - 0.5) * 3, (rand() - 0.5) * 6] as const);

  it('rpyToMatrix is Rz(y) Ry(p) Rx(r)', () => {
    for (const [r, p, y] of angles) expectMatClose(rpyToMatrix(r, p, y), mulMat3(rotZ(y), mulMat3(rotY(p), rotX(r))));
  });

  it('matrixToRpy inverts rpyToMatrix', () => {
    for (const [r, p, y] of angles) {
      const m = rpyToMatrix(r, p, y);
      const [r2, p2, y2] = matrixToRpy(m);
      expectMatClose(rpyToMatrix(r2, p2, y2), m, 1e-9);
    }
    expectMatClose(rpyToMatrix(...matrixToRpy(rpyToMatrix(0.3, Math.PI / 2, 0.2))), rpyToMatrix(0.3, Math.PI / 2, 0.2), 1e-9);
  });

  it('axisAngleToMatrix turns about the axis, right-handed', () => {
    expectMatClose(axisAngleToMatrix([0, 0, 1], 0.7), rotZ(0.7));
    expectMatClose(axisAngleToMatrix([-1, 0, 0], 0.7), rotX(-0.7));
    const axis = normalizeVec3([1, 2, 3]);
    const m = axisAngleToMatrix(axis, 1.1);
    mulMat3Vec3(m, axis).forEach((v, i) => expect(v).to.be.closeTo(axis[i]!, 1e-12));
    expect(rotationAngle(IDENTITY3, m)).to.be.closeTo(1.1, 1e-12);
  });

  it('matrixToRotationVector is the log map, also near pi', () => {
    for (const angle of [0, 1e-8, 0.5, 2, Math.PI - 1e-6, Math.PI]) {
      const axis = normalizeVec3([0.3, -0.5, 0.8]);
      const v = matrixToRotationVector(axisAngleToMatrix(axis, angle));
      const back = axisAngleToMatrix(Math.hypot(...v) > 0 ? normalizeVec3(v) : [1, 0, 0], Math.hypot(...v));
      expectMatClose(back, axisAngleToMatrix(axis, angle), 1e-6);
    }
  });

  it('quaternions round-trip', () => {
    for (const [r, p, y] of angles) {
      const m = rpyToMatrix(r, p, y);
      expectMatClose(quaternionToMatrix(matrixToQuaternion(m)), m, 1e-12);
    }
    expect(matrixToQuaternion(IDENTITY3)).to.deep.equal([0, 0, 0, 1]);
  });

  it('composes and inverts poses', () => {
    const a = { rotation: rpyToMatrix(0.1, 0.2, 0.3), translation: [1, 2, 3] as const };
    const b = { rotation: rpyToMatrix(-0.4, 0.5, 1), translation: [-1, 0.5, 2] as const };
    const p = [0.3, -0.2, 0.9] as const;
    transformPoint(composePoses(a, b), p).forEach((v, i) => expect(v).to.be.closeTo(transformPoint(a, transformPoint(b, p))[i]!, 1e-12));
    const id = composePoses(a, invertPose(a));
    expectMatClose(id.rotation, IDENTITY3);
    id.translation.forEach((v) => expect(v).to.be.closeTo(0, 1e-12));
  });

  it('jointPose = origin * Rot(axis, q)', () => {
    const joint: UrdfJoint = { name: 'j', type: 'revolute', parent: 'a', child: 'b', xyz: [0, 0.1, 0], rpy: [Math.PI / 2, 0, 0], axis: [0, 0, 1] };
    const pose = jointPose(joint, Math.PI / 2);
    expectMatClose(pose.rotation, mulMat3(rotX(Math.PI / 2), rotZ(Math.PI / 2)));
    expect(pose.translation).to.deep.equal([0, 0.1, 0]);
    const slide = jointPose({ ...joint, type: 'prismatic', rpy: [0, 0, 0] }, 0.5);
    slide.translation.forEach((v, i) => expect(v).to.be.closeTo([0, 0.1, 0.5][i]!, 1e-15));
    expectMatClose(jointPose({ ...joint, type: 'fixed' }, 1).rotation, rotX(Math.PI / 2));
  });

  it('has consistent small helpers', () => {
    expect(crossVec3([1, 0, 0], [0, 1, 0])).to.deep.equal([0, 0, 1]);
    expect(angleBetween([1, 0, 0], [0, 0, 2])).to.be.closeTo(Math.PI / 2, 1e-15);
    const m = rpyToMatrix(0.1, 0.2, 0.3);
    expect(rowsToMat3(mat3ToRows(m))).to.deep.equal(m);
    expect(mat3Column(m, 0)).to.deep.equal([m[0], m[3], m[6]]);
    expectMatClose(mulMat3(m, transposeMat3(m)), IDENTITY3);
    expect(rotationAngle(m, m)).to.equal(0);
    expect(() => normalizeVec3([0, 0, 0])).to.throw(Error);
    expect(() => rowsToMat3([[1, 2, 3]])).to.throw(Error);
  });
});

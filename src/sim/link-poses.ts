/** Where a robot's links are for given joint angles, from the URDF's joint origins alone (no physics). */
import type { UrdfRobot } from '../urdf/types.ts';
import { type Quat, type V3, IDENTITY, qaxisAngle, qmul, qrotate, qrpy, vadd } from './quat.ts';

/** A link frame's pose in the root frame. */
export interface LinkPose {
  readonly p: V3;
  readonly q: Quat;
}

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

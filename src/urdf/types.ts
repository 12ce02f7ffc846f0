/** Plain typed data read from a URDF file. Lengths in metres, angles in radians, masses in kg. */

export type Vec3 = readonly [number, number, number];

export interface UrdfInertial {
  readonly mass: number;
  /** Centre of mass in the link frame. */
  readonly com: Vec3;
  /** Inertia tensor about the COM, in the link frame: ixx, ixy, ixz, iyy, iyz, izz. */
  readonly inertia: readonly [number, number, number, number, number, number];
}

/**
 * Collision/visual geometry. A mesh is read from its STL file when the URDF is loaded from disk: its triangles
 * (x, y, z of three corners each, in metres after the scale), which the physics turns into their convex hull.
 */
export type UrdfGeometry =
  | { readonly kind: 'box'; readonly size: Vec3 }
  | { readonly kind: 'cylinder'; readonly radius: number; readonly length: number }
  | { readonly kind: 'sphere'; readonly radius: number }
  | { readonly kind: 'mesh'; readonly filename: string; readonly triangles: Float32Array };

export interface UrdfShape {
  /** Pose of the shape in the link frame. */
  readonly xyz: Vec3;
  readonly rpy: Vec3;
  readonly geometry: UrdfGeometry;
  /** RGBA 0..1, visual shapes only. */
  readonly rgba?: readonly [number, number, number, number];
}

export interface UrdfLink {
  readonly name: string;
  readonly inertial?: UrdfInertial;
  readonly visuals: readonly UrdfShape[];
  readonly collisions: readonly UrdfShape[];
}

export type UrdfJointType = 'revolute' | 'continuous' | 'fixed' | 'prismatic';

export interface UrdfJoint {
  readonly name: string;
  readonly type: UrdfJointType;
  readonly parent: string;
  readonly child: string;
  /** Pose of the child frame in the parent frame at q = 0 (URDF fixed-axis rpy: R = Rz(y) Ry(p) Rx(r)). */
  readonly xyz: Vec3;
  readonly rpy: Vec3;
  /** Unit rotation axis in the child (joint) frame. */
  readonly axis: Vec3;
  readonly limit?: { readonly lower: number; readonly upper: number; readonly effort: number; readonly velocity: number };
}

export interface UrdfRobot {
  readonly name: string;
  /** Name of the one link that is no joint's child. */
  readonly root: string;
  /** Links by name, in file order. */
  readonly links: ReadonlyMap<string, UrdfLink>;
  /** Joints in file order. */
  readonly joints: readonly UrdfJoint[];
}

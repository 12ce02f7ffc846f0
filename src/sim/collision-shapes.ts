/**
 * The robot's collision shapes in Rapier: a URDF shape as a Rapier shape, placed where its link is, and the pairs of
 * links that never collide (overlapping by design at the zero pose; two joints apart where the robot says so).
 */
import RAPIER from '@dimforge/rapier3d-simd-compat';
import type { UrdfRobot, UrdfShape } from '../urdf/types.ts';
import { type Quat, type V3, qaxisAngle, qmul, qrotate, qrpy, vadd } from './quat.ts';
import type { LinkPose } from './link-poses.ts';

/** Deeper than this at the zero pose, two links' shapes overlap by design (meshes drawn through each other). */
const DESIGNED_OVERLAP = 0.001;

/** A link's collider with its shape and the shape's pose in the link frame (shapeOf). */
export type LinkCollider = { link: string; collider: RAPIER.Collider; shape: RAPIER.Shape; p: V3; q: Quat };
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

/** Links two joints apart: a link and its grandchild, and two children of one link. */
export function pairsTwoJointsApart(urdf: UrdfRobot): [string, string][] {
  const pairs: [string, string][] = [];
  for (const j of urdf.joints) {
    for (const k of urdf.joints) if (k.parent === j.child) pairs.push([j.parent, k.child]);
    for (const k of urdf.joints)
      if (k.parent === j.parent && k.child > j.child) pairs.push([j.child, k.child]);
  }
  return pairs;
}

/**
 * Links whose collision shapes already overlap at the zero pose, where the robot is assembled with nothing in
 * collision, overlap by design (a collision mesh drawn through a neighbour's neighbour, such as the Poppy spine's
 * through the chest across the two-servo bust block): they never collide with each other. Computed from the shapes,
 * not listed by hand, as robot setup tools do. `zero`: the links' poses at the zero pose; `apart`: pairs that never
 * collide anyway (pairsTwoJointsApart where the robot config says so), not scanned. Both kept apart by
 * noContactGroups.
 */
export function separateDesignedOverlaps(
  urdf: UrdfRobot,
  colliders: readonly LinkCollider[],
  zero: ReadonlyMap<string, LinkPose>,
  apart: readonly (readonly [string, string])[] = [],
): (readonly [string, string])[] {
  const skip = new Set(
    [...urdf.joints.map((j) => [j.parent, j.child] as const), ...apart].flatMap(([a, b]) => [
      `${a}|${b}`,
      `${b}|${a}`,
    ]),
  );
  const placed = colliders.map((c) => ({
    link: c.link,
    radius: boundingRadius(c.shape),
    ...placeShape(zero.get(c.link)!, c),
  }));
  const pairs: (readonly [string, string])[] = [];
  for (let i = 0; i < placed.length; i++)
    for (let k = i + 1; k < placed.length; k++) {
      const a = placed[i]!;
      const b = placed[k]!;
      const key = `${a.link}|${b.link}`;
      // Skipped: a link's own shapes, joined links, and a pair found already (a link's several shapes are one pair).
      if (a.link === b.link || skip.has(key)) continue;
      // Apart for sure: most pairs, and a hull's exact query costs tens of microseconds (it is rebuilt each call).
      const centres = Math.hypot(a.p.x - b.p.x, a.p.y - b.p.y, a.p.z - b.p.z);
      if (centres > a.radius + b.radius) continue;
      if (overlapDepth(a, b) <= DESIGNED_OVERLAP) continue;
      pairs.push([a.link, b.link]);
      skip.add(key).add(`${b.link}|${a.link}`);
    }
  noContactGroups(colliders, [...pairs, ...apart]);
  return pairs;
}

/**
 * Keeps each pair of links out of contact with Rapier's collision groups (free in the solver, unlike a joint): one
 * membership bit per owner, a link on one side of some pairs, left out of the filter of the links it must not meet.
 * Owners are taken most-paired first (the Humanoid's pairs two joints apart need 14 bits so, 16 in pair order); more
 * owners than Rapier's 16 bits is an error, not a silent miss.
 */
function noContactGroups(
  colliders: readonly LinkCollider[],
  pairs: readonly (readonly [string, string])[],
): void {
  const bitOf = new Map<string, number>();
  const excluded = new Map<string, number>(); // link -> bits it must not meet
  let left = pairs;
  while (left.length > 0) {
    const count = new Map<string, number>();
    for (const pair of left) for (const link of pair) count.set(link, (count.get(link) ?? 0) + 1);
    const owner = [...count].reduce((best, c) => (c[1] > best[1] ? c : best))[0];
    if (bitOf.size === 16) throw new Error('more than 16 links to keep out of contact with collision groups');
    bitOf.set(owner, bitOf.size);
    for (const [a, b] of left)
      if (a === owner || b === owner) {
        const other = a === owner ? b : a;
        excluded.set(other, (excluded.get(other) ?? 0) | (1 << bitOf.get(owner)!));
      }
    left = left.filter(([a, b]) => a !== owner && b !== owner);
  }
  for (const c of colliders) {
    const bit = bitOf.get(c.link);
    const membership = bit === undefined ? 0xffff : 1 << bit;
    const filter = 0xffff & ~(excluded.get(c.link) ?? 0);
    if (membership !== 0xffff || filter !== 0xffff)
      c.collider.setCollisionGroups(((membership << 16) | filter) >>> 0);
  }
}

/**
 * The collider's shape for queries: a hull given as points becomes the hull Rapier computed for the collider (its
 * vertices and faces), so a query does not compute the hull again (7x faster over the Torso's shapes).
 */
export function settledShape(collider: RAPIER.Collider, shape: RAPIER.Shape): RAPIER.Shape {
  if (!(shape instanceof RAPIER.ConvexPolyhedron) || shape.indices) return shape;
  const indices = collider.indices();
  return indices ? new RAPIER.ConvexPolyhedron(collider.vertices(), indices) : shape;
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

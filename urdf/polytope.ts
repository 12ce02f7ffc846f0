/**
 * Convex polytopes bounded by planes along fixed directions (a "k-DOP"): how the generated URDFs carry the Poppy
 * collision meshes as measurements (urdf/fit-collisions.ts) instead of copies.
 */

type V3 = readonly [number, number, number];

/** The 26 directions of a cube's faces, edges and corners, as unit vectors. */
export const DOP_DIRECTIONS: readonly V3[] = (() => {
  const out: V3[] = [];
  for (const x of [-1, 0, 1])
    for (const y of [-1, 0, 1])
      for (const z of [-1, 0, 1]) {
        if (x === 0 && y === 0 && z === 0) continue;
        const n = Math.hypot(x, y, z);
        out.push([x / n, y / n, z / n]);
      }
  return out;
})();

const dot = (a: V3, b: V3): number => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const EPS = 1e-9;

/** Where three planes n.x = d meet (undefined when two are parallel). */
function meet(n: readonly V3[], d: readonly number[]): V3 | undefined {
  const [a, b, c] = n as [V3, V3, V3];
  const det = dot(a, [b[1] * c[2] - b[2] * c[1], b[2] * c[0] - b[0] * c[2], b[0] * c[1] - b[1] * c[0]]);
  if (Math.abs(det) < EPS) return undefined;
  const cross = (u: V3, v: V3): V3 => [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]];
  const bc = cross(b, c);
  const ca = cross(c, a);
  const ab = cross(a, b);
  return [0, 1, 2].map((k) => (d[0]! * bc[k]! + d[1]! * ca[k]! + d[2]! * ab[k]!) / det) as unknown as V3;
}

/**
 * The triangles (9 numbers each, outward) of the polytope { x : n_i . x <= reach_i } for the directions given, in the
 * units of reach. Each face is the fan of the corners on its plane, in order around the face.
 */
export function polytopeTriangles(reach: readonly number[], directions: readonly V3[] = DOP_DIRECTIONS): number[] {
  if (reach.length !== directions.length) throw new Error(`polytope: ${reach.length} reaches for ${directions.length} directions`);
  const tolerance = 1e-7 * Math.max(...reach.map(Math.abs), 1);
  const inside = (p: V3) => directions.every((n, i) => dot(n, p) <= reach[i]! + tolerance);
  const corners: V3[] = [];
  for (let i = 0; i < directions.length; i++)
    for (let j = i + 1; j < directions.length; j++)
      for (let k = j + 1; k < directions.length; k++) {
        const p = meet([directions[i]!, directions[j]!, directions[k]!], [reach[i]!, reach[j]!, reach[k]!]);
        if (!p || !inside(p)) continue;
        if (!corners.some((q) => Math.hypot(q[0] - p[0], q[1] - p[1], q[2] - p[2]) < tolerance)) corners.push(p);
      }
  const triangles: number[] = [];
  directions.forEach((n, i) => {
    const face = corners.filter((p) => Math.abs(dot(n, p) - reach[i]!) < tolerance);
    if (face.length < 3) return;
    const centre = [0, 1, 2].map((k) => face.reduce((s, p) => s + p[k]!, 0) / face.length) as unknown as V3;
    // In-plane axes u, v with u x v = n, so that counter-clockwise about n is outward.
    const helper: V3 = Math.abs(n[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
    const u0: V3 = [n[1] * helper[2] - n[2] * helper[1], n[2] * helper[0] - n[0] * helper[2], n[0] * helper[1] - n[1] * helper[0]];
    const un = Math.hypot(...u0);
    const u: V3 = [u0[0] / un, u0[1] / un, u0[2] / un];
    const v: V3 = [n[1] * u[2] - n[2] * u[1], n[2] * u[0] - n[0] * u[2], n[0] * u[1] - n[1] * u[0]];
    const angle = (p: V3) => {
      const r: V3 = [p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]];
      return Math.atan2(dot(r, v), dot(r, u));
    };
    const ring = [...face].sort((a, b) => angle(a) - angle(b));
    for (let k = 1; k + 1 < ring.length; k++) triangles.push(...ring[0]!, ...ring[k]!, ...ring[k + 1]!);
  });
  return triangles;
}

/**
 * A link's mesh measured in pieces where one convex shape would fill the air between its parts (the Humanoid's U
 * brackets around their servos, its forearm slanted in its frame): urdf/fit-collisions.ts cuts each link's mesh by
 * planes of its frame into boxes, each piece the 26-sided polytope of the mesh inside its box, until every two links
 * three joints apart or more clear each other where the parts themselves do (docs/decisions/0034-humanoid-measured-shapes.md).
 */
import RAPIER from '@dimforge/rapier3d-simd-compat';
import type { UrdfRobot } from '../src/urdf/types.ts';
import { linkPoses, type LinkPose } from '../src/sim/link-poses.ts';
import { placeShape } from '../src/sim/collision-shapes.ts';
import { qrotate, vadd, type V3 } from '../src/sim/quat.ts';
import { DOP_DIRECTIONS, polytopeTriangles } from './polytope.ts';

type Box = { lo: V3; hi: V3 };
/** One piece: its box in the link frame, the mesh's points inside it, their reaches (m) and its polytope's volume. */
type Piece = { box: Box; points: V3[]; reach: number[]; volume: number; radius: number; shape: RAPIER.Shape };
type Poses = Map<string, LinkPose>;
/** A link's part: its mesh and the mesh's corners. */
type Part = { mesh: RAPIER.TriMesh; corners: V3[]; radius: number };

/** How much closer than the parts (m) two links' pieces may come where the parts are closer than `clear`. */
const PARTS_MARGIN = 0.001;
/** Cuts tried per axis, as fractions of the piece's extent. */
const FRACTIONS = Array.from({ length: 11 }, (_, i) => (i + 1) / 12);
const IDENTITY = { x: 0, y: 0, z: 0, w: 1 };
const FAR = 0.05;

/** A triangle clipped to a box (Sutherland-Hodgman against its six planes): the corners of what is inside. */
function clip(polygon: V3[], box: Box): V3[] {
  let out = polygon;
  for (const k of [0, 1, 2])
    for (const side of [-1, 1]) {
      const limit = side < 0 ? box.lo[k]! : box.hi[k]!;
      const inside = (p: V3) => (side < 0 ? p[k]! >= limit : p[k]! <= limit);
      const next: V3[] = [];
      out.forEach((a, i) => {
        const b = out[(i + 1) % out.length]!;
        if (inside(a)) next.push(a);
        if (inside(a) !== inside(b)) {
          const t = (limit - a[k]!) / (b[k]! - a[k]!);
          next.push([a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2])]);
        }
      });
      out = next;
      if (out.length === 0) return out;
    }
  return out;
}

/** How far points reach along each polytope direction (m). */
export function reachesOf(points: readonly V3[]): number[] {
  return DOP_DIRECTIONS.map((n) => points.reduce((r, p) => Math.max(r, n[0] * p[0] + n[1] * p[1] + n[2] * p[2]), -Infinity));
}

/** Volume (m^3) of a closed triangle surface, 9 numbers a triangle: positive when it faces out (divergence theorem). */
export function volumeOf(t: ArrayLike<number>): number {
  let v = 0;
  for (let k = 0; k < t.length; k += 9)
    v +=
      (t[k]! * (t[k + 4]! * t[k + 8]! - t[k + 5]! * t[k + 7]!) -
        t[k + 1]! * (t[k + 3]! * t[k + 8]! - t[k + 5]! * t[k + 6]!) +
        t[k + 2]! * (t[k + 3]! * t[k + 7]! - t[k + 4]! * t[k + 6]!)) /
      6;
  return v;
}

function pieceOf(triangles: Float32Array, box: Box): Piece | undefined {
  const points: V3[] = [];
  for (let i = 0; i < triangles.length; i += 9)
    points.push(...clip([0, 3, 6].map((o) => [triangles[i + o]!, triangles[i + o + 1]!, triangles[i + o + 2]!] as V3), box));
  if (points.length < 4) return undefined;
  const reach = reachesOf(points);
  const t = polytopeTriangles(reach);
  const hull = RAPIER.ColliderDesc.convexHull(Float32Array.from(t));
  if (!hull) return undefined;
  const radius = points.reduce((r, p) => Math.max(r, Math.hypot(...p)), 0);
  return { box, points, reach, volume: volumeOf(t), radius, shape: hull.shape };
}

const withAxis = (v: V3, k: number, x: number): V3 => [k === 0 ? x : v[0], k === 1 ? x : v[1], k === 2 ? x : v[2]];

/** The two pieces of each cut of a piece by a plane of its link's frame. */
function cutsOf(triangles: Float32Array, p: Piece): Piece[][] {
  const out: Piece[][] = [];
  for (const k of [0, 1, 2]) {
    const lo = Math.min(...p.points.map((v) => v[k]!));
    const hi = Math.max(...p.points.map((v) => v[k]!));
    for (const f of FRACTIONS) {
      const at = lo + f * (hi - lo);
      const below = pieceOf(triangles, { lo: p.box.lo, hi: withAxis(p.box.hi, k, at) });
      const above = pieceOf(triangles, { lo: withAxis(p.box.lo, k, at), hi: p.box.hi });
      if (below && above) out.push([below, above]);
    }
  }
  return out;
}

const trimeshOf = (t: Float32Array) => new RAPIER.TriMesh(t, Uint32Array.from({ length: t.length / 3 }, (_, i) => i));

/** Signed distance (m) between two placed convex shapes, FAR beyond it. */
function gap(a: RAPIER.Shape, pa: LinkPose, b: RAPIER.Shape, pb: LinkPose): number {
  const x = placeShape(pa, { shape: a, p: [0, 0, 0], q: IDENTITY });
  const y = placeShape(pb, { shape: b, p: [0, 0, 0], q: IDENTITY });
  return x.shape.contactShape(x.p, x.q, y.shape, y.p, y.q, FAR)?.distance ?? FAR;
}

/** A mesh's distinct corners (m, link frame). */
function cornersOf(t: Float32Array): V3[] {
  const seen = new Map<string, V3>();
  for (let i = 0; i < t.length; i += 3) seen.set(`${t[i]},${t[i + 1]},${t[i + 2]}`, [t[i]!, t[i + 1]!, t[i + 2]!]);
  return [...seen.values()];
}

/**
 * Distance (m) between two links' parts up to `within`: 0 where the meshes cross, else the nearest corner of either to
 * the other's surface (`within` beyond it). Rapier's contact query between two triangle meshes gives no reliable
 * distance; only corners within `within` of the other mesh's bounding box are projected on it.
 */
function partsGap(a: Part, pa: LinkPose, b: Part, pb: LinkPose, within: number): number {
  if (Math.hypot(pa.p[0] - pb.p[0], pa.p[1] - pb.p[1], pa.p[2] - pb.p[2]) > a.radius + b.radius + within) return within;
  const x = placeShape(pa, { shape: a.mesh, p: [0, 0, 0], q: IDENTITY });
  const y = placeShape(pb, { shape: b.mesh, p: [0, 0, 0], q: IDENTITY });
  if (x.shape.intersectsShape(x.p, x.q, y.shape, y.p, y.q)) return 0;
  const world = (part: Part, pose: LinkPose) => part.corners.map((c) => vadd(pose.p, qrotate(pose.q, c)));
  const [ca, cb] = [world(a, pa), world(b, pb)];
  let d = within;
  for (const [from, to, onto] of [[ca, cb, y], [cb, ca, x]] as const) {
    const lo = [0, 1, 2].map((k) => Math.min(...to.map((c) => c[k]!)) - within);
    const hi = [0, 1, 2].map((k) => Math.max(...to.map((c) => c[k]!)) + within);
    for (const w of from) {
      if (w.some((v, k) => v < lo[k]! || v > hi[k]!)) continue;
      const on = onto.shape.projectPoint(onto.p, onto.q, { x: w[0], y: w[1], z: w[2] }, false).point;
      d = Math.min(d, Math.hypot(on.x - w[0], on.y - w[1], on.z - w[2]));
    }
  }
  return d;
}

/**
 * Each link's pieces' reaches (mm, to 0.1), measured from its mesh (triangles in its link frame, m). Every two links
 * three joints apart or more (nearer ones never collide: their meeting is a joint stop, robot config world.jointStops)
 * keep `clear` apart at the given poses, or less where their parts are closer: the parts' distance less PARTS_MARGIN
 * (nothing where the parts are closer than that). Greedily, the pair of pieces furthest from what it keeps has one of its pieces cut where
 * that pair clears best over its poses (then where the polytopes shrink most), up to `cap` pieces a link.
 */
export function fitPieces(
  urdf: UrdfRobot,
  meshes: ReadonlyMap<string, Float32Array>,
  poseAngles: readonly ReadonlyMap<string, number>[],
  clear: number,
  cap: number,
  log: (line: string) => void = () => {},
): Record<string, number[][]> {
  const names = [...meshes.keys()];
  const parentJoint = new Map(urdf.joints.map((j) => [j.child, j]));
  const ancestry = (link: string): string[] => {
    const j = parentJoint.get(link);
    return j ? [link, ...ancestry(j.parent)] : [link];
  };
  const jointsBetween = (a: string, b: string): number => {
    const up = ancestry(a);
    const down = ancestry(b);
    const common = up.find((l) => down.includes(l))!;
    return up.indexOf(common) + down.indexOf(common);
  };
  const poses = poseAngles.map((angles) => linkPoses(urdf, angles));
  const parts = new Map(
    names.map((n) => {
      const corners = cornersOf(meshes.get(n)!);
      return [n, { mesh: trimeshOf(meshes.get(n)!), corners, radius: Math.max(...corners.map((c) => Math.hypot(...c))) }];
    }),
  );
  /** Each pair's poses and how far apart its pieces keep at each (m). */
  const checks: { a: string; b: string; poses: { pose: Poses; keep: number }[] }[] = [];
  for (const a of names)
    for (const b of names) {
      if (a >= b || jointsBetween(a, b) < 3) continue;
      // Where the parts themselves (nearly) touch, the pieces may too.
      const kept = poses
        .map((pose) => ({ pose, keep: Math.min(clear, partsGap(parts.get(a)!, pose.get(a)!, parts.get(b)!, pose.get(b)!, clear + PARTS_MARGIN) - PARTS_MARGIN) }))
        .filter(({ keep }) => keep > 0);
      if (kept.length > 0) checks.push({ a, b, poses: kept });
    }
  const whole: Box = { lo: [-10, -10, -10], hi: [10, 10, 10] };
  const pieces = new Map(names.map((n) => [n, [pieceOf(meshes.get(n)!, whole)!]]));
  const distance = (a: string, pa: Piece, b: string, pb: Piece, pose: Poses): number => {
    const A = pose.get(a)!;
    const B = pose.get(b)!;
    if (Math.hypot(A.p[0] - B.p[0], A.p[1] - B.p[1], A.p[2] - B.p[2]) > pa.radius + pb.radius + FAR) return FAR;
    return gap(pa.shape, A, pb.shape, B);
  };
  for (;;) {
    // The pair of pieces furthest from what it keeps.
    let worst = { short: 0, check: checks[0]!, ia: 0, ib: 0 };
    for (const check of checks)
      for (const { pose, keep } of check.poses)
        pieces.get(check.a)!.forEach((pa, ia) =>
          pieces.get(check.b)!.forEach((pb, ib) => {
            const short = keep - distance(check.a, pa, check.b, pb, pose);
            if (short > worst.short) worst = { short, check, ia, ib };
          }),
        );
    if (worst.short <= 0) break;
    const { a, b } = worst.check;
    log(`${a} ${worst.ia} / ${b} ${worst.ib}: ${(worst.short * 1000).toFixed(1)} mm short`);
    let best = { score: -Infinity, link: '', index: 0, kids: [] as Piece[] };
    for (const [link, index, other, j] of [[a, worst.ia, b, worst.ib], [b, worst.ib, a, worst.ia]] as const) {
      if (pieces.get(link)!.length >= cap) continue;
      const p = pieces.get(link)![index]!;
      const q = pieces.get(other)![j]!;
      for (const kids of cutsOf(meshes.get(link)!, p)) {
        let d = Infinity;
        for (const { pose } of worst.check.poses) for (const c of kids) d = Math.min(d, distance(link, c, other, q, pose));
        const score = Math.min(d, clear) * 1e6 + (p.volume - kids[0]!.volume - kids[1]!.volume) * 1e6;
        if (score > best.score) best = { score, link, index, kids };
      }
    }
    if (!best.link) throw new Error(`${a} / ${b}: still ${(worst.short * 1000).toFixed(1)} mm short with ${cap} pieces each`);
    pieces.get(best.link)!.splice(best.index, 1, ...best.kids);
  }
  return Object.fromEntries(names.map((n) => [n, pieces.get(n)!.map((p) => p.reach.map((r) => Math.round(r * 1e4) / 10))]));
}

/** The contacts of a Rapier world's last step, read as pairs of touching links (or a link and the table). */
import type RAPIER from '@dimforge/rapier3d-simd-compat';
import type { Contact } from './controls.ts';

/** The key of a touching pair, the same whichever link is named first. */
export const pairKey = (a: string, b: string): string => (a < b ? `${a}|${b}` : `${b}|${a}`);

/**
 * The first contact of `contacts` that presses (impulse > 0) and whose pair is not in `before` (the pairs already
 * touching at the start of what is predicted: the robot on the table, a part resting on another).
 */
export function newPressingContact(
  contacts: readonly Contact[],
  before: ReadonlySet<string>,
): Contact | undefined {
  return contacts.find((c) => c.impulse > 0 && !before.has(pairKey(c.a, c.b)));
}

/** A resting contact can settle a few hundredths of a millimetre apart: still touching. */
const TOUCHING_GAP = 1e-4;

/** Each pair of named colliders Rapier has a contact pair for, once, with each one's name. */
function forEachNamedPair(
  world: RAPIER.World,
  colliderNames: ReadonlyMap<number, string>,
  visit: (c1: RAPIER.Collider, a: string, c2: RAPIER.Collider, b: string) => void,
): void {
  world.forEachCollider((c1) => {
    const a = colliderNames.get(c1.handle);
    if (a === undefined) return;
    world.contactPairsWith(c1, (c2) => {
      if (c2.handle <= c1.handle) return;
      const b = colliderNames.get(c2.handle);
      if (b !== undefined) visit(c1, a, c2, b);
    });
  });
}

/** Touching pairs of named colliders (collider handle -> link name or table kind), deepest first. */
export function readContacts(world: RAPIER.World, colliderNames: ReadonlyMap<number, string>): Contact[] {
  const out: Contact[] = [];
  forEachNamedPair(world, colliderNames, (c1, a, c2, b) => {
    // Only pairs Rapier makes contacts for (not a joint's two links, not a designed overlap).
    let impulse = 0;
    let tracked = false;
    world.contactPair(c1, c2, (manifold) => {
      if (manifold.numContacts() > 0) tracked = true;
      for (let k = 0; k < manifold.numContacts(); k++) impulse += manifold.contactImpulse(k);
    });
    if (!tracked) return;
    // Depth and point from the shapes where they are now, not the manifold's points, which Rapier carries over
    // while each step's slide is small; the collider's own query is the fast one (docs/decisions/0004-contacts-from-shapes.md).
    const hit = c1.contactCollider(c2, TOUCHING_GAP);
    if (!hit || hit.distance > TOUCHING_GAP) return;
    const depth = Math.max(0, -hit.distance);
    const point: [number, number, number] = [
      (hit.point1.x + hit.point2.x) / 2,
      (hit.point1.y + hit.point2.y) / 2,
      (hit.point1.z + hit.point2.z) / 2,
    ];
    out.push({ a, b, depth, impulse, point });
  });
  out.sort((x, y) => y.depth - x.depth);
  return out;
}

/** A pair pushing with its shapes this far apart, or its manifold this much deeper than they are, is left behind (m). */
const STALE_GAP = 1e-3;
/** How far apart shapes are measured: beyond it, a pushing pair is left behind however deep its manifold. */
const MEASURED_GAP = 0.05;
/** Pairs moving faster than this (m/s, both bodies) are left as Rapier makes them; the lever (m) of a turn's speed. */
const SLOW_SPEED = 0.05;
const LINK_LEVER = 0.1;

/** How fast a collider's body moves (m/s): its centre's speed and its turn at a link's length. */
function speedOf(collider: RAPIER.Collider): number {
  const body = collider.parent();
  if (!body?.isDynamic()) return 0;
  const v = body.linvel();
  const w = body.angvel();
  return Math.hypot(v.x, v.y, v.z) + LINK_LEVER * Math.hypot(w.x, w.y, w.z);
}

/**
 * The link colliders of pairs that pushed in the last step (impulse > 0) while moving slowly, with their shapes more
 * than STALE_GAP apart now or their manifold's deepest point deeper than the shapes by more than that. Rapier's narrow
 * phase carries a pair's manifold over while the pair turns less than a degree, and a link sliding along another can
 * leave its points millimetres from the shapes, still pushing: a Torso forearm held 5 mm off its base, points 3-14 mm
 * apart pushing (docs/decisions/0087-contacts-left-behind.md). `isLink` names the robot's links: of a pair, the moving
 * link's collider is given (never the table's or the fixed base's, which carry every other contact).
 */
export function staleContactColliders(
  world: RAPIER.World,
  colliderNames: ReadonlyMap<number, string>,
  isLink: (name: string) => boolean,
): RAPIER.Collider[] {
  const stale: RAPIER.Collider[] = [];
  forEachNamedPair(world, colliderNames, (c1, a, c2, b) => {
    let impulse = 0;
    let deepest = Infinity;
    world.contactPair(c1, c2, (manifold) => {
      for (let k = 0; k < manifold.numContacts(); k++) {
        impulse += manifold.contactImpulse(k);
        deepest = Math.min(deepest, manifold.contactDist(k));
      }
    });
    if (impulse <= 0) return;
    // Only a slow pair: a moving one pushes across the gap it may close (Rapier's speculative contacts), and Rapier
    // looks at its points again within a degree of turn anyway.
    if (speedOf(c1) + speedOf(c2) > SLOW_SPEED) return;
    const hit = c1.contactCollider(c2, MEASURED_GAP);
    if (hit && hit.distance <= STALE_GAP && hit.distance - deepest <= STALE_GAP) return;
    const moving = (c: RAPIER.Collider, name: string) => isLink(name) && c.parent()?.isDynamic() === true;
    const link = moving(c2, b) ? c2 : moving(c1, a) ? c1 : undefined;
    if (link && !stale.includes(link)) stale.push(link);
  });
  return stale;
}

/** Whether Rapier's collision groups let two colliders meet: each one's membership in the other's filter. */
function groupsMeet(c1: RAPIER.Collider, c2: RAPIER.Collider): boolean {
  const g1 = c1.collisionGroups();
  const g2 = c2.collisionGroups();
  return ((g1 >>> 16) & g2 & 0xffff) !== 0 && ((g2 >>> 16) & g1 & 0xffff) !== 0;
}

/**
 * The smallest gap (m) between a collider of the links `inside` names and one outside them (another link, or the
 * table) that may meet, if some pair is within `within` m; undefined otherwise. A joint's two links (`joined`, by
 * pairKey) and pairs the collision groups keep apart never touch, however close their shapes.
 */
export function nearestGap(
  world: RAPIER.World,
  colliderNames: ReadonlyMap<number, string>,
  inside: (name: string) => boolean,
  joined: ReadonlySet<string>,
  within: number,
): number | undefined {
  const ins: [RAPIER.Collider, string][] = [];
  const outs: [RAPIER.Collider, string][] = [];
  world.forEachCollider((c) => {
    const name = colliderNames.get(c.handle);
    if (name !== undefined) (inside(name) ? ins : outs).push([c, name]);
  });
  let nearest: number | undefined;
  for (const [c1, a] of ins)
    for (const [c2, b] of outs) {
      if (joined.has(pairKey(a, b)) || !groupsMeet(c1, c2)) continue;
      const hit = c1.contactCollider(c2, within);
      if (hit && hit.distance <= within && (nearest === undefined || hit.distance < nearest))
        nearest = hit.distance;
    }
  return nearest;
}

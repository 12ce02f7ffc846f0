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

/** Touching pairs of named colliders (collider handle -> link name or table kind), deepest first. */
export function readContacts(world: RAPIER.World, colliderNames: ReadonlyMap<number, string>): Contact[] {
  const out: Contact[] = [];
  world.forEachCollider((c1) => {
    const a = colliderNames.get(c1.handle);
    if (a === undefined) return;
    world.contactPairsWith(c1, (c2) => {
      if (c2.handle <= c1.handle) return;
      const b = colliderNames.get(c2.handle);
      if (b === undefined) return;
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
  });
  out.sort((x, y) => y.depth - x.depth);
  return out;
}

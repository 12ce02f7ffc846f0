/**
 * Self-collision and table collision from the physics contacts (SimulationControls.contacts() after each step).
 * Links joined by a joint touch by construction, and so do links welded by fixed joints and the base on the table:
 * those pairs are not collisions. Pure: contacts in, check results out (tests inject contacts).
 */
import { pairKey } from '../../sim/contacts.ts';
import type { Contact } from '../../sim/controls.ts';
import type { UrdfRobot } from '../../urdf/types.ts';
import { type CheckResult, type Finding, checkResult, fmt } from '../result.ts';

/** A contact and the time it was seen, seconds into the run. */
export interface TimedContact extends Contact {
  readonly time: number;
}

export interface ContactRules {
  /** Every URDF link of the robot. */
  readonly links: ReadonlySet<string>;
  /** Link pairs that may touch ("a|b" sorted). */
  readonly allowedPairs: ReadonlySet<string>;
  /** Links that may touch the table or floor (what the robot stands on). */
  readonly resting: ReadonlySet<string>;
  /**
   * Penetration below this (metres) is a touch the solver keeps, not a hit, unless the contact carries an impulse:
   * links that press on each other (or on the table) hit, however shallow the solver keeps them.
   */
  readonly toleranceM: number;
}

/**
 * A contact pushing with more than this normal impulse over a step (N.s) is a hit whatever its depth: Rapier keeps a
 * resting contact within a fraction of a millimetre, so depth alone would miss an arm pressed onto the table. (A 1 g
 * link resting on a surface pushes about 2e-5 N.s per 2 ms step.)
 */
export const PRESSING_IMPULSE = 1e-5;

/** Deeper than the tolerance, or pressing: a contact that counts when its pair may not touch. */
export function isHit(c: Pick<Contact, 'depth' | 'impulse'>, rules: ContactRules): boolean {
  return c.depth > rules.toleranceM || c.impulse > PRESSING_IMPULSE;
}

export const WORLD_SURFACES: ReadonlySet<string> = new Set(['table', 'floor']);

/**
 * From the URDF: links welded by fixed joints form one rigid group; groups joined by one movable joint are
 * neighbours; the root's group rests on the table. `extraResting` adds links (e.g. feet on the floor).
 */
export function contactRules(
  urdf: UrdfRobot,
  opts: {
    toleranceM?: number;
    extraResting?: readonly string[];
    allowedPairs?: readonly [string, string][];
  } = {},
): ContactRules {
  const group = new Map<string, string>([...urdf.links.keys()].map((l) => [l, l]));
  const find = (l: string): string => {
    let g = l;
    while (group.get(g) !== g) g = group.get(g)!;
    return g;
  };
  for (const j of urdf.joints) if (j.type === 'fixed') group.set(find(j.child), find(j.parent));
  const members = new Map<string, string[]>();
  for (const l of urdf.links.keys()) {
    const g = find(l);
    members.set(g, [...(members.get(g) ?? []), l]);
  }
  const allowed = new Set<string>();
  const allowGroups = (g1: string, g2: string) => {
    for (const a of members.get(g1)!)
      for (const b of members.get(g2)!) if (a !== b) allowed.add(pairKey(a, b));
  };
  for (const g of members.keys()) allowGroups(g, g);
  for (const j of urdf.joints) if (j.type !== 'fixed') allowGroups(find(j.parent), find(j.child));
  for (const [a, b] of opts.allowedPairs ?? []) allowed.add(pairKey(a, b));
  return {
    links: new Set(urdf.links.keys()),
    allowedPairs: allowed,
    resting: new Set([...members.get(find(urdf.root))!, ...(opts.extraResting ?? [])]),
    toleranceM: opts.toleranceM ?? 0.001,
  };
}

interface PairRecord {
  a: string;
  b: string;
  first: number;
  last: number;
  steps: number;
  depth: number;
  depthTime: number;
  impulse: number;
  point: readonly [number, number, number];
}

function collect(contacts: Iterable<TimedContact>, keep: (c: TimedContact) => boolean): PairRecord[] {
  const pairs = new Map<string, PairRecord>();
  for (const c of contacts) {
    if (!keep(c)) continue;
    const key = pairKey(c.a, c.b);
    const r = pairs.get(key);
    if (!r) {
      const [a, b] =
        WORLD_SURFACES.has(c.a) || (!WORLD_SURFACES.has(c.b) && c.b < c.a) ? [c.b, c.a] : [c.a, c.b];
      pairs.set(key, {
        a,
        b,
        first: c.time,
        last: c.time,
        steps: 1,
        depth: c.depth,
        depthTime: c.time,
        impulse: c.impulse,
        point: c.point,
      });
      continue;
    }
    r.last = Math.max(r.last, c.time);
    r.first = Math.min(r.first, c.time);
    r.steps++;
    r.impulse = Math.max(r.impulse, c.impulse);
    if (c.depth > r.depth) {
      r.depth = c.depth;
      r.depthTime = c.time;
      r.point = c.point;
    }
  }
  return [...pairs.values()].sort((x, y) => x.first - y.first || (x.a + x.b < y.a + y.b ? -1 : 1));
}

function findings(pairs: PairRecord[], rules: ContactRules, verb: string): Finding[] {
  return pairs.map((p) => ({
    message:
      `at t=${fmt(p.first)} s ${p.a} ${verb} ${p.b}: ${fmt(p.depth * 1000)} mm deep at t=${fmt(p.depthTime)} s ` +
      (p.depth > rules.toleranceM
        ? `(tolerance ${fmt(rules.toleranceM * 1000)} mm, over by ${fmt((p.depth - rules.toleranceM) * 1000)} mm), `
        : `and pressing (up to ${fmt(p.impulse * 1000, 3)} mN.s a step), `) +
      `in contact until t=${fmt(p.last)} s, near [${p.point.map((v) => fmt(v, 3)).join(', ')}] m`,
    time: p.first,
    where: `${p.a} / ${p.b}`,
    value: p.depth * 1000,
    limit: rules.toleranceM * 1000,
    margin: (p.depth - rules.toleranceM) * 1000,
    unit: 'mm',
  }));
}

/** [self-collision, table collision] over the contacts seen during a run. */
export function collisionChecks(
  contacts: readonly TimedContact[],
  rules: ContactRules,
  steps: number,
  seen = contacts.length,
): CheckResult[] {
  const deep = (c: TimedContact) => isHit(c, rules);
  const self = collect(
    contacts,
    (c) =>
      deep(c) && rules.links.has(c.a) && rules.links.has(c.b) && !rules.allowedPairs.has(pairKey(c.a, c.b)),
  );
  const onTable = (c: TimedContact) => {
    const link = WORLD_SURFACES.has(c.a) ? c.b : WORLD_SURFACES.has(c.b) ? c.a : undefined;
    return link !== undefined && rules.links.has(link) && !rules.resting.has(link);
  };
  const table = collect(contacts, (c) => deep(c) && onTable(c));
  const over = `${seen} contact(s) seen over ${steps} physics step(s)`;
  return [
    checkResult(
      'self-collision',
      self.length ? `${self.length} link pair(s) collide; ${over}` : `no link hits another; ${over}`,
      findings(self, rules, 'hits'),
      { pairs: self.length, max_depth_mm: Math.max(0, ...self.map((p) => p.depth * 1000)) },
    ),
    checkResult(
      'table collision',
      table.length
        ? `${table.length} link(s) hit the table or floor; ${over}`
        : `no link but the base touches the table or floor; ${over}`,
      findings(table, rules, 'hits'),
      { links: table.length, max_depth_mm: Math.max(0, ...table.map((p) => p.depth * 1000)) },
    ),
  ];
}

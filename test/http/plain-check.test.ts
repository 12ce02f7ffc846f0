/**
 * The plain path of body checks (src/http/plain-check.ts) gives exactly what zod gives: thousands of seeded random
 * bodies through the real routes' schemas and through objects of the shared pieces, and the schemas it must leave to
 * zod (refinements, kept unknown keys, fields without a plain check).
 */
import { expect } from 'chai';
import { z } from 'zod';
import { MAX_DURATION } from '../../src/core/values.ts';
import { motorRoutes } from '../../src/http/routes/motors.ts';
import { NOT_PLAIN, plainObjectCheck, withPlainCheck, withPlainPath } from '../../src/http/plain-check.ts';
import { duration, lenientNumber, wait } from '../../src/http/schema.ts';
import { simServer } from '../helpers.ts';

/** A seeded generator (mulberry32): the same bodies every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** JSON values a client may send for a field: plain numbers, edges, lenient strings, and wrong kinds. */
const VALUES: readonly unknown[] = [
  0,
  -0,
  1e-9,
  0.5,
  1,
  -20,
  20,
  359.9,
  1e6,
  MAX_DURATION,
  MAX_DURATION + 1e-9,
  1e308,
  -1e308,
  '1',
  '1.5',
  '-3',
  ' 2',
  'abc',
  '0x10',
  '',
  'true',
  'True',
  '1',
  true,
  false,
  null,
  [],
  [1],
  {},
  { position: 1 },
];

function randomBody(next: () => number, keys: readonly string[]): unknown {
  const kind = next();
  if (kind < 0.03) return VALUES[Math.floor(next() * VALUES.length)];
  if (kind < 0.05) return [Math.floor(next() * 10)];
  const body: Record<string, unknown> = {};
  for (const key of [...keys, 'extra', 'wait_for']) {
    if (next() < 0.15) continue; // absent
    body[key] = VALUES[Math.floor(next() * VALUES.length)];
  }
  return body;
}

/** Checks `count` random bodies: a plain answer is zod's success and data; returns how many took the plain path. */
function compare(schema: z.ZodType, keys: readonly string[], seed: number, count: number): number {
  const plain = plainObjectCheck(schema);
  expect(plain, 'a plain path for this schema').to.be.a('function');
  const next = random(seed);
  let plainCount = 0;
  for (let i = 0; i < count; i++) {
    const body = randomBody(next, keys);
    const checked = plain!(body);
    if (checked === NOT_PLAIN) continue;
    plainCount++;
    const zod = schema.safeParse(body);
    expect(zod.success, `zod refuses ${JSON.stringify(body)} which the plain path took`).to.equal(true);
    expect(checked, JSON.stringify(body)).to.deep.equal(zod.data);
    expect(Object.keys(checked as object)).to.deep.equal(Object.keys(zod.data as object));
  }
  return plainCount;
}

describe('plain body checks (src/http/plain-check.ts)', () => {
  it('the goto bodies of the real routes: the plain path answers as zod, for thousands of bodies', async () => {
    const server = await simServer('ergo-jr');
    try {
      const routes = motorRoutes(server.robot);
      const goto = routes.find((r) => r.path === '/motors/:motor/goto.json')!;
      const taken = compare(goto.body as z.ZodType, ['position', 'duration', 'wait'], 1, 20_000);
      // Most random bodies have a field in another form: enough of them must still take the plain path.
      expect(taken).to.be.greaterThan(200);
      // The multi-motor goto refines the whole (motors and positions of one length): zod checks it.
      const multi = routes.find((r) => r.path === '/motors/goto.json')!;
      expect(plainObjectCheck(multi.body as z.ZodType)).to.equal(undefined);
    } finally {
      await server.close();
    }
  });

  it('objects of the shared pieces answer as zod', () => {
    const schemas: [z.ZodType, string[]][] = [
      [z.object({ duration, wait }), ['duration', 'wait']],
      [z.object({ a: lenientNumber, b: lenientNumber.meta({ description: 'b' }) }), ['a', 'b']],
      [z.object({ wait }), ['wait']],
    ];
    schemas.forEach(([schema, keys], i) =>
      expect(compare(schema, keys, 10 + i, 5_000)).to.be.greaterThan(50),
    );
  });

  it('the plain path takes JSON numbers and leaves every other form to zod', () => {
    const plain = plainObjectCheck(z.object({ position: lenientNumber, duration, wait }))!;
    expect(plain({ position: -20, duration: 0.5 })).to.deep.equal({
      position: -20,
      duration: 0.5,
      wait: false,
    });
    expect(plain({ position: 1, duration: 1, wait: 'True', other: 3 })).to.deep.equal({
      position: 1,
      duration: 1,
      wait: true,
    });
    for (const body of [
      { position: '12.5', duration: 1 },
      { position: 1, duration: 0 },
      { position: 1, duration: MAX_DURATION * 2 },
      { duration: 1 },
      [1, 2],
      null,
      'text',
    ])
      expect(plain(body), JSON.stringify(body)).to.equal(NOT_PLAIN);
  });

  it('leaves to zod what it cannot answer as zod does', () => {
    const refined = lenientNumber.refine((v) => v > 0);
    expect(plainObjectCheck(z.object({ a: refined })), 'a refined clone').to.equal(undefined);
    expect(plainObjectCheck(z.object({ a: lenientNumber.optional() })), 'a wrapper').to.equal(undefined);
    expect(plainObjectCheck(z.object({ a: lenientNumber.describe('a') })), 'a described clone').to.be.a(
      'function',
    );
    expect(plainObjectCheck(z.object({ a: z.number() })), 'a field without a plain check').to.equal(
      undefined,
    );
    expect(plainObjectCheck(z.object({ a: lenientNumber }).refine(() => true)), 'a refined object').to.equal(
      undefined,
    );
    expect(plainObjectCheck(z.object({ a: lenientNumber }).passthrough()), 'kept unknown keys').to.equal(
      undefined,
    );
    expect(plainObjectCheck(z.object({ a: lenientNumber }).strict()), 'refused unknown keys').to.equal(
      undefined,
    );
    expect(plainObjectCheck(z.array(lenientNumber)), 'not an object').to.equal(undefined);
    const jsonSchema = { type: 'object', properties: { a: { type: 'number' } } } as unknown as z.ZodType;
    expect(plainObjectCheck(jsonSchema), 'not a zod schema').to.equal(undefined);
    // zod leaves an absent optional key out of its answer: the plain path does not guess it.
    const anything = withPlainCheck(z.unknown().optional(), (v) => v);
    const optional = plainObjectCheck(z.object({ a: anything }))!;
    expect(optional({}), 'an absent optional key').to.equal(NOT_PLAIN);
    expect(optional({ a: 1 })).to.deep.equal({ a: 1 });
  });

  it("withPlainPath: a plain body does not reach zod's validator, any other does", () => {
    const schema = z.object({ position: lenientNumber, duration });
    const seen: unknown[] = [];
    const validate = withPlainPath(schema, (value) => {
      seen.push(value);
      return { value: 'from zod' };
    });
    expect(validate({ position: 1, duration: 1 })).to.deep.equal({ value: { position: 1, duration: 1 } });
    expect(seen).to.deep.equal([]);
    expect(validate({ position: '1', duration: 1 })).to.deep.equal({ value: 'from zod' });
    expect(seen).to.deep.equal([{ position: '1', duration: 1 }]);
  });
});

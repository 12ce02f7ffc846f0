/**
 * Seeded fuzz of every documented route (issue 8): hostile path names, methods, content types and bodies (bad
 * JSON, 5,000-deep nesting, huge and tiny numbers, "0x10", prototype keys, form bodies made of `__proto__=<json>`,
 * bodies over the limit), in both profiles. Asserted: no status 500, every error is the JSON error body (never
 * HTML), and a rejected request changes nothing (motor commands, running primitives, saved moves).
 * Sim time does not move unless a request accepted with `wait` needs it, so "nothing changed" is exact.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { LightMyRequestResponse } from 'fastify';
import { mulberry32 } from '../../src/core/prng.ts';
import { simServer, type TestServer } from '../helpers.ts';
import { isErrorBody } from './facts.ts';

const SEED = 14;
const REQUESTS_PER_PROFILE = 1000;

const HOSTILE_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'length',
  '%00',
  '..%2F..%2Fetc',
  '%3Cscript%3E',
  'a'.repeat(300),
  '%F0%9F%98%80',
  '0x10',
  '-1',
];

/** Valid names per path parameter, so the fuzz reaches the handlers, not only the lookups. */
const NAMES: Readonly<Record<string, readonly string[]>> = {
  motor: ['m1', 'm2', 'm6'],
  alias: ['base', 'tip', 'motors'],
  register: ['present_position', 'goal_position', 'compliant', 'pid', 'led', 'torque_limit', 'id'],
  chain: ['chain'],
  move: ['unit_test', 'fuzz.move'],
  primitive: ['dance', 'base_posture', 'sinus'],
  prop: ['amplitude', 'phase', 'motors'],
  method: ['start', 'reset'],
  name: ['tetris', 'caribou', 'lapin'],
  sensor: ['camera', 'marker_detector'],
  code: ['tetris', 'rabbit'],
};

const SCALARS: readonly unknown[] = [
  1e308,
  -1e308,
  1e-320,
  -0,
  0,
  '0x10',
  '0b1',
  '1e999',
  'Infinity',
  'NaN',
  '',
  ' ',
  'True',
  'true',
  true,
  false,
  null,
  [],
  {},
  '<script>alert(1)</script>',
  '"><img src=x>',
  [1, 2],
  ['m1', 'm1'],
  { __proto__: null, value: 1 },
  3601,
  0.01,
  -150,
  12.5,
  '12.5',
];

const CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=UTF-8',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  undefined,
];

const METHODS = ['GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;

type Op = { path: string; method: string; example?: unknown };

function deepArray(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

function deepObject(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

describe(`fuzz of every route (seed ${SEED}, each route once then ${REQUESTS_PER_PROFILE} random requests per profile)`, function () {
  this.timeout(120000);
  for (const compat of [undefined, 'pypot'] as const) {
    it(`${compat ?? 'default'} profile: no 500, only JSON error bodies, rejected requests change nothing`, async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'fuzz-'));
      const s = await simServer('ergo-jr', {
        recordsDir: dir,
        primitivesDir: 'examples/primitives',
        ...(compat ? { compat } : {}),
      });
      try {
        await run(s, mulberry32(SEED + (compat ? 1 : 0)), compat !== undefined);
      } finally {
        await s.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});

async function run(s: TestServer, rand: () => number, compat: boolean): Promise<void> {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const doc = JSON.parse((await s.get('/openapi.json')).body) as {
    paths: Record<
      string,
      Record<string, { requestBody?: { content: Record<string, { example?: unknown }> } }>
    >;
  };
  const ops: Op[] = Object.entries(doc.paths).flatMap(([p, methods]) =>
    Object.entries(methods).map(([m, op]) => ({
      path: p,
      method: m.toUpperCase(),
      example: op.requestBody?.content['application/json']?.example,
    })),
  );
  expect(ops.length).to.be.above(25);
  // Some state to protect: a saved move, stiff motors.
  await s.post('/records/unit_test/record.json');
  await s.advance(0.1);
  await s.post('/records/unit_test/save.json');
  for (const m of ['m1', 'm2']) await s.post(`/motors/${m}/registers/compliant/value.json`, false);

  const snapshot = async () =>
    JSON.stringify({
      t: s.backend.clock.now(),
      motors: s.robot.motors.map((m) => ({ ...m.commands })),
      running: s.primitives.runningList().map((p) => p.name),
      moves: await s.records.list(),
      cards: (await s.get('/sim/cards/list.json')).body,
    });

  const fillPath = (p: string) =>
    p.replace(/\{(\w+)\}/g, (_, name: string) =>
      rand() < 0.75 ? pick(NAMES[name] ?? ['x']) : pick(HOSTILE_NAMES),
    );

  const mutate = (example: unknown): unknown => {
    if (example === null || typeof example !== 'object' || Array.isArray(example)) return pick(SCALARS);
    const out: Record<string, unknown> = { ...(example as Record<string, unknown>) };
    for (const key of Object.keys(out)) if (rand() < 0.5) out[key] = pick(SCALARS);
    if (rand() < 0.2) delete out[pick(Object.keys(out))];
    // a goto that waits would need sim time: waits are exercised by the route tests
    if ('wait' in out && out.wait !== undefined) out.wait = false;
    return out;
  };

  const body = (op: Op): { payload?: string; type?: string } => {
    const type = pick(CONTENT_TYPES);
    const kind = Math.floor(rand() * 12);
    const json = (v: unknown) => JSON.stringify(v);
    switch (kind) {
      case 0:
        return { type };
      case 1:
        return { payload: deepArray(5000), type };
      case 2:
        return { payload: deepObject(5000), type };
      case 3:
        return { payload: `{"__proto__": ${json(op.example ?? { value: 1 })}}`, type };
      case 4:
        return {
          payload: `__proto__=${encodeURIComponent(json(op.example ?? { position: 10, duration: 1 }))}`,
          type: 'application/x-www-form-urlencoded',
        };
      case 5:
        return {
          payload: 'constructor[prototype][polluted]=1&value=1',
          type: 'application/x-www-form-urlencoded',
        };
      case 6:
        return { payload: json(pick(SCALARS)), type };
      case 7:
        return {
          payload: String.fromCharCode(...Array.from({ length: 40 }, () => Math.floor(rand() * 256))),
          type,
        };
      case 8:
        return { payload: '{"position": 1, "duration": ', type };
      case 9:
        return rand() < 0.2
          ? { payload: ' '.repeat(1024 * 1024 + 1), type }
          : { payload: json(mutate(op.example)), type };
      default:
        return { payload: json(mutate(op.example)), type };
    }
  };

  let rejected = 0;
  // Every documented operation once with its own method first, then random picks.
  const served = new Set<string>();
  for (let i = 0; i < ops.length + REQUESTS_PER_PROFILE; i++) {
    const op = i < ops.length ? ops[i]! : pick(ops);
    const method = i < ops.length || rand() < 0.7 ? op.method : pick(METHODS);
    if (method === op.method) served.add(`${method} ${op.path}`);
    const url =
      fillPath(op.path) +
      (rand() < 0.1 ? `?r=${encodeURIComponent(JSON.stringify(pick(SCALARS)) ?? '')}` : '');
    const { payload, type } = method === 'GET' && rand() < 0.7 ? {} : body(op);
    // Wait until the state is settled (the work an earlier request started has finished its writes), so that
    // what changes next is the request's doing.
    let before = await snapshot();
    for (let tries = 0; tries < 50; tries++) {
      for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
      const again = await snapshot();
      if (again === before) break;
      before = again;
    }
    const request = s.app.inject({
      method: method as 'GET',
      url,
      headers: type ? { 'content-type': type } : {},
      ...(payload !== undefined ? { payload } : {}),
    });
    let res: LightMyRequestResponse | undefined;
    void request.then((r) => (res = r));
    // Answers that need no sim time come within a few turns of the event loop (disk I/O for the moves included);
    // accepted requests that wait for a motion then get the sim time they need.
    for (let turn = 0; turn < 200 && !res; turn++) await new Promise((r) => setImmediate(r));
    for (let turn = 0; turn < 100 && !res; turn++) await new Promise((r) => setTimeout(r, 1));
    res ??= await s.untilAnswered(request, 3700, 1);
    const what = `#${i} ${method} ${url} ${type ?? '(no type)'} ${JSON.stringify(payload?.slice(0, 80) ?? null)}`;
    expect(res.statusCode, `${what}: ${res.body}`).to.not.equal(500);
    if (res.statusCode >= 400) {
      rejected++;
      expect(res.body, what).to.not.match(/^\s*</);
      const parsed = JSON.parse(res.body) as Record<string, unknown>;
      expect(isErrorBody(parsed), `${what}: ${res.body}`).to.equal(true);
      expect(res.headers['content-type'], what).to.equal(
        compat ? 'text/html; charset=UTF-8' : 'application/json; charset=utf-8',
      );
      expect(await snapshot(), `${what} was rejected (${res.statusCode}) but changed the state`).to.equal(
        before,
      );
    }
    expect(Object.getPrototypeOf({}), 'no request pollutes Object.prototype').to.equal(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  }
  expect(ops.map((op) => `${op.method} ${op.path}`).filter((op) => !served.has(op))).to.deep.equal([]);
  for (const op of [
    'POST /sim/cards/{name}/pose.json',
    'POST /records/{move}/upload.json',
    'GET /stream/state.json',
  ])
    expect(served, 'the routes added since the first fuzz are in the document').to.include(op);
  const sent = ops.length + REQUESTS_PER_PROFILE;
  expect(rejected, 'the fuzz reaches the error paths').to.be.above(sent / 4);
  expect(sent - rejected, 'and the handlers').to.be.above(sent / 20);
  expect((await s.get('/motors/list.json')).statusCode).to.equal(200);
}

/**
 * The plain lane (src/http/lane.ts) answers plain requests without fastify; everything else goes to fastify. Each
 * request below is sent over a socket (the lane, or fastify for the others) and again through fastify's inject, and
 * the two answers must match in status, headers and bytes. A hook on fastify counts what reaches it, so each case
 * also shows which way it went.
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { RobotError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { buildApp } from '../../src/http/app.ts';
import { route } from '../../src/http/route.ts';
import { simServer, type TestServer } from '../helpers.ts';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers node's socket adds and inject does not (or dates that differ). */
const TRANSPORT = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

function comparable(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers))
    if (!TRANSPORT.has(k.toLowerCase())) out[k.toLowerCase()] = String(v);
  return out;
}

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: string;
  readonly type?: string;
  /** Sent without a Content-Length, in chunks. */
  readonly chunked?: boolean;
  readonly origin?: string;
}

const JSON_TYPE = 'application/json';

/** Requests the lane answers. */
const PLAIN: readonly Case[] = [
  { name: 'the motors', method: 'GET', path: '/motors/list.json' },
  { name: 'a register read', method: 'GET', path: '/motors/m1/registers/present_position/value.json' },
  { name: "a motor's registers", method: 'GET', path: '/motors/m1/registers/list.json' },
  { name: 'one register of every motor', method: 'GET', path: '/motors/registers/goal_position/list.json' },
  { name: 'the whole robot', method: 'GET', path: '/robot.json' },
  { name: 'an unknown motor', method: 'GET', path: '/motors/m9/registers/present_position/value.json' },
  { name: 'an unknown register', method: 'GET', path: '/motors/m1/registers/nope/value.json' },
  { name: 'the index page (not JSON)', method: 'GET', path: '/' },
  { name: 'the primitives', method: 'GET', path: '/primitives/list.json' },
  { name: 'a goto', method: 'POST', path: '/motors/m1/goto.json', body: '{"position":20,"duration":0.5}' },
  {
    name: 'a goto with a string',
    method: 'POST',
    path: '/motors/m1/goto.json',
    body: '{"position":"x","duration":1}',
  },
  {
    name: 'a goto without its duration',
    method: 'POST',
    path: '/motors/m1/goto.json',
    body: '{"position":20}',
  },
  { name: 'a goto of an array', method: 'POST', path: '/motors/m1/goto.json', body: '[1,2]' },
  { name: 'a goto of broken JSON', method: 'POST', path: '/motors/m1/goto.json', body: '{"position":' },
  { name: 'a goto of nothing', method: 'POST', path: '/motors/m1/goto.json', body: '' },
  {
    name: 'a goto nested too deep',
    method: 'POST',
    path: '/motors/m1/goto.json',
    body: '['.repeat(40) + ']'.repeat(40),
  },
  {
    name: 'a goto of an unknown motor',
    method: 'POST',
    path: '/motors/m9/goto.json',
    body: '{"position":1,"duration":1}',
  },
  {
    name: 'a goto of several motors',
    method: 'POST',
    path: '/motors/goto.json',
    body: '{"motors":["m1","m2"],"positions":[10,-10],"duration":1}',
  },
  {
    name: 'a goto listing a motor twice',
    method: 'POST',
    path: '/motors/goto.json',
    body: '{"motors":["m1","m1"],"positions":[10,-10],"duration":1}',
  },
  {
    name: 'a body beyond ASCII',
    method: 'POST',
    path: '/motors/goto.json',
    body: '{"motors":["m\u00e9\u6a5f"],"positions":[1],"duration":1}',
  },
  {
    name: 'a register write',
    method: 'POST',
    path: '/motors/m2/registers/compliant/value.json',
    body: 'false',
  },
  {
    name: 'a read-only register',
    method: 'POST',
    path: '/motors/m2/registers/present_position/value.json',
    body: '3',
  },
  {
    name: 'a wrong type',
    method: 'POST',
    path: '/motors/m2/registers/compliant/value.json',
    body: '"maybe"',
  },
  {
    name: 'a JSON type with a charset',
    method: 'POST',
    path: '/motors/m2/registers/goal_position/value.json',
    body: '5',
    type: 'application/json; charset=utf-8',
  },
];

/** Requests left to fastify. */
const OTHERS: readonly Case[] = [
  { name: 'a query string', method: 'GET', path: '/motors/list.json?x=1' },
  { name: 'a trailing slash', method: 'GET', path: '/motors/list.json/' },
  { name: 'an escaped parameter', method: 'GET', path: '/motors/m%31/registers/present_position/value.json' },
  { name: 'an unknown route', method: 'GET', path: '/nope.json' },
  { name: 'GET on a POST route', method: 'GET', path: '/motors/m1/goto.json' },
  { name: 'HEAD', method: 'HEAD', path: '/motors/list.json' },
  { name: 'OPTIONS', method: 'OPTIONS', path: '/motors/list.json' },
  {
    name: 'a form body',
    method: 'POST',
    path: '/motors/m1/goto.json',
    body: 'position=5&duration=1',
    type: 'application/x-www-form-urlencoded',
  },
  {
    name: 'a text body',
    method: 'POST',
    path: '/motors/m2/registers/goal_position/value.json',
    body: '7',
    type: 'text/plain',
  },
  {
    name: 'no content type',
    method: 'POST',
    path: '/motors/m2/registers/goal_position/value.json',
    body: '8',
    type: '',
  },
  {
    name: 'a chunked body',
    method: 'POST',
    path: '/motors/m1/goto.json',
    body: '{"position":20,"duration":0.5}',
    chunked: true,
  },
];

function sendOverSocket(port: number, c: Case): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const type = c.type ?? JSON_TYPE;
    const headers: Record<string, string> = {};
    if (c.body !== undefined && type) headers['content-type'] = type;
    if (c.body !== undefined && !c.chunked) headers['content-length'] = String(Buffer.byteLength(c.body));
    if (c.origin) headers.origin = c.origin;
    const req = request(
      { host: '127.0.0.1', port, method: c.method, path: c.path, headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: comparable(res.headers), body }));
      },
    );
    req.on('error', reject);
    if (c.chunked && c.body) {
      req.write(c.body.slice(0, 5));
      req.write(c.body.slice(5));
    }
    req.end(c.chunked ? undefined : c.body);
  });
}

async function sendInjected(app: FastifyInstance, c: Case): Promise<Answer> {
  const type = c.type ?? JSON_TYPE;
  const res = await app.inject({
    method: c.method as 'GET',
    url: c.path,
    headers: {
      ...(c.body !== undefined && type ? { 'content-type': type } : {}),
      ...(c.origin ? { origin: c.origin } : {}),
    },
    payload: c.body,
  });
  return { status: res.statusCode, headers: comparable(res.headers), body: res.body };
}

describe('the plain lane', function () {
  let twin: TestServer;
  let port = 0;
  let reachedFastify = 0;

  before(async function () {
    twin = await simServer('ergo-jr');
    twin.app.addHook('onRequest', (_req, _reply, done) => {
      reachedFastify++;
      done();
    });
    // Stiff, so that gotos are taken (a compliant motor refuses them with 409).
    for (const motor of ['m1', 'm2'])
      await twin.post(`/motors/${motor}/registers/compliant/value.json`, false);
    await twin.app.listen({ port: 0, host: '127.0.0.1' });
    port = (twin.app.server.address() as AddressInfo).port;
  });
  after(() => twin.close());

  const overSocket = (c: Case) => sendOverSocket(port, c);
  const injected = (c: Case) => sendInjected(twin.app, c);

  for (const c of PLAIN)
    it(`answers ${c.name} as fastify does, without fastify`, async function () {
      const before = reachedFastify;
      const lane = await overSocket(c);
      expect(reachedFastify, 'the request reached fastify').to.equal(before);
      expect(lane).to.deep.equal(await injected(c));
    });

  for (const c of OTHERS)
    it(`leaves ${c.name} to fastify`, async function () {
      const before = reachedFastify;
      const answer = await overSocket(c);
      expect(reachedFastify, 'the request did not reach fastify').to.equal(before + 1);
      if (c.chunked) return void expect(answer.status).to.equal(200);
      const other = await injected(c);
      // A HEAD answer carries no body on the wire; inject shows the one fastify wrote.
      if (c.method === 'HEAD') other.body = '';
      expect(answer).to.deep.equal(other);
    });

  it('counts its answers in the metrics, by route and status', async function () {
    const count = async (status: number) => {
      const text = (await twin.get('/metrics')).body;
      const series = `poppy_http_requests_total{route="/motors/:motor/goto.json",method="POST",status="${status}"} `;
      const line = text.split('\n').find((l) => l.startsWith(series));
      return line ? Number(line.slice(series.length)) : 0;
    };
    const [ok, bad] = [await count(200), await count(400)];
    await overSocket(PLAIN.find((c) => c.name === 'a goto')!);
    await overSocket(PLAIN.find((c) => c.name === 'a goto with a string')!);
    expect([await count(200), await count(400)]).to.deep.equal([ok + 1, bad + 1]);
  });
});

describe('the plain lane, when a route fails', function () {
  let app: FastifyInstance;
  let port = 0;
  const logged: string[] = [];
  let reachedFastify = 0;
  const logger = { info() {}, warn() {}, error: (msg: string) => void logged.push(msg) };
  const routes = [
    route({
      method: 'GET',
      path: '/big.json',
      summary: 'an answer JSON cannot write',
      handler: () => ({ n: 1n }),
    }),
    route({
      method: 'GET',
      path: '/fault.json',
      summary: 'a handler with a bug',
      handler: () => {
        throw new Error('boom');
      },
    }),
    route({
      method: 'POST',
      path: '/later.json',
      summary: 'an answer that comes later',
      body: z.object({ a: z.number() }),
      handler: async ({ body }) => {
        await new Promise((resolve) => setImmediate(resolve));
        if (body.a < 0) throw new RobotError('conflict', 'a is negative', 'send a positive a');
        return { a: body.a };
      },
    }),
  ];

  before(async function () {
    app = buildApp({ routes, logger, plainLane: true });
    app.addHook('onRequest', (_req, _reply, done) => {
      reachedFastify++;
      done();
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  const cases: readonly Case[] = [
    { name: 'an answer JSON cannot write', method: 'GET', path: '/big.json' },
    { name: 'a handler that throws', method: 'GET', path: '/fault.json' },
    { name: 'an answer that comes later', method: 'POST', path: '/later.json', body: '{"a":2}' },
    { name: 'an error that comes later', method: 'POST', path: '/later.json', body: '{"a":-2}' },
    {
      name: 'a body that fails a route without a tip',
      method: 'POST',
      path: '/later.json',
      body: '{"a":"x"}',
    },
    {
      name: 'a body that is no object, to a route without a tip',
      method: 'POST',
      path: '/later.json',
      body: '3',
    },
  ];
  for (const c of cases)
    it(`answers ${c.name} as fastify does, and goes on`, async function () {
      const [before, reached] = [logged.length, reachedFastify];
      const lane = await sendOverSocket(port, c);
      expect(reachedFastify, 'the request reached fastify').to.equal(reached);
      const other = await sendInjected(app, c);
      expect(lane).to.deep.equal(other);
      // A 500 is the server's fault: logged once each way.
      expect(logged.length - before).to.equal(lane.status === 500 ? 2 : 0);
    });
});

describe('the plain lane, with the pypot profile', function () {
  it('stays out: its answers are rewritten in an onSend hook (content type, ETags)', async function () {
    const twin = await simServer('ergo-jr', { compat: 'pypot' });
    let reachedFastify = 0;
    twin.app.addHook('onRequest', (_req, _reply, done) => {
      reachedFastify++;
      done();
    });
    try {
      await twin.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (twin.app.server.address() as AddressInfo).port;
      const answer = await sendOverSocket(port, { name: 'a read', method: 'GET', path: '/motors/list.json' });
      expect(reachedFastify).to.equal(1);
      expect(answer.headers.etag).to.be.a('string');
      expect(answer.headers['content-type']).to.equal('text/html; charset=UTF-8');
    } finally {
      await twin.close();
    }
  });
});

describe('the plain lane, with listed origins', function () {
  let app: FastifyInstance;
  let port = 0;
  let reachedFastify = 0;
  before(async function () {
    const routes = [route({ method: 'GET', path: '/one.json', summary: 'one', handler: () => ({ one: 1 }) })];
    app = buildApp({ routes, logger: silentLogger, corsOrigins: ['http://class.example'], plainLane: true });
    app.addHook('onRequest', (_req, _reply, done) => {
      reachedFastify++;
      done();
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  for (const origin of ['http://class.example', 'http://elsewhere.example', undefined])
    it(`answers a request from ${origin ?? 'no origin'} with fastify's CORS headers`, async function () {
      const c: Case = { name: 'one', method: 'GET', path: '/one.json', origin };
      const reached = reachedFastify;
      const lane = await sendOverSocket(port, c);
      expect(reachedFastify, 'the request reached fastify').to.equal(reached);
      expect(lane).to.deep.equal(await sendInjected(app, c));
      expect(lane.headers['access-control-allow-origin']).to.equal(
        origin === 'http://class.example' ? origin : undefined,
      );
    });
});

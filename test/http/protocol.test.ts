/** docs/reference/contract.md 1 and 7: HTTP in general (headers, CORS, bodies, errors), GET /, /robot.json, /ip.json. */
import os from 'node:os';
import { expect } from 'chai';
import sinon from 'sinon';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { json, setValue, simServer, untilAnswered, value, type TestServer } from '../helpers.ts';
import { ERGO_JR, isErrorBody, registersOf, type Model } from './facts.ts';
import { expectArrival } from './arrival.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function expectError(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers['content-type']).to.equal(JSON_TYPE);
  expect(res.body).to.not.match(/<html|<body|<!doctype/i);
  const body = json(res);
  expect(isErrorBody(body), res.body).to.equal(true);
  expect(body.details as string).to.not.match(/\n\s+at /);
  return body;
}

describe('HTTP protocol (docs/reference/contract.md 1)', function () {
  this.timeout(20000);
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr');
  });
  afterEach(async () => {
    sinon.restore();
    await s.close();
  });

  const inject = (method: string, url: string, payload?: string, headers: Record<string, string> = {}) =>
    s.app.inject({ method: method as 'GET', url, payload, headers });

  /** One response of every kind: success, each error status, the HTML index, a preflight. */
  async function responsesOfEveryKind(): Promise<[string, LightMyRequestResponse][]> {
    await setValue(s, 'm2', 'compliant', false);
    return [
      ['GET 200', await s.get('/motors/list.json')],
      ['POST 200', await setValue(s, 'm1', 'goal_position', 10)],
      ['GET / html', await s.get('/')],
      ['OPTIONS 204', await inject('OPTIONS', '/motors/list.json')],
      ['400', await setValue(s, 'm1', 'goal_position', '"abc"')],
      ['403', await setValue(s, 'm1', 'present_position', 10)],
      ['404 route', await s.get('/no/such/route')],
      ['404 motor', await s.get('/motors/nope/registers/list.json')],
      ['405', await inject('DELETE', '/motors/list.json')],
      ['409', await s.post('/motors/m1/goto.json', { position: 1, duration: 1 })],
      ['413', await s.post('/motors/m1/registers/goal_position/value.json', ' '.repeat(1024 * 1024 + 10))],
      ['400 bad url', await s.get('/motors/%E0%A4%A/list.json')],
    ];
  }

  it('answers JSON as application/json; charset=utf-8 and GET / as text/html', async () => {
    for (const url of [
      '/motors/list.json',
      '/robot.json',
      '/ip.json',
      '/motors/m1/registers/pid/value.json',
    ]) {
      expect((await s.get(url)).headers['content-type'], url).to.equal(JSON_TYPE);
    }
    expect((await setValue(s, 'm1', 'torque_limit', 50)).headers['content-type']).to.equal(JSON_TYPE);
    expect((await s.get('/')).headers['content-type']).to.match(/^text\/html/);
  });

  it('every response carries Cache-Control: no-store and no open CORS header, errors included', async () => {
    for (const [what, res] of await responsesOfEveryKind()) {
      expect(res.headers['cache-control'], what).to.equal('no-store');
      // Only the server's own origin by default (docs/security.md): no page of another origin reads the answers.
      expect(res.headers['access-control-allow-origin'], what).to.equal(undefined);
    }
  });

  it('every failure answers {error, tip, details}, three strings, never HTML', async () => {
    for (const [what, res] of await responsesOfEveryKind()) {
      if (res.statusCode < 400) continue;
      expect(res.headers['content-type'], what).to.equal(JSON_TYPE);
      expect(isErrorBody(json(res)), `${what}: ${res.body}`).to.equal(true);
    }
  });

  it('a preflight OPTIONS on any route answers 204 with the allowed methods and headers', async () => {
    for (const url of [
      '/motors/list.json',
      '/motors/m1/registers/goal_position/value.json',
      '/motors/goto.json',
      '/robot.json',
      '/',
    ]) {
      const res = await inject('OPTIONS', url, undefined, {
        origin: 'http://viewer.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      });
      expect(res.statusCode, url).to.equal(204);
      expect(res.body, url).to.equal('');
      // An origin not listed gets no CORS header: the browser keeps its page from sending the request.
      expect(res.headers['access-control-allow-origin'], url).to.equal(undefined);
      const methods = String(res.headers['access-control-allow-methods']).split(/,\s*/);
      expect(methods, url).to.include.members(['GET', 'POST']);
      expect(String(res.headers['access-control-allow-headers']).toLowerCase(), url).to.include(
        'content-type',
      );
      expect(res.headers['cache-control'], url).to.equal('no-store');
    }
  });

  it('wrong methods on a known path are 405 with an Allow header', async () => {
    const cases: [string, string, string[]][] = [
      ['DELETE', '/motors/list.json', ['GET']],
      ['PUT', '/motors/list.json', ['GET']],
      ['POST', '/motors/list.json', ['GET']],
      ['POST', '/robot.json', ['GET']],
      ['GET', '/motors/goto.json', ['POST']],
      ['GET', '/motors/m1/goto.json', ['POST']],
      ['PATCH', '/motors/m1/registers/goal_position/value.json', ['GET', 'POST']],
      ['POST', '/motors/aliases/list.json', ['GET']],
    ];
    for (const [method, url, allowed] of cases) {
      const res = await inject(method, url);
      expectError(res, 405);
      expect(String(res.headers.allow).split(/,\s*/), `${method} ${url}`).to.have.members(allowed);
    }
  });

  it('unknown routes are 404 with the JSON error body', async () => {
    for (const [method, url] of [
      ['GET', '/nope'],
      ['POST', '/nope'],
      ['GET', '/motors/m1/nope.json'],
      ['GET', '/motors/m1/registers/present_position'],
      ['DELETE', '/no/such/thing'],
    ] as const) {
      const body = expectError(await inject(method, url), 404);
      expect(body.tip, url).to.include('GET /');
    }
  });

  it('a malformed URL is a JSON 400 too (not the framework default body)', async () => {
    const res = await s.get('/motors/%E0%A4%A/list.json');
    expectError(res, 400);
    expect(res.headers['cache-control']).to.equal('no-store');
  });

  describe('request bodies: JSON first, then form fields', () => {
    beforeEach(async () => {
      await setValue(s, 'm1', 'compliant', false);
    });

    const goto = { motors: { m1: 10 }, duration: 1, waiting: false };

    it('reads JSON whatever the Content-Type says (form, text/plain, none)', async () => {
      const body = '{"position": 10, "duration": 1}';
      for (const type of [
        'application/json',
        'application/x-www-form-urlencoded',
        'application/x-www-form-urlencoded; charset=UTF-8',
        'text/plain',
        'application/octet-stream',
      ]) {
        const res = await inject('POST', '/motors/m1/goto.json', body, { 'content-type': type });
        expect(res.statusCode, type).to.equal(200);
        expect(json(res), type).to.deep.equal(goto);
      }
      const bare = await inject('POST', '/motors/m1/goto.json', body);
      expect(json(bare)).to.deep.equal(goto);
    });

    it('reads a form body as fields whose values are JSON where they parse', async () => {
      const res = await inject('POST', '/motors/m1/goto.json', 'position=10&duration=1', FORM);
      expect(res.statusCode, res.body).to.equal(200);
      expect(json(res)).to.deep.equal(goto);
      const multi = new URLSearchParams({ motors: '["m1"]', positions: '[10]', duration: '1' }).toString();
      expect(json(await inject('POST', '/motors/goto.json', multi, FORM))).to.deep.equal(goto);
      const waiting = untilAnswered(
        s,
        inject('POST', '/motors/m1/goto.json', 'position=5&duration=0.5&wait=True', FORM),
        3,
        0.02,
      );
      await expectArrival(
        json(await waiting),
        { motors: { m1: 5 }, duration: 0.5, waiting: true, cancelled: false },
        ERGO_JR,
      );
    });

    it('a form body is not read unless labelled as a form', async () => {
      const res = await inject('POST', '/motors/m1/goto.json', 'position=10&duration=1', {
        'content-type': 'text/plain',
      });
      expectError(res, 400);
    });

    it('a bare-value endpoint takes value=<v> (JSON where it parses, else the string)', async () => {
      const url = (reg: string) => `/motors/m1/registers/${reg}/value.json`;
      expect(json(await inject('POST', url('goal_position'), 'value=12.5', FORM))).to.deep.equal({
        goal_position: 12.5,
      });
      expect(json(await inject('POST', url('compliant'), 'value=true', FORM))).to.deep.equal({
        compliant: true,
      });
      expect(json(await inject('POST', url('led'), 'value=blue', FORM))).to.deep.equal({ led: 'blue' });
      expect(
        json(await inject('POST', url('pid'), `value=${encodeURIComponent('[2,0,0]')}`, FORM)),
      ).to.deep.equal({
        pid: [2, 0, 0],
      });
      expectError(await inject('POST', url('goal_position'), 'position=12', FORM), 400);
    });

    it('bad JSON is 400 with the error body', async () => {
      for (const [url, payload] of [
        ['/motors/m1/goto.json', '{"position": 10, "duration": 1'],
        ['/motors/goto.json', '{motors: ["m1"]}'],
        ['/motors/m1/registers/goal_position/value.json', '{"value": '],
        ['/motors/m1/registers/compliant/value.json', 'tru'],
      ] as const) {
        expectError(await inject('POST', url, payload, { 'content-type': 'application/json' }), 400);
      }
    });

    it('a body over the limit (default 1 MiB) is 413 and changes nothing', async () => {
      const before = await value(s, 'm1', 'goal_position');
      const big = JSON.stringify({ position: 10, duration: 1, pad: 'x'.repeat(1024 * 1024) });
      expectError(await s.post('/motors/m1/goto.json', big), 413);
      expectError(await inject('POST', '/motors/m1/goto.json', big, FORM), 413);
      expect(s.robot.isMoving(s.robot.motor('m1'))).to.equal(false);
      expect(await value(s, 'm1', 'goal_position')).to.equal(before);
      // Just under the limit is fine.
      const fits = JSON.stringify({ position: 10, duration: 1, pad: 'x'.repeat(1024 * 1024 - 100) });
      expect((await s.post('/motors/m1/goto.json', fits)).statusCode).to.equal(200);
    });
  });

  it('a bug is a JSON 500 (no stack trace), logged, and the server keeps serving', async () => {
    await s.close();
    const logger = { info: sinon.spy(), warn: sinon.spy(), error: sinon.spy() };
    s = await simServer('ergo-jr', { logger });
    const stub = sinon
      .stub(s.robot, 'motor')
      .throws(new TypeError("Cannot read properties of undefined (reading 'commands')"));
    // A synchronous handler and an async one.
    for (const res of [
      await s.get('/motors/m1/registers/list.json'),
      await s.post('/motors/m1/goto.json', { position: 1, duration: 1 }),
    ]) {
      const body = expectError(res, 500);
      expect(body.details).to.include('Cannot read properties of undefined');
      expect(res.headers['cache-control']).to.equal('no-store');
    }
    expect(logger.error.callCount).to.equal(2);
    expect(String(logger.error.firstCall.args[0])).to.include('TypeError');
    stub.restore();
    expect((await s.get('/motors/m1/registers/list.json')).statusCode).to.equal(200);
  });
});

describe('CORS origins (createRobotServer option access.origins)', function () {
  let s: TestServer;
  before(async () => {
    s = await simServer('ergo-jr', {
      access: { origins: ['http://viewer.example', 'http://localhost:3000'] },
    });
  });
  after(() => s.close());

  it('echoes an allowed Origin (with Vary: Origin) and leaves others without the header', async () => {
    for (const origin of ['http://viewer.example', 'http://localhost:3000']) {
      const res = await s.app.inject({ method: 'GET', url: '/motors/list.json', headers: { origin } });
      expect(res.headers['access-control-allow-origin']).to.equal(origin);
      expect(String(res.headers.vary)).to.match(/origin/i);
    }
    const other = await s.app.inject({
      method: 'GET',
      url: '/motors/list.json',
      headers: { origin: 'http://evil.example' },
    });
    expect(other.statusCode).to.equal(200);
    expect(other.headers['access-control-allow-origin']).to.equal(undefined);
    const none = await s.get('/motors/list.json');
    expect(none.headers['access-control-allow-origin']).to.equal(undefined);
  });

  it('answers a preflight from an allowed origin with that origin, and errors carry it too', async () => {
    const pre = await s.app.inject({
      method: 'OPTIONS',
      url: '/motors/m1/registers/goal_position/value.json',
      headers: { origin: 'http://viewer.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.statusCode).to.equal(204);
    expect(pre.headers['access-control-allow-origin']).to.equal('http://viewer.example');
    const err = await s.app.inject({
      method: 'GET',
      url: '/nope',
      headers: { origin: 'http://viewer.example' },
    });
    expect(err.statusCode).to.equal(404);
    expect(err.headers['access-control-allow-origin']).to.equal('http://viewer.example');
  });
});

describe('body limit is configurable (buildApp bodyLimit)', () => {
  it('answers 413 above the configured limit and 200 below it', async () => {
    const app = buildApp({
      logger: silentLogger,
      bodyLimit: 100,
      routes: [{ method: 'POST', path: '/echo.json', summary: 'echo', handler: ({ body }) => ({ body }) }],
    });
    try {
      const small = await app.inject({ method: 'POST', url: '/echo.json', payload: '{"a": 1}' });
      expect(small.statusCode).to.equal(200);
      const big = await app.inject({
        method: 'POST',
        url: '/echo.json',
        payload: JSON.stringify('x'.repeat(200)),
      });
      expect(big.statusCode).to.equal(413);
      expect(isErrorBody(big.json())).to.equal(true);
    } finally {
      await app.close();
    }
  });
});

describe('GET /, /robot.json, /ip.json (docs/reference/rest-api.md 4.1, docs/reference/contract.md 7)', function () {
  for (const robot of ['ergo-jr', 'torso', 'humanoid'] as const) {
    describe(robot, () => {
      let s: TestServer;
      before(async () => {
        s = await simServer(robot);
      });
      after(() => s.close());

      it('GET / is an HTML page listing every GET and every POST path', async () => {
        const res = await s.get('/');
        expect(res.statusCode).to.equal(200);
        const listed = [...res.body.matchAll(/<code>(GET|POST) ([^<\s]+)<\/code>/g)].map(
          (m) => [m[1]!, m[2]!.replace(/&lt;/g, '<').replace(/&gt;/g, '>')] as const,
        );
        const paths = (method: string) => listed.filter(([m]) => m === method).map(([, p]) => p);
        expect(paths('GET')).to.include.members([
          '/',
          '/robot.json',
          '/ip.json',
          '/motors/list.json',
          '/motors/aliases/list.json',
          '/motors/<alias>/list.json',
          '/motors/<motor>/registers/list.json',
          '/motors/<motor>/registers/<register>/value.json',
          '/motors/registers/<register>/list.json',
        ]);
        expect(paths('POST')).to.include.members([
          '/motors/<motor>/registers/<register>/value.json',
          '/motors/<motor>/goto.json',
          '/motors/goto.json',
        ]);
        // Every listed path is a route, and every route is listed (the router's own table, counted).
        for (const [method, p] of listed) {
          expect(s.app.hasRoute({ method, url: p.replace(/<(\w+)>/g, ':$1') }), `${method} ${p}`).to.equal(
            true,
          );
        }
        // The reference page's own files (/docs/...) are not API endpoints; the index links to /docs.
        const table = routerTable(s.app.printRoutes({ commonPrefix: false })).filter(
          ([path]) => !path.startsWith('/docs'),
        );
        const count = (method: string) => table.filter(([, methods]) => methods.includes(method)).length;
        expect(paths('GET').length).to.equal(count('GET'));
        expect(paths('POST').length).to.equal(count('POST'));
      });

      it('/robot.json lists every motor with every register but safe_compliant, and the primitives', async () => {
        const body = json(await s.get('/robot.json'));
        expect(Object.keys(body)).to.have.members(['motors', 'primitives']);
        const motors = body.motors as Record<string, unknown>[];
        expect(motors.map((m) => m.name)).to.deep.equal(s.robot.motors.map((m) => m.name));
        for (const m of motors) {
          const expected = registersOf(m.model as Model).filter((r) => r !== 'safe_compliant');
          expect(Object.keys(m)).to.have.members(expected);
          expect(m).to.not.have.property('safe_compliant');
        }
        expect(body.primitives).to.be.an('array');
        for (const p of body.primitives as Record<string, unknown>[]) {
          expect(p).to.have.keys(['primitive', 'running', 'properties', 'methods']);
          expect(p.primitive).to.be.a('string');
          expect(p.running).to.be.a('boolean');
          expect(p.properties).to.be.an('array');
          expect(p.methods).to.be.an('array');
        }
      });

      it("/ip.json answers the host's first non-internal IPv4 address (127.0.0.1 when none)", async () => {
        const body = json(await s.get('/ip.json'));
        expect(Object.keys(body)).to.deep.equal(['ip']);
        const first = Object.values(os.networkInterfaces())
          .flat()
          .find((a) => a && a.family === 'IPv4' && !a.internal);
        expect(body.ip).to.equal(first?.address ?? '127.0.0.1');
        expect(body.ip).to.match(/^\d{1,3}(\.\d{1,3}){3}$/);
      });
    });
  }
});

/** The router's tree (printRoutes) as [full path, methods] rows. */
function routerTable(tree: string): [string, string[]][] {
  const rows: [string, string[]][] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?)(?: \((.*)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    if (m[3]) rows.push([stack.join(''), m[3].split(', ')]);
  }
  return rows;
}

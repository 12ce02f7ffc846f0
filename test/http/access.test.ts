/**
 * The edge's checks (src/http/access.ts, docs/security.md) through fastify's inject: the Host allow-list, the origin
 * of requests that change the robot, the token (header, cookie, query), and what a refusal says, logs and counts.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { hostName, redactToken } from '../../src/http/access.ts';
import type { Logger } from '../../src/core/logger.ts';
import { json, simServer, type TestServer } from '../helpers.ts';

const TOKEN = 'teacher-token-1234';

function spyLogger(): Logger & { warn: sinon.SinonSpy } {
  return { debug: sinon.spy(), info: sinon.spy(), warn: sinon.spy(), error: sinon.spy() } as never;
}

async function compliant(s: TestServer, motor = 'm1'): Promise<unknown> {
  const res = await s.app.inject({ method: 'GET', url: `/motors/${motor}/registers/compliant/value.json` });
  return json(res).compliant;
}

describe('the edge: Host allow-list (DNS rebinding)', function () {
  let s: TestServer;
  let logger: ReturnType<typeof spyLogger>;
  before(async () => {
    logger = spyLogger();
    s = await simServer('ergo-jr', {
      logger,
      access: { allowedHosts: ['robot.school.example', '.lab.example'] },
    });
  });
  after(() => s.close());

  it('reads the host name of any Host header form', () => {
    expect(hostName('LocalHost:8080')).to.equal('localhost');
    expect(hostName('[::1]:8080')).to.equal('::1');
    expect(hostName('127.0.0.1')).to.equal('127.0.0.1');
    expect(hostName('poppy.local.:80')).to.equal('poppy.local');
  });

  it('refuses a foreign Host on every route, known or not, GET or POST, before any handler runs', async () => {
    for (const host of ['evil.example', '127.0.0.1.evil.example', 'localhost.evil.example:8080']) {
      for (const [method, url, payload] of [
        ['GET', '/motors/list.json', undefined],
        ['GET', '/', undefined],
        ['GET', '/no/such/route', undefined],
        ['GET', '/metrics', undefined],
        ['POST', '/motors/m1/registers/compliant/value.json', 'false'],
      ] as const) {
        const res = await s.app.inject({
          method,
          url,
          payload,
          headers: { host, 'content-type': 'text/plain' },
        });
        expect(res.statusCode, `${host} ${method} ${url}`).to.equal(403);
        const body = json(res);
        expect(body.error).to.include('host name');
        expect(Object.keys(body).sort()).to.deep.equal(['details', 'error', 'tip']);
      }
    }
    expect(await compliant(s)).to.equal(true);
  });

  it("answers the server's own names, the allowed ones, and the probes whoever asks", async () => {
    for (const host of [
      'localhost:8080',
      '127.0.0.1:8080',
      '[::1]:8080',
      'robot.school.example',
      'ui.localhost',
    ]) {
      const res = await s.app.inject({ method: 'GET', url: '/motors/list.json', headers: { host } });
      expect(res.statusCode, host).to.equal(200);
    }
    for (const url of ['/healthz', '/readyz']) {
      const res = await s.app.inject({ method: 'GET', url, headers: { host: 'evil.example' } });
      expect(res.statusCode, url).to.equal(200);
    }
  });

  it('logs each refusal (address, host, route) and counts it in /metrics', async () => {
    const before = logger.warn.callCount;
    await s.app.inject({ method: 'GET', url: '/robot.json', headers: { host: 'evil.example' } });
    expect(logger.warn.callCount).to.equal(before + 1);
    const line = String(logger.warn.lastCall.args[0]);
    expect(line).to.include('refused (host)').and.to.include('/robot.json').and.to.include('evil.example');
    const metrics = await s.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).to.match(/poppy_http_refused_total\{reason="host"\} [1-9]/);
  });
});

describe('the edge: requests that change the robot come from an allowed origin (CSRF)', function () {
  let s: TestServer;
  before(async () => {
    s = await simServer('ergo-jr', { access: { origins: ['http://teacher.example:9000'] } });
  });
  after(() => s.close());

  const write = (headers: Record<string, string>, value = 'false') =>
    s.app.inject({
      method: 'POST',
      url: '/motors/m1/registers/compliant/value.json',
      payload: value,
      headers: { host: 'localhost:8080', 'content-type': 'text/plain', ...headers },
    });

  it('refuses a POST from another origin whatever its content type, and nothing changes', async () => {
    for (const origin of ['http://localhost:5000', 'http://evil.example', 'null', 'http://localhost']) {
      for (const type of ['text/plain', 'application/json', 'application/x-www-form-urlencoded']) {
        const res = await write({ origin, 'content-type': type });
        expect(res.statusCode, `${origin} ${type}`).to.equal(403);
        expect(json(res).error).to.include('may not change the robot');
      }
    }
    const goto = await s.app.inject({
      method: 'POST',
      url: '/motors/m1/goto.json',
      payload: { position: 60, duration: 1 },
      headers: { host: 'localhost:8080', origin: 'http://localhost:5000' },
    });
    expect(goto.statusCode).to.equal(403);
    expect(await compliant(s)).to.equal(true);
  });

  it('refuses a request without Origin that a browser marks cross-site or same-site (another port)', async () => {
    for (const site of ['cross-site', 'same-site']) {
      expect((await write({ 'sec-fetch-site': site })).statusCode, site).to.equal(403);
    }
    expect(await compliant(s)).to.equal(true);
  });

  it('refuses a GET that acts (a primitive start) from another page', async () => {
    const res = await s.app.inject({
      method: 'GET',
      url: '/primitives/idle/start.json',
      headers: { host: 'localhost:8080', 'sec-fetch-site': 'same-site' },
    });
    expect(res.statusCode).to.equal(403);
    const running = json(await s.app.inject({ method: 'GET', url: '/primitives/running/list.json' }));
    expect(running.primitives).to.deep.equal([]);
  });

  it("takes the server's own origin, a listed origin, and clients that are not browsers", async () => {
    expect((await write({ origin: 'http://localhost:8080' })).statusCode).to.equal(200);
    expect((await write({ 'sec-fetch-site': 'same-origin' }, 'true')).statusCode).to.equal(200);
    const listed = await write({ origin: 'http://teacher.example:9000' });
    expect(listed.statusCode).to.equal(200);
    expect(listed.headers['access-control-allow-origin']).to.equal('http://teacher.example:9000');
    expect((await write({}, 'true')).statusCode).to.equal(200);
    expect(await compliant(s)).to.equal(true);
  });

  it('reads from another origin are answered without CORS headers, so its page reads nothing', async () => {
    const res = await s.app.inject({
      method: 'GET',
      url: '/motors/m1/registers/present_position/value.json',
      headers: { host: 'localhost:8080', origin: 'http://localhost:5000' },
    });
    expect(res.statusCode).to.equal(200);
    expect(res.headers['access-control-allow-origin']).to.equal(undefined);
  });
});

describe("the edge: --cors-origins='*' opens every origin", function () {
  it('lets any page write and read', async () => {
    const s = await simServer('ergo-jr', { access: { origins: '*' } });
    try {
      const res = await s.app.inject({
        method: 'POST',
        url: '/motors/m1/registers/compliant/value.json',
        payload: 'false',
        headers: { origin: 'http://elsewhere.example', 'content-type': 'text/plain' },
      });
      expect(res.statusCode).to.equal(200);
      expect(res.headers['access-control-allow-origin']).to.equal('*');
    } finally {
      await s.close();
    }
  });
});

describe('the edge: a token', function () {
  let s: TestServer;
  let logger: ReturnType<typeof spyLogger>;
  before(async () => {
    logger = spyLogger();
    s = await simServer('ergo-jr', { logger, access: { tokens: [TOKEN] } });
  });
  after(() => s.close());

  const get = (url: string, headers: Record<string, string> = {}) =>
    s.app.inject({ method: 'GET', url, headers: { host: 'localhost:8080', ...headers } });

  it('without it or with a wrong one: 401 with a tip and nothing of the robot', async () => {
    for (const headers of <Record<string, string>[]>[
      {},
      { authorization: 'Bearer wrong-token-0000' },
      { authorization: `Basic ${TOKEN}` },
      { cookie: 'poppy-twin-token-8080=wrong-token-0000' },
    ]) {
      for (const url of ['/motors/list.json', '/robot.json', '/', '/ui/', '/docs', '/metrics', '/nope']) {
        const res = await get(url, headers);
        expect(res.statusCode, `${url} ${JSON.stringify(headers)}`).to.equal(401);
        expect(res.headers['www-authenticate']).to.equal('Bearer');
        expect(res.body).to.not.include('m1').and.to.not.include('ergo');
        expect(json(res).tip).to.include('Authorization: Bearer');
      }
    }
    const write = await s.app.inject({
      method: 'POST',
      url: '/motors/m1/registers/compliant/value.json',
      payload: 'false',
      headers: { 'content-type': 'text/plain' },
    });
    expect(write.statusCode).to.equal(401);
    const read = await get('/motors/m1/registers/compliant/value.json', { authorization: `Bearer ${TOKEN}` });
    expect(json(read).compliant).to.equal(true);
  });

  it('with it, in the header, a cookie or the query: the robot answers', async () => {
    expect((await get('/motors/list.json', { authorization: `Bearer ${TOKEN}` })).statusCode).to.equal(200);
    expect((await get('/metrics', { authorization: `bearer ${TOKEN}` })).statusCode).to.equal(200);
    expect((await get('/robot.json', { cookie: `a=b; poppy-twin-token-8080=${TOKEN}` })).statusCode).to.equal(
      200,
    );
    const opened = await get(`/ui/?token=${TOKEN}`);
    expect(opened.statusCode).to.equal(200);
    const cookie = String(opened.headers['set-cookie']);
    expect(cookie).to.include(`poppy-twin-token-8080=${TOKEN}`);
    expect(cookie).to.include('HttpOnly').and.to.include('SameSite=Strict').and.to.include('Path=/');
    // A wrong query token sets nothing.
    const wrong = await get('/ui/?token=wrong-token-0000');
    expect(wrong.statusCode).to.equal(401);
    expect(wrong.headers['set-cookie']).to.equal(undefined);
  });

  it('leaves the probes and CORS preflights open', async () => {
    expect((await get('/healthz')).statusCode).to.equal(200);
    expect((await get('/readyz')).statusCode).to.equal(200);
    const preflight = await s.app.inject({ method: 'OPTIONS', url: '/motors/goto.json' });
    expect(preflight.statusCode).to.equal(204);
  });

  it('never logs the token', async () => {
    await get(`/robot.json?token=${TOKEN}x`);
    await get('/robot.json', { authorization: `Bearer ${TOKEN}x` });
    const lines = logger.warn.getCalls().map((c) => String(c.args[0]));
    expect(lines.length).to.be.greaterThan(1);
    for (const line of lines) expect(line).to.not.include(TOKEN);
    expect(redactToken(`/ui/?a=1&token=${TOKEN}&b=2`)).to.equal('/ui/?a=1&token=(hidden)&b=2');
  });
});

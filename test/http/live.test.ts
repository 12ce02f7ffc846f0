/**
 * The key checks "from outside": a server listening on a real port, real HTTP requests with fetch, the sim running
 * on its own (--speed max) as it does under `npm start`.
 */
import { expect } from 'chai';
import { createRobotServer, type RobotServer } from '../../src/server.ts';
import { ROBOTS, fact, isErrorBody, maxAngle, registersOf } from './facts.ts';
import { expectArrival } from './arrival.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

for (const robot of ROBOTS) {
  describe(`live HTTP on the ${robot.name} (listen on a port, fetch, --speed max)`, function () {
    this.timeout(30000);
    let server: RobotServer;
    let base: string;

    before(async () => {
      server = await createRobotServer({ backend: 'sim', robot: robot.name, speed: 'max' });
      await server.app.listen({ port: 0, host: '127.0.0.1' });
      const addr = server.app.server.address();
      if (!addr || typeof addr === 'string') throw new Error('no port');
      base = `http://127.0.0.1:${addr.port}`;
    });
    after(() => server.close());

    async function call(
      method: string,
      path: string,
      body?: string,
      type = 'application/json',
    ): Promise<Answer> {
      const res = await fetch(base + path, {
        method,
        body,
        headers: body === undefined ? {} : { 'content-type': type },
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    }
    const get = (path: string) => call('GET', path);
    const post = (path: string, body: unknown) => call('POST', path, JSON.stringify(body));

    function ok(a: Answer): Record<string, unknown> {
      expect(a.status, a.text).to.equal(200);
      expect(a.headers.get('content-type')).to.equal(JSON_TYPE);
      expect(a.headers.get('cache-control')).to.equal('no-store');
      expect(a.headers.get('access-control-allow-origin')).to.equal(null);
      return a.body as Record<string, unknown>;
    }
    function failed(a: Answer, status: number): Record<string, unknown> {
      expect(a.status, a.text).to.equal(status);
      expect(a.headers.get('content-type')).to.equal(JSON_TYPE);
      expect(a.headers.get('cache-control')).to.equal('no-store');
      expect(isErrorBody(a.body), a.text).to.equal(true);
      return a.body as Record<string, unknown>;
    }
    const [a] = robot.pair;
    const reg = (motor: string, r: string) => `/motors/${motor}/registers/${r}/value.json`;

    it('serves the lists: motors, aliases, an alias, registers', async () => {
      expect(ok(await get('/motors/list.json'))).to.deep.equal({ motors: robot.motors.map((f) => f.name) });
      expect(ok(await get('/motors/aliases/list.json'))).to.deep.equal({
        aliases: Object.keys(robot.aliases),
      });
      const [alias, members] = Object.entries(robot.aliases).at(-1)!;
      expect(ok(await get(`/motors/${alias}/list.json`))).to.deep.equal({ [alias]: members });
      for (const f of robot.motors) {
        expect(ok(await get(`/motors/${f.name}/registers/list.json`))).to.deep.equal({
          registers: registersOf(f.model),
        });
      }
    });

    it('reads registers in the user frame and /robot.json, /ip.json, GET /', async () => {
      for (const f of robot.motors) {
        expect(ok(await get(reg(f.name, 'angle_limit')))).to.deep.equal({ angle_limit: [f.lower, f.upper] });
        expect(ok(await get(reg(f.name, 'present_position'))).present_position).to.be.a('number');
      }
      const all = ok(await get('/robot.json'));
      expect((all.motors as unknown[]).length).to.equal(robot.motors.length);
      expect(ok(await get('/ip.json')).ip).to.be.a('string');
      const index = await get('/');
      expect(index.status).to.equal(200);
      expect(index.headers.get('content-type')).to.match(/^text\/html/);
      expect(index.text).to.include('/motors/goto.json');
    });

    it('writes registers (JSON and form), clamps, and refuses bad writes with the right status', async () => {
      const f = fact(robot, robot.framed);
      expect(ok(await post(reg(f.name, 'goal_position'), maxAngle(f) + 50))).to.deep.equal({
        goal_position: maxAngle(f),
      });
      expect(
        ok(await call('POST', reg(f.name, 'torque_limit'), 'value=120', 'application/x-www-form-urlencoded')),
      ).to.deep.equal({ torque_limit: 100 });
      failed(await post(reg(f.name, 'goal_position'), 'far'), 400);
      failed(await post(reg(f.name, 'present_position'), 0), 403);
      failed(await post(reg('no_such_motor', 'goal_position'), 0), 404);
      failed(await post(reg(f.name, 'no_such_register'), 0), 404);
      failed(await get('/motors/no_such_alias/list.json'), 404);
      failed(await get('/no/such/route'), 404);
      failed(await call('POST', `/motors/${a}/goto.json`, '{"position": 1,', 'application/json'), 400);
      const wrong = failed(await call('DELETE', '/motors/list.json'), 405);
      expect(wrong.error).to.be.a('string');
      const allow = await call('PUT', reg(a, 'goal_position'));
      failed(allow, 405);
      expect(allow.headers.get('allow')?.split(/,\s*/)).to.have.members(['GET', 'POST']);
    });

    it('answers a CORS preflight with 204', async () => {
      const res = await fetch(`${base}/motors/goto.json`, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://viewer.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type',
        },
      });
      expect(res.status).to.equal(204);
      // Not a listed origin: no CORS header, so a browser would not send the POST.
      expect(res.headers.get('access-control-allow-origin')).to.equal(null);
      expect(res.headers.get('access-control-allow-methods')).to.include('POST');
      expect(res.headers.get('cache-control')).to.equal('no-store');
    });

    /** Upright and stiff, settled for `seconds` of sim time (see standStill in test/helpers.ts: why). */
    async function standStill(seconds = 2): Promise<void> {
      ok(await post('/sim/motors/compliant.json', { compliant: false }));
      ok(
        await post('/sim/pose.json', { positions: Object.fromEntries(robot.motors.map((f) => [f.name, 0])) }),
      );
      const t0 = ok(await get('/sim/status.json')).sim_time as number;
      while ((ok(await get('/sim/status.json')).sim_time as number) < t0 + seconds)
        await new Promise((r) => setTimeout(r, 10));
    }

    it('a goto on a compliant motor is 409; a goto with wait ends within the servo dead band of its target', async () => {
      await standStill();
      ok(await post(reg(a, 'compliant'), true));
      failed(await post(`/motors/${a}/goto.json`, { position: 10, duration: 0.5 }), 409);
      ok(await post(reg(a, 'compliant'), false));
      const t0 = ok(await get('/sim/status.json')).sim_time as number;
      const res = ok(await post(`/motors/${a}/goto.json`, { position: 25, duration: 1, wait: true }));
      const t1 = ok(await get('/sim/status.json')).sim_time as number;
      await expectArrival(res, { motors: { [a]: 25 }, duration: 1, waiting: true, cancelled: false }, robot);
      expect(t1 - t0, 'the answer came after the motion, in sim time').to.be.at.least(1);
      const p = ok(await get(reg(a, 'present_position'))).present_position as number;
      expect(Math.abs(p - 25)).to.be.below(robot.gotoTolerance);
    });

    it('a multi goto with wait ends within the servo dead band of every target', async () => {
      const [m1, m2] = robot.pair;
      for (const m of [m1, m2]) ok(await post(reg(m, 'compliant'), false));
      const res = ok(
        await call(
          'POST',
          '/motors/goto.json',
          `motors=${encodeURIComponent(JSON.stringify([m1, m2]))}&positions=${encodeURIComponent('[-20, 15]')}&duration=0.8&wait=1`,
          'application/x-www-form-urlencoded',
        ),
      );
      await expectArrival(
        res,
        { motors: { [m1]: -20, [m2]: 15 }, duration: 0.8, waiting: true, cancelled: false },
        robot,
      );
      const p1 = ok(await get(reg(m1, 'present_position'))).present_position as number;
      const p2 = ok(await get(reg(m2, 'present_position'))).present_position as number;
      expect(Math.abs(p1 + 20)).to.be.below(robot.gotoTolerance);
      expect(Math.abs(p2 - 15)).to.be.below(robot.gotoTolerance);
    });
  });
}

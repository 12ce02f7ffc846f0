/**
 * A classroom in one process: twins on the main port under /twins/<name>/, the teacher's list and resets, and one
 * twin's trouble (a reset, a crashing custom primitive, a flood of requests) leaving the others' answers exactly
 * as in a classroom where nothing happened. Time is the shared scheduler's manual clock.
 */
import { expect } from 'chai';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import WebSocket from 'ws';
import { Classroom } from '../../src/classroom/classroom.ts';
import { readRoster } from '../../src/classroom/roster.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { until } from '../helpers.ts';

const NAMES = ['ana', 'ben', 'cy'];
const OTHERS = ['ben', 'cy'];

const CRASHES = `export default (ctx: any, lib: any) => new (class extends lib.Primitive {
  constructor() { super(ctx, 'crashes', { frequency: 10 }); }
  protected override update() { process.exit(1); }
})();
`;

describe('classroom: twins in one process', function () {
  this.timeout(120000);
  let tmp: string;
  let primitivesDir: string;

  const open = async (twins = NAMES.map((name) => ({ name, robot: 'ergo-jr', port: 0 }))) => {
    const room = await Classroom.create({
      twins,
      speed: 'manual',
      recordsDir: path.join(tmp, `records-${Math.random().toString(36).slice(2)}`),
      primitivesDir,
      primitiveLimits: { heartbeatMs: 50, unresponsiveMs: 500, callTimeoutMs: 500 },
    });
    await room.loaded();
    expect(room.ready()).to.equal(true);
    return room;
  };
  const get = (room: Classroom, name: string, url: string) =>
    room.app.inject({ method: 'GET', url: `/twins/${name}${url}` });
  const post = (room: Classroom, name: string, url: string, body?: unknown) =>
    room.app.inject({
      method: 'POST',
      url: `/twins/${name}${url}`,
      headers: { 'content-type': 'application/json' },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
  const ok = (res: LightMyRequestResponse) => {
    expect(res.statusCode, res.body).to.equal(200);
    return res.json() as Record<string, unknown>;
  };

  /** The same lesson for every twin: stand stiff, a goto, time passing; `disturb` meanwhile on ana only. */
  async function lesson(room: Classroom, disturb: (room: Classroom) => Promise<void>) {
    for (const name of NAMES) {
      ok(await post(room, name, '/sim/motors/compliant.json', { compliant: false }));
      ok(await post(room, name, '/motors/m2/goto.json', { position: 30, duration: 1 }));
    }
    await room.advance(0.5);
    await Promise.all([disturb(room), room.advance(1)]);
    const answers: Record<string, unknown> = {};
    for (const name of NAMES) answers[name] = ok(await get(room, name, '/robot.json'));
    return answers;
  }

  let control: Record<string, unknown>;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'poppy-classroom-'));
    primitivesDir = path.join(tmp, 'primitives');
    await mkdir(primitivesDir);
    await writeFile(path.join(primitivesDir, 'crashes.ts'), CRASHES);
    const room = await open();
    try {
      control = await lesson(room, async () => {});
    } finally {
      await room.close();
    }
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('serves each twin whole under /twins/<name>/, lists them, and answers 404 with a tip for others', async () => {
    const room = await open();
    try {
      expect(ok(await get(room, 'ben', '/motors/list.json')).motors).to.have.length(6);
      const page = await get(room, 'ben', '/ui/');
      expect(page.body).to.contain('<meta name="poppy-base" content="/twins/ben" />');
      expect(page.body).to.contain('src="/twins/ben/ui/app.js"');
      const list = ok(await room.app.inject({ url: '/twins/list.json' }));
      const twins = list.twins as { name: string; robot: string; last_request: { url: string } | null }[];
      expect(twins.map((t) => t.name)).to.deep.equal(NAMES);
      expect(twins.map((t) => t.robot)).to.deep.equal(['ergo-jr', 'ergo-jr', 'ergo-jr']);
      expect(twins[1]!.last_request?.url, 'the twin sees its own URL').to.equal('/ui/');
      expect(twins[0]!.last_request).to.equal(null);
      const unknown = await room.app.inject({ url: '/twins/zoe/motors/list.json' });
      expect(unknown.statusCode).to.equal(404);
      expect(unknown.json()).to.deep.include({
        tip: 'GET /twins/list.json lists the twins of this classroom',
      });
      expect((await room.app.inject({ method: 'POST', url: '/twins/zoe/reset.json' })).statusCode).to.equal(
        404,
      );
      const home = await room.app.inject({ url: '/' });
      expect(home.headers['content-type']).to.match(/text\/html/);
      expect(home.body).to.contain('/twins/list.json').and.contain('short of CPU');
      // Each twin's records go in its own folder.
      ok(await post(room, 'cy', '/records/lesson/record.json', {}));
      await room.advance(0.2);
      ok(await post(room, 'cy', '/records/lesson/stop.json', {}));
      ok(await post(room, 'cy', '/records/lesson/save.json', {}));
      expect(ok(await get(room, 'cy', '/records/list.json')).moves).to.include('lesson');
      expect(ok(await get(room, 'ben', '/records/list.json')).moves).to.not.include('lesson');
    } finally {
      await room.close();
    }
  });

  it("resetting one twin leaves the others' answers unchanged", async () => {
    const room = await open();
    try {
      const answers = await lesson(room, async (r) => {
        const res = await r.app.inject({ method: 'POST', url: '/twins/ana/reset.json' });
        expect(res.statusCode, res.body).to.equal(200);
      });
      expect(answers.ana, 'the reset did happen').to.not.deep.equal(control.ana);
      for (const name of OTHERS) expect(answers[name], name).to.deep.equal(control[name]);
    } finally {
      await room.close();
    }
  });

  it("a crashing custom primitive on one twin leaves the others' answers unchanged", async () => {
    const room = await open();
    try {
      const answers = await lesson(room, async (r) => {
        ok(await get(r, 'ana', '/primitives/crashes/start.json'));
        // The worker's exit is reported in wall time; sim time does not move meanwhile.
        const deadline = performance.now() + 15000;
        for (;;) {
          const s = ok(await get(r, 'ana', '/primitives/crashes/status.json'));
          if (s.last_error) break;
          if (performance.now() > deadline) throw new Error('the primitive did not crash');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      });
      const status = ok(await get(room, 'ana', '/primitives/crashes/status.json'));
      expect(status.running).to.equal(false);
      expect(String(status.last_error)).to.match(/exit/);
      for (const name of OTHERS) {
        expect(answers[name], name).to.deep.equal(control[name]);
        expect(ok(await get(room, name, '/primitives/crashes/status.json')).last_error, name).to.equal(null);
      }
    } finally {
      await room.close();
    }
  });

  it("a flood of requests on one twin leaves the others' answers unchanged", async () => {
    const room = await open();
    try {
      let answered = 0;
      const answers = await lesson(room, async (r) => {
        await Promise.all(
          Array.from({ length: 2000 }, async (_, i) => {
            const res =
              i % 4 === 3
                ? await post(r, 'ana', '/motors/m3/registers/goal_position/value.json', i % 40)
                : await get(r, 'ana', '/motors/m2/registers/present_position/value.json');
            if (res.statusCode === 200) answered++;
          }),
        );
      });
      expect(answered).to.equal(2000);
      expect(answers.ana, 'the flood did move ana').to.not.deep.equal(control.ana);
      for (const name of OTHERS) expect(answers[name], name).to.deep.equal(control[name]);
      const metrics = await room.app.inject({ url: '/metrics' });
      expect(metrics.body).to.match(
        /poppy_http_requests_total\{route="\/motors\/:motor\/registers\/:register\/value.json",method="GET",status="200",twin="ana"\} 1500/,
      );
    } finally {
      await room.close();
    }
  });

  it('closes within a bound with a state stream open through the main port', async () => {
    const room = await open();
    await room.listen('127.0.0.1', 0);
    const { port } = room.app.server.address() as net.AddressInfo;
    const socket = new WebSocket(`ws://127.0.0.1:${port}/twins/ben/stream/state?rate=10`);
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.on('error', () => {});
    await new Promise((resolve, reject) => {
      socket.once('message', resolve);
      socket.once('error', reject);
    });
    const t0 = performance.now();
    await room.close();
    expect(performance.now() - t0).to.be.lessThan(3000);
    await until('the stream closed', async () => (closed ? true : undefined));
  });

  it('every twin moves in lockstep with the shared scheduler', async () => {
    const room = await open();
    try {
      await room.advance(0.3);
      for (const t of room.twins.values()) expect(t.server.robot.clock.now()).to.be.closeTo(0.3, 1e-9);
      expect(room.scheduler.now()).to.be.closeTo(0.3, 1e-9);
    } finally {
      await room.close();
    }
  });

  describe('bad input stops start-up with one line naming it', () => {
    const file = async (twins: unknown) => {
      const p = path.join(tmp, `room-${Math.random().toString(36).slice(2)}.json`);
      await writeFile(p, JSON.stringify({ twins }));
      return p;
    };
    const fails = async (value: string, pattern: RegExp, port = 8080) => {
      const err = await readRoster(value, { robot: 'ergo-jr', port }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(ConfigError);
      expect((err as Error).message)
        .to.match(pattern)
        .and.not.contain('\n');
    };

    it('n twins are <robot>-01... on --port + i', async () => {
      const twins = await readRoster('3', { robot: 'ergo-jr', port: 9000 });
      // Each with a token of its own (test/classroom/tokens.test.ts).
      expect(twins.map(({ token: _, ...rest }) => rest)).to.deep.equal([
        { name: 'ergo-jr-01', robot: 'ergo-jr', port: 9001 },
        { name: 'ergo-jr-02', robot: 'ergo-jr', port: 9002 },
        { name: 'ergo-jr-03', robot: 'ergo-jr', port: 9003 },
      ]);
    });

    it('a duplicate name, a bad robot, a port out of range or twice', async () => {
      await fails(
        await file([
          { name: 'ana', robot: 'ergo-jr' },
          { name: 'ana', robot: 'torso' },
        ]),
        /twins\.1\.name: duplicate twin name "ana" \(also twins\.0\)/,
      );
      await fails(
        await file([
          { name: 'ana', robot: 'ergo-jr' },
          { name: 'ben', robot: 'dalek' },
        ]),
        /twins\.1\.robot: twin ben: .*dalek/,
      );
      await fails(
        await file([{ name: 'ana', robot: 'ergo-jr', port: 70000 }]),
        /twin ana: port 70000 is out of range/,
      );
      await fails(
        await file([
          { name: 'ana', robot: 'ergo-jr', port: 9001 },
          { name: 'ben', robot: 'ergo-jr', port: 9001 },
        ]),
        /twin ben: port 9001 is also twin ana's/,
      );
      await fails(await file([{ name: 'a/b', robot: 'ergo-jr' }]), /"a\/b" is not a twin name/);
      await fails('0', /from 1 to 200/);
      await fails('3', /twins\.2\.port: twin ergo-jr-03: port 65536 is out of range/, 65533);
    });

    it('a port in use', async () => {
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const taken = (blocker.address() as net.AddressInfo).port;
      const room = await Classroom.create({
        twins: [
          { name: 'ana', robot: 'ergo-jr', port: 0 },
          { name: 'ben', robot: 'ergo-jr', port: taken },
        ],
        speed: 'manual',
        recordsDir: path.join(tmp, 'records-in-use'),
      });
      try {
        const err = await room.listen('127.0.0.1', 0).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(ConfigError);
        expect((err as Error).message).to.match(
          new RegExp(`twins\\.1\\.port: twin ben: cannot listen on 127\\.0\\.0\\.1:${taken}`),
        );
      } finally {
        await room.close();
        blocker.close();
      }
    });
  });

  it('records go in <records-dir>/<name>/', async () => {
    const dir = path.join(tmp, 'records-named');
    const room = await Classroom.create({
      twins: [{ name: 'ana', robot: 'ergo-jr', port: 0 }],
      speed: 'manual',
      recordsDir: dir,
    });
    try {
      ok(await post(room, 'ana', '/records/wave/record.json', {}));
      await room.advance(0.2);
      ok(await post(room, 'ana', '/records/wave/stop.json', {}));
      ok(await post(room, 'ana', '/records/wave/save.json', {}));
      const entries = await readdir(path.join(dir, 'ana'));
      expect(entries.some((e) => e.startsWith('wave'))).to.equal(true);
      expect((await stat(path.join(dir, 'ana'))).isDirectory()).to.equal(true);
    } finally {
      await room.close();
    }
  });
});

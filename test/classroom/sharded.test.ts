/**
 * A classroom in shards (`--workers`): four twins in two real worker threads at speed 1, the main port forwarding
 * each twin's REST calls and state stream to its own port, the list, resets and metrics gathered from the shards by
 * message, and a shard that dies leaving the main port and the other shard serving. Wall time is inherent here (real
 * threads stepping in real time): the tests wait for conditions with a deadline, never for a fixed time.
 */
import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import WebSocket from 'ws';
import { ShardedClassroom } from '../../src/classroom/sharded.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { type PeerClock, WorldScheduler } from '../../src/sim/scheduler.ts';
import { until } from '../helpers.ts';

const NAMES = ['ana', 'ben', 'cy', 'dee'];

const CRASHES = `export default (ctx: any, lib: any) => new (class extends lib.Primitive {
  constructor() { super(ctx, 'crashes', { frequency: 10 }); }
  protected override update() { process.exit(1); }
})();
`;

interface Listed {
  name: string;
  port: number;
  ready: boolean;
  online: boolean;
  sim_time: number;
  real_time_factor: number;
}

describe('classroom in shards: twins stepped in worker threads', function () {
  this.timeout(120000);
  let tmp: string;
  let primitivesDir: string;

  const open = async () => {
    const room = await ShardedClassroom.create({
      twins: NAMES.map((name) => ({ name, robot: 'ergo-jr', port: 0 })),
      speed: 1,
      workers: 2,
      recordsDir: path.join(tmp, `records-${Math.random().toString(36).slice(2)}`),
      primitivesDir,
      primitiveLimits: { heartbeatMs: 50, unresponsiveMs: 500, callTimeoutMs: 2000 },
    });
    try {
      await room.listen('127.0.0.1', 0);
      await room.loaded();
    } catch (err) {
      await room.close();
      throw err;
    }
    const addr = room.app.server.address() as { port: number };
    return { room, base: `http://127.0.0.1:${addr.port}` };
  };

  const json = async (res: Response) => {
    const body = await res.text();
    expect(res.status, body).to.equal(200);
    return JSON.parse(body) as Record<string, unknown>;
  };
  const post = (url: string, body?: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const list = async (base: string) =>
    (await json(await fetch(`${base}/twins/list.json`))) as {
      twins: Listed[];
      real_time_factor: number;
      short_of_cpu: boolean;
    };

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'poppy-shards-'));
    primitivesDir = path.join(tmp, 'primitives');
    await mkdir(primitivesDir);
    await writeFile(path.join(primitivesDir, 'crashes.ts'), CRASHES);
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  describe('a class of four in two shards', () => {
    let room: ShardedClassroom;
    let base: string;
    before(async () => {
      ({ room, base } = await open());
    });
    after(async () => {
      await room?.close();
    });

    it('lists every twin in the roster order, each on a port of its own, ready, the class at real time', async () => {
      expect(room.shards.map((s) => s.names)).to.deep.equal([
        ['ana', 'ben'],
        ['cy', 'dee'],
      ]);
      const listed = await until('a measured real-time factor', async () => {
        const l = await list(base);
        return l.real_time_factor > 0 ? l : undefined;
      });
      expect(listed.twins.map((t) => t.name)).to.deep.equal(NAMES);
      expect(listed.twins.every((t) => t.ready && t.online)).to.equal(true);
      const ports = listed.twins.map((t) => t.port);
      expect(new Set(ports).size).to.equal(4);
      expect(ports.every((p) => p > 0)).to.equal(true);
      // Each twin answers on its own port as on the main port.
      expect(await json(await fetch(`http://127.0.0.1:${ports[2]}/motors/list.json`))).to.deep.equal(
        await json(await fetch(`${base}/twins/cy/motors/list.json`)),
      );
      expect((await fetch(`${base}/readyz`)).status).to.equal(200);
      // The shards keep their sim times together: no twin far ahead of another (slack 0.05 s, plus the replies'
      // spread in time).
      const later = await list(base);
      const times = later.twins.map((t) => t.sim_time);
      expect(Math.max(...times) - Math.min(...times)).to.be.lessThan(0.5);
      expect(Math.min(...times)).to.be.greaterThan(0);
    });

    it('forwards GET and POST with their status, headers and body, and the web view under its prefix', async () => {
      const stiff = await json(
        await post(`${base}/twins/ben/sim/motors/compliant.json`, { compliant: false }),
      );
      expect(stiff.compliant).to.equal(false);
      const goto = await post(`${base}/twins/ben/motors/m1/goto.json`, { position: 25, duration: 0.3 });
      expect(goto.status, await goto.clone().text()).to.equal(200);
      // The base's turn (m1): free whatever the arm rests on. Within 3 degrees: an XL-320 stops anywhere within its
      // dead band of about 2.4 degrees (docs/twin.md).
      await until('ben at 25 degrees', async () => {
        const v = await json(
          await fetch(`${base}/twins/ben/motors/m1/registers/present_position/value.json`),
        );
        return Math.abs(Number(v.present_position) - 25) < 3 ? true : undefined;
      });
      // ana, in the same shard, did not move.
      const ana = await json(
        await fetch(`${base}/twins/ana/motors/m1/registers/present_position/value.json`),
      );
      expect(Math.abs(Number(ana.present_position) - 25)).to.be.greaterThan(5);
      const missing = await fetch(`${base}/twins/ben/motors/m9/registers/present_position/value.json`);
      expect(missing.status).to.equal(404);
      expect(missing.headers.get('content-type')).to.match(/application\/json/);
      expect(((await missing.json()) as { error: string }).error).to.contain('m9');
      const page = await fetch(`${base}/twins/dee/ui/`);
      const html = await page.text();
      expect(page.headers.get('content-type')).to.match(/text\/html/);
      expect(html).to.contain('<meta name="poppy-base" content="/twins/dee" />');
      const list = (await json(await fetch(`${base}/twins/list.json`))).twins as {
        name: string;
        last_request: { url: string } | null;
      }[];
      expect(list.find((t) => t.name === 'dee')!.last_request?.url, 'the twin sees its own URL').to.equal(
        '/ui/',
      );
      const unknown = await fetch(`${base}/twins/zoe/motors/list.json`);
      expect(unknown.status).to.equal(404);
      expect(await unknown.json()).to.deep.include({
        tip: 'GET /twins/list.json lists the twins of this classroom',
      });
    });

    it("streams a twin's state over a WebSocket through the main port", async () => {
      const socket = new WebSocket(`${base.replace('http', 'ws')}/twins/cy/stream/state?rate=10`);
      const messages: { type: string; present?: number[]; motors?: unknown[] }[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data)) as (typeof messages)[number]));
      try {
        await until('two state frames', async () =>
          messages.filter((m) => m.type === 'state').length >= 2 ? true : undefined,
        );
        expect(messages[0]!.type).to.equal('hello');
        expect(messages[0]!.motors).to.have.length(6);
        expect(messages.find((m) => m.type === 'state')!.present).to.have.length(6);
      } finally {
        socket.close();
      }
    });

    it('resets one twin and every twin by message to its shard', async () => {
      const before = (await list(base)).twins.find((t) => t.name === 'dee')!.sim_time;
      const one = await json(await post(`${base}/twins/dee/reset.json`));
      expect(one.name).to.equal('dee');
      expect(one.sim_time).to.be.a('number').and.to.be.at.least(before);
      const all = (await json(await post(`${base}/twins/reset.json`))).reset as { name: string }[];
      expect(all.map((r) => r.name)).to.deep.equal(NAMES);
      expect((await post(`${base}/twins/zoe/reset.json`)).status).to.equal(404);
    });

    it("merges the shards' metrics: every twin under its label, the class's gauges once", async () => {
      for (let i = 0; i < 3; i++)
        await json(await fetch(`${base}/twins/cy/motors/m1/registers/present_position/value.json`));
      const res = await fetch(`${base}/metrics`);
      expect(res.status).to.equal(200);
      const families = new Map(parsePrometheusTextFormat(await res.text()).map((f) => [f.name, f]));
      const requests = families.get('poppy_http_requests_total')!;
      const twins = new Set(requests.metrics.map((m) => m.labels?.twin));
      expect([...twins].sort()).to.include.members(['ben', 'cy', 'dee']);
      const cyReads = requests.metrics.find(
        (m) => m.labels?.twin === 'cy' && m.labels.route === '/motors/:motor/registers/:register/value.json',
      );
      expect(Number(cyReads?.value)).to.be.at.least(3);
      const rtfSteps = families.get('poppy_sim_physics_steps_total')!.metrics;
      expect(rtfSteps.map((m) => m.labels?.twin).sort()).to.deep.equal([...NAMES].sort());
      const twinsGauge = families.get('poppy_classroom_twins')!.metrics;
      expect(twinsGauge.find((m) => m.labels?.ready === 'true')?.value).to.equal('4');
      expect(twinsGauge.find((m) => m.labels?.ready === 'false')?.value).to.equal('0');
      // The slowest shard's factor (min), not the sum of two shards' (about 2).
      const rtf = Number(families.get('poppy_classroom_real_time_factor')!.metrics[0]!.value);
      expect(rtf).to.be.greaterThan(0.3).and.lessThan(1.5);
      expect(families.has('process_resident_memory_bytes')).to.equal(true);
    });

    it("a crashing custom primitive on one twin leaves the others' answering and theirs unstarted", async () => {
      await json(await fetch(`${base}/twins/ana/primitives/crashes/start.json`));
      const status = await until(
        'the primitive to crash',
        async () => {
          const s = await json(await fetch(`${base}/twins/ana/primitives/crashes/status.json`));
          return s.last_error ? s : undefined;
        },
        20000,
      );
      expect(status.running).to.equal(false);
      expect(String(status.last_error)).to.match(/exit/);
      for (const name of ['ben', 'cy', 'dee']) {
        const s = await json(await fetch(`${base}/twins/${name}/primitives/crashes/status.json`));
        expect(s.last_error, name).to.equal(null);
      }
      const after = await list(base);
      expect(after.twins.every((t) => t.online && t.ready)).to.equal(true);
      // ana's own shard goes on stepping.
      const t0 = after.twins.find((t) => t.name === 'ana')!.sim_time;
      await until('ana stepping on', async () =>
        (await list(base)).twins.find((t) => t.name === 'ana')!.sim_time > t0 + 0.1 ? true : undefined,
      );
    });
  });

  it("a shard whose worker dies leaves the main port and the other shard's twins serving", async () => {
    const { room, base } = await open();
    try {
      const dying = room.shards[0]!;
      const ports = (await list(base)).twins.map((t) => t.port);
      await dying.worker.terminate();
      await until('the shard seen dead', async () => (dying.dead ? true : undefined));
      expect((await fetch(`${base}/healthz`)).status).to.equal(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).to.equal(503);
      expect(await ready.text()).to.contain('ana');
      const listed = await list(base);
      expect(listed.twins.map((t) => [t.name, t.online, t.ready])).to.deep.equal([
        ['ana', false, false],
        ['ben', false, false],
        ['cy', true, true],
        ['dee', true, true],
      ]);
      const offline = await fetch(`${base}/twins/ana/motors/list.json`);
      expect(offline.status).to.equal(503);
      expect(((await offline.json()) as { error: string }).error).to.contain('offline');
      expect((await post(`${base}/twins/ben/reset.json`)).status).to.equal(503);
      // The other shard answers on the main port and its own, and keeps stepping.
      expect((await json(await fetch(`${base}/twins/dee/motors/list.json`))).motors).to.have.length(6);
      expect(
        (await json(await fetch(`http://127.0.0.1:${ports[2]}/motors/list.json`))).motors,
      ).to.have.length(6);
      const t0 = listed.twins.find((t) => t.name === 'cy')!.sim_time;
      await until('cy stepping on', async () =>
        (await list(base)).twins.find((t) => t.name === 'cy')!.sim_time > t0 + 0.3 ? true : undefined,
      );
      const reset = (await json(await post(`${base}/twins/reset.json`))).reset as { name: string }[];
      expect(reset.map((r) => r.name)).to.deep.equal(['cy', 'dee']);
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).to.equal(200);
      expect(await metrics.text()).to.contain('poppy_classroom_twins{ready="false"} 2');
      // The dead shard's ports are closed with its thread.
      const refused = await fetch(`http://127.0.0.1:${ports[0]}/motors/list.json`).then(
        () => 'answered',
        () => 'refused',
      );
      expect(refused).to.equal('refused');
    } finally {
      await room.close();
    }
    expect(
      room.shards.every((s) => s.dead !== undefined),
      'every worker ended',
    ).to.equal(true);
  });

  it('closing ends every worker and the streams through the main port, within a bound', async () => {
    const { room, base } = await open();
    const socket = new WebSocket(`${base.replace('http', 'ws')}/twins/ben/stream/state?rate=10`);
    let frames = 0;
    let closed = false;
    socket.on('message', () => frames++);
    socket.on('close', () => (closed = true));
    socket.on('error', () => {});
    await until('a frame', async () => (frames > 0 ? true : undefined));
    const t0 = performance.now();
    await room.close();
    expect(performance.now() - t0).to.be.lessThan(3000);
    expect(room.shards.every((s) => s.dead !== undefined)).to.equal(true);
    await until('the stream closed', async () => (closed ? true : undefined));
    await room.close(); // idempotent
  });

  it('a port in use stops start-up naming the twin in the roster', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    const room = await ShardedClassroom.create({
      twins: [
        { name: 'ana', robot: 'ergo-jr', port: 0 },
        { name: 'ben', robot: 'ergo-jr', port: taken },
      ],
      speed: 1,
      workers: 2,
      recordsDir: path.join(tmp, 'records-in-use'),
    });
    try {
      const err = await room.listen('127.0.0.1', 0).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(ConfigError);
      expect((err as Error).message).to.match(
        new RegExp(`^twins\\.1\\.port: twin ben: cannot listen on 127\\.0\\.0\\.1:${taken}`),
      );
    } finally {
      await room.close();
      blocker.close();
    }
  });
});

describe('WorldScheduler with peers (a sharded classroom keeps its shards together)', function () {
  this.timeout(20000);

  it('steps no further than the slowest peer plus the slack, and goes on once the peer is gone', async () => {
    const world = {
      t: 0,
      dt: 0.01,
      now: () => world.t,
      step: () => ((world.t += world.dt), false),
      fire: () => {},
    };
    const times = new Float64Array(new SharedArrayBuffer(16)).fill(NaN);
    const peers: PeerClock = { times, index: 0, slack: 0.05 };
    times[1] = 0.2; // a peer stuck at 0.2 s
    const scheduler = new WorldScheduler({ speed: 1, peers });
    scheduler.add(world);
    scheduler.start();
    try {
      // Held back, it falls behind its own target and gives up the lost time, as a shard short of CPU does.
      await until('the scheduler held back', async () => (scheduler.droppedSeconds() > 0 ? true : undefined));
      expect(scheduler.now()).to.be.at.most(0.25 + 1e-9);
      expect(times[0]).to.equal(scheduler.now());
      times[1] = NaN; // the peer is gone
      await until('the scheduler going on', async () => (scheduler.now() > 0.5 ? true : undefined));
    } finally {
      await scheduler.stop();
    }
    expect(Number.isNaN(times[0]), 'a stopped scheduler holds no one back').to.equal(true);
  });
});

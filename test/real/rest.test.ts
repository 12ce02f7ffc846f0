/**
 * The REST server on --backend=real, over the bus emulator on a real pseudo-terminal, checked from outside
 * over HTTP: the Ergo Jr (XL-320, protocol 2.0) and the Torso (MX-28 and AX-12, protocol 1.0). The emulator runs the
 * twin's physics at real time behind the servos, so gotos move and a record taught by hand replays; its faults
 * (dropped and corrupt replies, a servo gone, error bits) are switched on and off while the server runs.
 * Wall time is inherent (a serial bus in real time): waits are bounded polls.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import type { Faults } from '../../src/emulator/bus.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { degToPosition, modelSpec } from '../../src/dynamixel/registers.ts';
import type { Logger } from '../../src/core/logger.ts';
import { ERGO_JR, TORSO } from '../http/facts.ts';

interface Rig {
  readonly emulator: RunningEmulator;
  readonly server: RobotServer;
  readonly url: string;
  readonly logs: string[];
  get(p: string): Promise<{ status: number; body: Record<string, unknown> }>;
  post(p: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** A register of the emulated servo, raw. */
  servo(id: number, reg: 'goal_position' | 'torque_enable' | 'angle_limit'): Promise<unknown>;
  close(): Promise<void>;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-real-rest-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

async function rig(
  robot: string,
  opts: { faults?: Partial<Faults>; allowMissing?: boolean; emulator?: RunningEmulator } = {},
): Promise<Rig> {
  const emulator = opts.emulator ?? (await startEmulator({ robot, faults: opts.faults }));
  const logs: string[] = [];
  const logger: Logger = {
    info: (m) => logs.push(m),
    warn: (m) => logs.push(m),
    error: (m) => logs.push(m),
  };
  let server: RobotServer;
  try {
    server = await createRobotServer({
      backend: 'real',
      robot,
      real: { serial: await emulator.addPort(), allowMissing: opts.allowMissing },
      recordsDir: path.join(tmp, `${robot}-${Date.now()}`),
      logger,
    });
  } catch (err) {
    if (!opts.emulator) await emulator.close();
    throw err;
  }
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = server.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return {
    emulator,
    server,
    url,
    logs,
    get: (p) => call('GET', p),
    post: (p, body) => call('POST', p, body),
    servo: async (id, reg) => (await emulator.sim.bus.read([id], reg)).get(id),
    async close() {
      await server.close();
      if (!opts.emulator) await emulator.close();
    },
  };
}

const value = (body: Record<string, unknown>, reg: string) => body[reg] as number;

for (const fact of [ERGO_JR, TORSO]) {
  const robot = fact.name;
  // A light motor of each robot: the Ergo Jr's base turn, the Torso's head.
  const motor = robot === 'ergo-jr' ? 'm1' : 'head_z';
  let id: number;

  describe(`REST on --backend=real over the bus emulator (${robot})`, function () {
    this.timeout(30000);
    let r: Rig;
    let sim: RobotServer;
    before(async function () {
      this.timeout(30000);
      r = await rig(robot);
      id = r.server.config.motors.find((m) => m.name === motor)!.id;
      sim = await createRobotServer({
        backend: 'sim',
        robot,
        speed: 'manual',
        recordsDir: path.join(tmp, 'sim'),
      });
    });
    after(async () => {
      await r?.close();
      await sim?.close();
    });

    it('lists the motors, their registers and aliases exactly as the sim twin does', async () => {
      const simGet = async (p: string) => JSON.parse((await sim.app.inject({ method: 'GET', url: p })).body);
      for (const p of ['/motors/list.json', '/motors/alias/list.json'])
        expect((await r.get(p)).body, p).to.deep.equal(await simGet(p));
      const motors = (await r.get('/motors/list.json')).body.motors as string[];
      for (const m of motors)
        expect((await r.get(`/motors/${m}/registers/list.json`)).body, m).to.deep.equal(
          await simGet(`/motors/${m}/registers/list.json`),
        );
    });

    it("compliant false turns the servo's torque on; a goto with wait reaches its goal; compliant true turns it off", async () => {
      expect((await r.post(`/motors/${motor}/registers/compliant/value.json`, false)).status).to.equal(200);
      await until('torque on', async () => ((await r.servo(id, 'torque_enable')) === 1 ? true : undefined));
      const t0 = performance.now();
      const goto = await r.post(`/motors/${motor}/goto.json`, { position: 20, duration: 1, wait: true });
      expect(goto.status).to.equal(200);
      expect(performance.now() - t0).to.be.at.least(950);
      const at = await until('the motor at its goal', async () => {
        const p = value(
          (await r.get(`/motors/${motor}/registers/present_position/value.json`)).body,
          'present_position',
        );
        return Math.abs(p - 20) <= fact.gotoTolerance ? p : undefined;
      });
      expect(at).to.be.closeTo(20, fact.gotoTolerance);
      expect((await r.post(`/motors/${motor}/registers/compliant/value.json`, true)).status).to.equal(200);
      await until('torque off', async () => ((await r.servo(id, 'torque_enable')) === 0 ? true : undefined));
    });

    it("puts the configured angle limits in the servo's limit registers, and clamps a goal past them", async () => {
      const cfg = r.server.config.motors.find((m) => m.name === motor)!;
      const spec = modelSpec(cfg.model);
      expect(await r.servo(id, 'angle_limit')).to.deep.equal([
        degToPosition(spec, cfg.angleLimit[0]),
        degToPosition(spec, cfg.angleLimit[1]),
      ]);
      const upper = value(
        (await r.get(`/motors/${motor}/registers/upper_limit/value.json`)).body,
        'upper_limit',
      );
      expect(
        (await r.post(`/motors/${motor}/registers/goal_position/value.json`, upper + 50)).status,
      ).to.equal(200);
      expect(
        value((await r.get(`/motors/${motor}/registers/goal_position/value.json`)).body, 'goal_position'),
      ).to.equal(upper);
    });

    it('a move taught by hand on the emulated robot is recorded through the bus and replays', async () => {
      const hand = r.emulator.sim.simulation!.hand;
      const start = value(
        (await r.get(`/motors/${motor}/registers/present_position/value.json`)).body,
        'present_position',
      );
      expect((await r.post(`/motors/${motor}/registers/compliant/value.json`, true)).status).to.equal(200);
      expect((await r.post('/records/taught/record.json', { motors: [motor] })).status).to.equal(200);
      // The hand turns the joint 30 degrees (raw frame = user frame for these motors' orientation and offset).
      const cfg = r.server.config.motors.find((m) => m.name === motor)!;
      const sign = cfg.orientation === 'indirect' ? -1 : 1;
      await hand.drag(id, sign * (start + 30) - cfg.offset * sign, 1.5);
      hand.release();
      expect((await r.post('/records/taught/save.json', {})).status).to.equal(200);
      const move = (await r.get('/records/taught/value.json')).body.taught as Record<
        string,
        Record<string, [number, number]>
      >;
      const times = Object.keys(move).sort((a, b) => Number(a) - Number(b));
      const first = move[times[0]!]![motor]![0];
      const last = move[times.at(-1)!]![motor]![0];
      expect(times.length).to.be.greaterThan(40); // about 1.5 s at 50 Hz
      expect(last - first).to.be.closeTo(30, 8);
      // Back to the start, stiff, then the replay takes the motor where the hand left it.
      expect((await r.post(`/motors/${motor}/registers/compliant/value.json`, false)).status).to.equal(200);
      // A refusal names its body and the server's last log lines: a rare 503 here on CI was not explained.
      const answered = (what: string, res: { status: number; body: unknown }) =>
        expect(
          res.status,
          `${what}: ${JSON.stringify(res.body)}; log: ${r.logs.slice(-5).join(' | ')}`,
        ).to.equal(200);
      answered(
        'goto',
        await r.post(`/motors/${motor}/goto.json`, { position: first, duration: 0.5, wait: true }),
      );
      answered('play', await r.post('/records/taught/play.json', { speed: 1 }));
      const end = await until(
        'the replay to end at the taught pose',
        async () => {
          const p = value(
            (await r.get(`/motors/${motor}/registers/present_position/value.json`)).body,
            'present_position',
          );
          return Math.abs(p - last) <= fact.gotoTolerance + 1 ? p : undefined;
        },
        8000,
      );
      expect(end).to.be.closeTo(last, fact.gotoTolerance + 1);
      await r.post(`/motors/${motor}/registers/compliant/value.json`, true);
    });
  });
}

describe('the real backend under bus faults (Ergo Jr over the emulator)', function () {
  this.timeout(40000);

  it('with 5 % of replies dropped and 5 % corrupt: the loop runs, REST answers, errors are counted per motor, no goal is lost', async () => {
    const r = await rig('ergo-jr');
    try {
      // m2 stiff: a compliant motor's goal is kept in the API and not sent (its torque is off).
      expect((await r.post('/motors/m2/registers/compliant/value.json', false)).status).to.equal(200);
      const faults = r.emulator.bus.faults;
      faults.dropRate = 0.05;
      faults.corruptRate = 0.05;
      const ticks0 = r.server.robot.ticks;
      for (let i = 0; i < 40; i++) {
        const read = await r.get('/motors/registers/present_position/list.json');
        expect(read.status).to.equal(200);
        expect(
          (await r.post('/motors/m2/registers/goal_position/value.json', -90 + (i % 10))).status,
        ).to.equal(200);
        await new Promise((res) => setTimeout(res, 25));
      }
      expect(r.server.robot.ticks - ticks0, 'control ticks during about 1.5 s of faults').to.be.greaterThan(
        20,
      );
      const health = (await r.get('/bus/health.json')).body as {
        motors: { name: string; timeouts: number; corrupt: number }[];
      };
      const hit = health.motors.filter((m) => m.timeouts + m.corrupt > 0);
      expect(hit.length, 'motors with counted errors').to.be.at.least(4);
      // The last goal written during the faults: on the servo within a few control cycles once they end (a lost one
      // never comes: the wait fails). The sent write lands in one or two; the emulator shares this process's event
      // loop with the server and mocha, so on a busy CI machine its bytes can be read a cycle late (3 seen once).
      const goal = -90 + (39 % 10);
      faults.dropRate = 0;
      faults.corruptRate = 0;
      const ended = r.server.robot.ticks;
      const raw = degToPosition(modelSpec('XL-320'), -goal); // m2 is indirect, offset 0
      await until(
        'the goal on the servo',
        async () => ((await r.servo(2, 'goal_position')) === raw ? true : undefined),
        2000,
        1,
      );
      expect(r.server.robot.ticks - ended, 'control cycles until the goal is on the servo').to.be.at.most(4);
    } finally {
      await r.close();
    }
  });

  it('a servo missing at start-up stops it with one line naming it; with allowMissing the others work and it answers 503', async () => {
    const emulator = await startEmulator({ robot: 'ergo-jr', faults: { missing: new Set([3]) } });
    try {
      let err: unknown;
      await rig('ergo-jr', { emulator }).catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(ConfigError);
      expect((err as Error).message).to.match(/no answer from 1 of 6 motors .*: m3 \(id 3\)/);
      expect((err as Error).message).to.not.include('\n');
      const r = await rig('ergo-jr', { emulator, allowMissing: true });
      try {
        expect(r.logs.join('\n')).to.match(/m3 \(id 3\).*serving the others/);
        const m3 = await r.get('/motors/m3/registers/present_position/value.json');
        expect(m3.status).to.equal(503);
        expect(m3.body).to.include.keys('error', 'tip');
        expect((await r.get('/motors/m1/registers/present_position/value.json')).status).to.equal(200);
      } finally {
        await r.close();
      }
    } finally {
      await emulator.close();
    }
  });

  it('a servo that disappears mid-run answers 503 with a log line, the others keep working, and it comes back', async () => {
    const r = await rig('ergo-jr');
    try {
      r.emulator.bus.faults.missing.add(4);
      const gone = await until('m4 to answer 503', async () => {
        const res = await r.get('/motors/m4/registers/present_position/value.json');
        return res.status === 503 ? res : undefined;
      });
      expect(gone.body.error).to.be.a('string');
      expect(r.logs.join('\n')).to.match(/motor m4 \(id 4\) stopped answering/);
      expect((await r.get('/motors/m5/registers/present_position/value.json')).status).to.equal(200);
      const health = (await r.get('/bus/health.json')).body as {
        motors: { name: string; online: boolean }[];
      };
      expect(health.motors.find((m) => m.name === 'm4')!.online).to.equal(false);
      r.emulator.bus.faults.missing.delete(4);
      await until('m4 to answer again', async () =>
        (await r.get('/motors/m4/registers/present_position/value.json')).status === 200 ? true : undefined,
      );
    } finally {
      await r.close();
    }
  });

  it('servo error bits (a hardware alert) are counted as status errors and shown on /bus/health.json', async () => {
    const r = await rig('ergo-jr');
    try {
      r.emulator.bus.faults.errorBits.set(2, 0x80);
      const m2 = await until('status errors on m2', async () => {
        const health = (await r.get('/bus/health.json')).body as {
          motors: { name: string; status_errors: number; last_error: string | null }[];
        };
        const m = health.motors.find((x) => x.name === 'm2')!;
        return m.status_errors > 0 ? m : undefined;
      });
      expect(m2.last_error).to.match(/alert/);
      expect((await r.get('/motors/m1/registers/present_position/value.json')).status).to.equal(200);
    } finally {
      await r.close();
    }
  });
});

/**
 * The shadow twin's physics in a worker thread of its own (--shadow-thread=worker, what `auto` chooses on a Raspberry
 * Pi's four cores), over the bus emulator on a real pseudo-terminal, from outside over HTTP: the same comparison as on
 * the server's thread (the twin follows the robot, everyday gotos raise nothing, an offset is raised and cleared), the
 * guard's prediction from the worker's registers, the cycle log written, and a worker that dies is said in the log
 * and started again with the servos' commands while the server goes on answering; a stuck one does not stop a close.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { readCycleLog } from '../../src/calibration/from-log.ts';
import { degToPosition, modelSpec, positionToDeg } from '../../src/dynamixel/registers.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import {
  ThreadTwinEngine,
  chooseTwinThread,
  measureStepCostInWorker,
  twinThreadFor,
} from '../../src/shadow/twin-engine-thread.ts';
import {
  EVERYDAY_GOTOS,
  type ShadowEventAnswer,
  type ShadowRig,
  type ShadowStatusAnswer,
  expectShadowEvent,
  startShadowRig,
} from './emulator-process.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-thread-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const MOTORS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];

describe('--shadow-thread: where the twin runs', () => {
  it("auto takes a worker from 3 cores, the server's thread below; the flag's choice is kept; each said once", () => {
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    expect(chooseTwinThread('auto', log, 4)).to.equal('worker');
    expect(chooseTwinThread('auto', log, 2)).to.equal('main');
    expect(chooseTwinThread('worker', log, 2)).to.equal('worker');
    expect(chooseTwinThread('main', log, 4)).to.equal('main');
    expect(lines).to.deep.equal([
      'shadow twin: physics in a worker thread of its own (4 cores here)',
      "shadow twin: physics in the server's thread (2 cores here)",
      'shadow twin: physics in a worker thread of its own (--shadow-thread)',
      "shadow twin: physics in the server's thread (--shadow-thread)",
    ]);
    expect(chooseTwinThread(undefined, log, 4), 'a server made in code').to.equal('main');
    expect(lines).to.have.length(4);
    expect(['auto', 'main', 'worker', undefined].map((f) => twinThreadFor(f as 'auto', 4))).to.deep.equal([
      'worker',
      'main',
      'worker',
      'main',
    ]);
  });

  it('a twin bound for a worker has its step timed in a worker of its own, ended after; a failing one rejects', async function () {
    this.timeout(60000);
    const config = await loadRobotConfig('ergo-jr');
    const urdf = await loadUrdf(config.urdfPath);
    const cost = await measureStepCostInWorker({ config, urdf });
    expect(cost).to.be.greaterThan(0).and.lessThan(20);
    const broken = { ...urdf, joints: urdf.joints.map((j) => ({ ...j, child: 'nowhere' })) };
    let err: unknown;
    await measureStepCostInWorker({ config, urdf: broken }).catch((e: unknown) => (err = e));
    expect(err, 'a world that cannot be built').to.be.instanceOf(Error);
  });
});

/** A robot's twin engine in a worker thread at a 2 ms step, its models the robot's. */
async function threadEngine(robot: string) {
  const config = await loadRobotConfig(robot);
  const models = new Map(config.motors.map((m) => [m.id, modelSpec(m.model)]));
  const engine = new ThreadTwinEngine({
    config,
    urdf: await loadUrdf(config.urdfPath),
    models,
    stepS: 0.002,
  });
  return { config, models, engine };
}

describe("the twin in a worker thread says which joints its contacts press (the comparator's touching)", function () {
  this.timeout(60000);

  it("the Torso's forearm pressed on the table: the joints carrying it, none while it only rests there", async () => {
    const { config, models, engine } = await threadEngine('torso');
    const idle = { writes: [], dt: 0.02, place: false, epoch: 0 };
    const run = async (cycles: number) => {
      let out = await engine.cycle(idle);
      for (let i = 1; i < cycles; i++) out = await engine.cycle(idle);
      return out;
    };
    try {
      await engine.open(new Map());
      const ids = config.motors.map((m) => m.id);
      const pos = await engine.read(ids, 'present_position');
      await engine.cycle({
        ...idle,
        writes: [
          ['torque_enable', new Map(ids.map((id) => [id, 1]))],
          ['goal_position', pos],
        ],
      });
      expect((await run(25)).pressed, 'standing').to.deep.equal([]);
      const shoulder = config.motors.find((m) => m.name === 'l_shoulder_y')!;
      const spec = models.get(shoulder.id)!;
      const swing = async (by: number) => {
        const goal = degToPosition(spec, positionToDeg(spec, pos.get(shoulder.id) as number) + by);
        await engine.cycle({ ...idle, writes: [['goal_position', new Map([[shoulder.id, goal]])]] });
        return run(100);
      };
      // Swung 40 degrees forward the forearm lies on the table, every servo under the load band: not read.
      const lying = await swing(40);
      expect(lying.pressed).to.deep.equal([]);
      expect(lying.near, 'no joint asked about').to.deep.equal([]);
      // Asked about (the comparison found them beyond their band): the arm on the table is within the gap, the other
      // hanging at its side is not.
      const byName = (name: string) => config.motors.find((m) => m.name === name)!.id;
      const asked = await engine.cycle({
        ...idle,
        lookNear: [byName('l_shoulder_y'), byName('r_shoulder_y')],
      });
      expect(asked.near).to.deep.equal([byName('l_shoulder_y')]);
      // 55 degrees: pressed on it, the elbow and shoulder loaded.
      const names = (await swing(55)).pressed.map((id) => config.motors.find((m) => m.id === id)!.name);
      expect(names.sort()).to.deep.equal(
        ['abs_z', 'bust_y', 'bust_x', 'l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y'].sort(),
      );
    } finally {
      await engine.close();
    }
  });
});

describe('the twin in a worker thread, stuck', function () {
  this.timeout(20000);

  it('a cycle that never ends (a day of robot time) does not keep the close waiting: it rejects, the close ends', async () => {
    const { engine } = await threadEngine('ergo-jr');
    await engine.open(new Map());
    const stuck = engine.cycle({ writes: [], dt: 86400, place: false, epoch: 0 });
    const outcome = stuck.then(
      () => 'answered',
      (err: Error) => err.message,
    );
    await new Promise((r) => setTimeout(r, 200));
    const started = performance.now();
    await engine.close(500);
    const took = performance.now() - started;
    expect(took, 'the close').to.be.below(1500);
    expect(await outcome).to.match(/closed|exited/);
    await engine.cycle({ writes: [], dt: 0.02, place: false, epoch: 0 }).then(
      () => expect.fail('a closed engine answered'),
      (err: Error) => expect(err.message).to.match(/closed|exited/),
    );
  });
});

describe('shadow mode with the twin in a worker thread (Ergo Jr on the bus emulator)', function () {
  this.timeout(90000);
  let rig: ShadowRig;
  let closed = false;
  const shadowLog = path.join(tmp, 'cycles.jsonl');
  const call = (method: string, p: string, body?: unknown) => rig.call(method, p, body);
  const status = async () => (await call('GET', '/shadow/status.json')).body as unknown as ShadowStatusAnswer;

  before(async function () {
    this.timeout(60000);
    rig = await startShadowRig({
      thread: 'worker',
      guard: true,
      infoLogs: true,
      faults: 'drop=0.05',
      shadowLog,
      recordsDir: path.join(tmp, 'records'),
    });
    for (const m of MOTORS)
      expect((await call('POST', `/motors/${m}/registers/compliant/value.json`, false)).status).to.equal(200);
    const upright = { motors: MOTORS, positions: MOTORS.map(() => 0), duration: 1, wait: true };
    expect((await call('POST', '/motors/goto.json?force=true', upright)).status).to.equal(200);
  });
  after(() => (closed ? undefined : rig?.close()));

  it('runs in a worker: the twin follows the robot, and its world is out of the server thread’s reach', async () => {
    expect(rig.server.shadow!.engine).to.be.instanceOf(ThreadTwinEngine);
    expect(() => rig.server.shadow!.sim).to.throw(/worker thread/);
    const s = await until('the robot at rest', async () => {
      const now = await status();
      return now.motors.every((m) => Math.abs(m.real?.speed ?? 99) < 2) ? now : undefined;
    });
    for (const m of s.motors) {
      expect(m.twin!.position, m.motor).to.be.closeTo(m.real!.position, 3);
      expect(m.state, m.motor).to.equal('agree');
    }
    // The twin's clock follows the robot's: it ran the cycles since the start, in the worker.
    expect(rig.server.shadow!.time).to.be.above(1);
  });

  it('raises no event through everyday gotos, then an offset: raised and cleared', async () => {
    for (const [motor, position, duration] of EVERYDAY_GOTOS) {
      const res = await call('POST', `/motors/${motor}/goto.json`, { position, duration, wait: true });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    await new Promise((r) => setTimeout(r, 300));
    const events = (await call('GET', '/shadow/events.json')).body.events as ShadowEventAnswer[];
    expect(events, JSON.stringify(events)).to.deep.equal([]);
    await expectShadowEvent(rig, {
      motor: 'm4',
      kind: 'offset',
      on: 'offset=4:10',
      off: 'offset=4:off',
      moving: EVERYDAY_GOTOS,
    });
  });

  it("the guard predicts from the worker's registers: an IK goto into the table is refused, nothing moves", async () => {
    const res = await call('POST', '/ik/chain/goto.json', { xyz: '0,-0.2,-0.05', duration: 2, wait: false });
    expect(res.status, JSON.stringify(res.body)).to.equal(409);
    expect(res.body.error, JSON.stringify(res.body)).to.match(/tip touching table|table touching tip/);
    const ok = await call('POST', '/motors/m1/goto.json', { position: 20, duration: 0.5, wait: true });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
  });

  it('a worker that dies is said and started again: the twin comes back on the robot, the server answers on', async () => {
    const shadow = rig.server.shadow!;
    const engine = shadow.engine as ThreadTwinEngine;
    const t0 = (await status()).time;
    await engine.thread.terminate();
    await until('the loss in the log', async () =>
      rig.logs.some((l) => l.includes("the shadow twin's thread exited")) ? true : undefined,
    );
    expect((await call('GET', '/motors/m1/registers/present_position/value.json')).status).to.equal(200);
    await until(
      'the twin running again',
      // The new world's clock starts again at 0.
      async () =>
        rig.logs.some((l) => l.includes("the twin's thread runs again")) && shadow.time > 0.5
          ? true
          : undefined,
      20000,
    );
    expect(rig.logs.filter((l) => l.includes("the shadow twin's thread exited"))).to.have.length(1);
    expect(shadow.engine).to.be.instanceOf(ThreadTwinEngine);
    // The new world holds the servos' commands: a goto is followed, and nothing is raised.
    const ok = await call('POST', '/motors/m1/goto.json', { position: 0, duration: 0.5, wait: true });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    await new Promise((r) => setTimeout(r, 500));
    const s = await status();
    // Within the comparison's bands: the new world has not the old one's history (a held joint's I term is set from
    // the load its servo reports), so it may stand a little apart, never beyond.
    for (const m of s.motors) {
      expect(Math.abs(m.twin!.position - m.real!.position), m.motor).to.be.at.most(m.band);
      expect(m.state, m.motor).to.equal('agree');
    }
    const events = (await call('GET', '/shadow/events.json')).body.events as ShadowEventAnswer[];
    expect(events.filter((e) => e.since > t0)).to.deep.equal([]);
    await rig.close();
    closed = true;
    const log = await readCycleLog(shadowLog, await loadRobotConfig('ergo-jr'));
    expect(log.t.length, 'the cycles of both workers').to.be.above(150);
    expect(log.motors.m1!.at(-1)!.goal, "the last goto's goal, raw").to.be.closeTo(0, 1);
  });
});

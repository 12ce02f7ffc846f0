/**
 * Shadow mode over the bus emulator on a real pseudo-terminal, checked from outside over HTTP: each fault of
 * the physical world put on the emulated servos (block, weak, push, offset, a servo gone) raises its event with the
 * right motor and kind within 1 s, set while the other stiff motors run everyday gotos and the emulator's hand moves
 * the limp ones (m3, m6: followed, not judged), and clears within 1 s of the fault's end. Wall time is inherent (a
 * serial bus in real time): the times are those the server logged the event and its clear. Normal moves raise nothing
 * (the everyday gotos; `npm run bench -- shadow-soak` runs them for long).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';
import {
  EVERYDAY_GOTOS,
  EmulatorProcess,
  type ShadowEventAnswer,
  type ShadowRig,
  type ShadowStatusAnswer,
  expectShadowEvent,
  keepHanding,
  startShadowRig,
} from './emulator-process.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-'));
/**
 * Limp as a user may leave them, moved by the emulator's hand or left to fall (raw degrees; m3 only away from the
 * table: a hand pressing the forearm into it pushes the whole arm, a push the twin rightly reports).
 */
const LIMP = ['m3', 'm6'];
const HAND = ['hand=3@40:1.5+6@30:1', 'hand=3@10:1.2+6@-30:1.4', 'hand=6@0:1'];
const MOVING = EVERYDAY_GOTOS.filter(([m]) => !LIMP.includes(m));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('shadow mode beside the Ergo Jr on the bus emulator', function () {
  this.timeout(60000);
  let rig: ShadowRig;
  const call = (method: string, p: string, body?: unknown) => rig.call(method, p, body);
  const status = async () => (await call('GET', '/shadow/status.json')).body as unknown as ShadowStatusAnswer;
  const goto = (motor: string, position: number, duration: number, wait = false) =>
    call('POST', `/motors/${motor}/goto.json`, { position, duration, wait });
  const present = async (motor: string) =>
    (await call('GET', `/motors/${motor}/registers/present_position/value.json`)).body
      .present_position as number;

  before(async function () {
    this.timeout(60000);
    rig = await startShadowRig({ faults: 'drop=0.05', recordsDir: path.join(tmp, 'records') });
    for (const m of ['m1', 'm2', 'm4', 'm5'])
      expect((await call('POST', `/motors/${m}/registers/compliant/value.json`, false)).status).to.equal(200);
    await goto('m2', -60, 1, true);
  });
  after(() => rig?.close());

  it("answers its status: per motor the real and twin readings in the user's frame, the error and the band", async () => {
    // At rest: the limp m3 and m6 fall after the start's goto, and m2 sags under them.
    const s = await until('the robot at rest', async () => {
      const now = await status();
      return now.motors.every((m) => Math.abs(m.real?.speed ?? 99) < 2) ? now : undefined;
    });
    expect(s.motors.map((m) => m.motor)).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    for (const m of s.motors) {
      expect(m.error, m.motor).to.be.a('number');
      expect(m.band, m.motor).to.be.at.least(3);
      // The REST motor routes' degrees: m2 (indirect) at -60 there is at -60 here, not 60.
      expect(m.real!.position, m.motor).to.be.closeTo(await present(m.motor), 1);
      if (LIMP.includes(m.motor)) expect(m.state, m.motor).to.equal('compliant');
      else {
        // Where the gearbox can hold it still under the links' weight: the load only widens it (decision 0088).
        const [low, high] = m.restSpan!;
        expect(high - low, m.motor).to.be.at.least(2 * m.restBand);
      }
    }
    expect(s.motors[1]!.real!.position).to.be.closeTo(-60, 10);
    expect(s.motors[1]!.twin!.position).to.be.closeTo(-60, 10);
    expect((await call('GET', '/shadow/events.json?since=abc')).status).to.equal(400);
    // The live state carries it too, per motor in the description's order, the twin in user degrees (the ghost).
    const state = (await call('GET', '/stream/state.json')).body as {
      present: number[];
      shadow: { twin: number[]; error: number[]; state: string[]; events: unknown[] };
    };
    expect(state.shadow.state).to.have.length(6);
    state.shadow.twin.forEach((deg, i) =>
      expect(Math.abs(deg - state.present[i]!), `m${i + 1}`).to.be.below(10),
    );
    expect(state.shadow.events).to.be.an('array');
  });

  it('raises no event through the start, making four motors stiff, and everyday gotos while a hand moves the limp two', async function () {
    this.timeout(60000);
    const hands = keepHanding(rig, HAND, 1500);
    try {
      for (const [motor, position, duration] of MOVING)
        expect((await goto(motor, position, duration, true)).status, motor).to.equal(200);
    } finally {
      await hands.stop();
    }
    await new Promise((r) => setTimeout(r, 300));
    const events = (await call('GET', '/shadow/events.json')).body.events as ShadowEventAnswer[];
    expect(events, JSON.stringify(events)).to.deep.equal([]);
    const lines = rig.logs.filter((l) => l.startsWith('shadow:'));
    expect(lines, lines.join('\n')).to.deep.equal([]);
    await goto('m1', 0, 0.5, true);
  });

  const expectEvent = (motor: string, kind: string, on: string, off: string) =>
    expectShadowEvent(rig, { motor, kind, on, off, moving: MOVING, hand: HAND });

  it('offset: a servo reporting its angle shifted', () =>
    expectEvent('m4', 'offset', 'offset=4:10', 'offset=4:off'));

  it("offset on an indirect servo, in the user's frame: 10 degrees more on the servo is 10 less in REST's", async () => {
    const event = await expectEvent('m5', 'offset', 'offset=5:10', 'offset=5:off');
    expect(event.real!.position - event.twin.position, JSON.stringify(event)).to.be.closeTo(-10, 3);
  });

  it('pushed: a constant torque turning a held joint', () =>
    expectEvent('m1', 'pushed', 'push=1:0.15', 'push=1:off'));

  it('offline: a servo gone from the bus', () => expectEvent('m5', 'offline', 'missing=5', 'missing='));

  it('blocked: a stop put ahead of a joint on its way through a goto', async () => {
    const at = await present('m1');
    await expectShadowEvent(rig, {
      motor: 'm1',
      kind: 'blocked',
      act: () => goto('m1', at + 60, 1.2),
      on: async () => `block=1@${(await present('m1')) + 3}`,
      off: 'block=1@off',
      moving: MOVING,
      hand: HAND,
    });
    await goto('m1', 0, 0.5, true);
  });

  it('weak: a servo falling to a fifth of its torque during a goto', async () => {
    const at = await present('m1');
    await expectShadowEvent(rig, {
      motor: 'm1',
      kind: 'weak',
      act: () => goto('m1', at + 80, 0.8),
      actLeadMs: 150,
      on: 'weak=1:0.2',
      off: 'weak=1:off',
      moving: MOVING,
      hand: HAND,
    });
    await goto('m1', 0, 0.5, true);
  });
});

describe('shadow routes without shadow mode', () => {
  it('answer 404 on the sim backend (nothing to shadow)', async () => {
    const server = await createRobotServer({
      backend: 'sim',
      robot: 'ergo-jr',
      speed: 'manual',
      recordsDir: path.join(tmp, 'sim'),
    });
    try {
      for (const url of ['/shadow/status.json', '/shadow/events.json']) {
        const res = await server.app.inject({ method: 'GET', url });
        expect(res.statusCode, url).to.equal(404);
        expect(JSON.parse(res.body).error, url).to.be.a('string');
      }
      const state = await server.app.inject({ method: 'GET', url: '/stream/state.json' });
      expect(JSON.parse(state.body).shadow).to.equal(null);
    } finally {
      await server.close();
    }
  });
});

describe('shadow routes on the real backend without --shadow', function () {
  this.timeout(60000);
  it('answer 404 with a tip saying how to turn shadow mode on', async () => {
    const { emulator, device } = await EmulatorProcess.start(['--robot', 'ergo-jr']);
    let server: RobotServer | undefined;
    try {
      server = await createRobotServer({
        backend: 'real',
        robot: 'ergo-jr',
        real: { serial: device },
        recordsDir: path.join(tmp, 'no-shadow'),
      });
      expect(server.shadow).to.equal(undefined);
      for (const url of ['/shadow/status.json', '/shadow/events.json']) {
        const res = await server.app.inject({ method: 'GET', url });
        expect(res.statusCode, url).to.equal(404);
        const body = JSON.parse(res.body) as { error: string; tip: string };
        expect(body.error, url).to.equal('shadow mode is off');
        expect(body.tip, url).to.match(/--backend=real --shadow/);
      }
    } finally {
      await server?.close();
      await emulator.close();
    }
  });
});

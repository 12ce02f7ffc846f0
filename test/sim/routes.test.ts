/** The sim-only conveniences: the hand holds and places poses, reset, set a pose, every motor stiff or compliant. */
import { expect } from 'chai';
import { simServer, untilAnswered, json, value, type TestServer } from '../helpers.ts';

async function position(s: TestServer, motor: string): Promise<number> {
  return (await value(s, motor, 'present_position')) as number;
}

describe('sim routes (Ergo Jr)', function () {
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr');
  });
  afterEach(() => s.close());

  it('the hand holds a pose until released, and the limp gearbox keeps most of it', async () => {
    const res = await untilAnswered(
      s,
      s.post('/sim/hand/hold.json', { positions: { m1: 40, m3: 0 }, duration: 1, wait: true }),
    );
    expect(res.statusCode).to.equal(200);
    expect(json(res).holding).to.have.members(['m1', 'm3']);
    await s.advance(2);
    expect(Math.abs((await position(s, 'm1')) - 40)).to.be.below(3);
    const released = json(await s.post('/sim/hand/release.json', { motors: ['m1'] }));
    expect(released.holding).to.deep.equal(['m3']);
    await s.advance(1);
    // m1 turns about the vertical: nothing pulls it once the hand lets go.
    expect(Math.abs((await position(s, 'm1')) - 40)).to.be.below(3);
    expect(json(await s.post('/sim/hand/release.json')).holding).to.deep.equal([]);
  });

  it('the hand places a pose and lets go: a taught pose stays where the hand left it', async () => {
    const res = await untilAnswered(
      s,
      s.post('/sim/hand/place.json', { positions: { m1: -30 }, duration: 1, wait: true }),
    );
    expect(res.statusCode).to.equal(200);
    await s.advance(1);
    expect(Math.abs((await position(s, 'm1')) + 30)).to.be.below(3);
  });

  it('sets a pose at once; a stiff motor holds it; reset brings back the start pose, limp', async () => {
    expect((await s.post('/sim/motors/compliant.json', { compliant: false })).statusCode).to.equal(200);
    await s.advance(0.1);
    for (const m of s.robot.motors) expect(await value(s, m.name, 'compliant')).to.equal(false);
    const res = await s.post('/sim/pose.json', { positions: { m1: 60 } });
    expect(res.statusCode).to.equal(200);
    await s.advance(0.05);
    expect(Math.abs((await position(s, 'm1')) - 60)).to.be.below(1);
    await s.advance(1);
    expect(Math.abs((await position(s, 'm1')) - 60)).to.be.below(3);
    expect((await s.post('/sim/reset.json')).statusCode).to.equal(200);
    await s.advance(0.1);
    expect(Math.abs(await position(s, 'm1'))).to.be.below(1);
    expect(Math.abs((await position(s, 'm2')) + 90)).to.be.below(2);
    for (const m of s.robot.motors) expect(await value(s, m.name, 'compliant')).to.equal(true);
  });

  it('reports the contacts of the last step', async () => {
    await s.advance(1);
    const body = json(await s.get('/sim/contacts.json'));
    expect(body.contacts).to.be.an('array');
  });

  it('refuses bad input with a clear error and changes nothing', async () => {
    const before = await position(s, 'm1');
    for (const [url, body] of [
      ['/sim/pose.json', {}],
      ['/sim/pose.json', { positions: { m1: 'far' } }],
      ['/sim/hand/hold.json', { positions: [] }],
      ['/sim/motors/compliant.json', { compliant: 'yes' }],
    ] as const) {
      const res = await s.post(url, body);
      expect(res.statusCode, url).to.equal(400);
      expect(json(res)).to.have.keys(['error', 'tip', 'details']);
    }
    expect((await s.post('/sim/pose.json', { positions: { nope: 1 } })).statusCode).to.equal(404);
    await s.advance(0.1);
    expect(Math.abs((await position(s, 'm1')) - before)).to.be.below(0.5);
  });
});

describe('sim targets are relative to the measured angle', function () {
  it('a joint 280 degrees from its goal turns the long way round, never the short way through its limits', async () => {
    const s = await simServer('ergo-jr');
    try {
      await s.post('/sim/motors/compliant.json', { compliant: false });
      await s.post('/sim/pose.json', { positions: { m1: -140 } });
      await s.advance(0.1);
      await s.post('/motors/m1/registers/torque_limit/value.json', 30);
      // The goal jumps (no trajectory): the servo lags it by 280 degrees.
      await s.post('/motors/m1/registers/goal_position/value.json', 140);
      const seen: number[] = [];
      for (let i = 0; i < 50; i++) {
        await s.advance(0.1);
        seen.push(await position(s, 'm1'));
      }
      expect(Math.min(...seen)).to.be.above(-150);
      expect(seen.some((p) => Math.abs(p) < 30)).to.equal(true);
      expect(seen.at(-1)!).to.be.above(130);
    } finally {
      await s.close();
    }
  });
});

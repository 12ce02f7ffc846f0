/** The hand in the twin (POST /sim/motors/<m>/hand.json): how a person moves joints while a move is recorded. */
import { expect } from 'chai';
import { simServer, standStill, type TestServer } from '../helpers.ts';

describe('sim hand tool (/sim/motors/<m>/hand.json)', function () {
  this.timeout(30000);
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr');
  });
  afterEach(() => s.close());

  const m1 = () => s.robot.motor('m1');
  const hand = (body: unknown, motor = 'm1') => s.post(`/sim/motors/${motor}/hand.json`, body);

  it('drags a compliant joint to the position over the duration, in sim time', async () => {
    await standStill(s); // the rest of the arm upright: limp, it would lie on the table and drag along it
    await s.post('/motors/m1/registers/compliant/value.json', true);
    await s.advance(0.2);
    const start = s.backend.clock.now();
    let answered: number | undefined;
    const res = hand({ position: 40, duration: 1, wait: true });
    void res.then(() => (answered = s.backend.clock.now()));
    await s.advance(0.5);
    expect(answered).to.equal(undefined);
    const mid = m1().state.presentPosition;
    expect(mid).to.be.within(5, 38); // on its way, not teleported
    await s.advance(0.6);
    expect((await res).json()).to.deep.equal({ motor: 'm1', position: 40, duration: 1, waiting: true });
    expect(answered! - start).to.be.closeTo(1, 0.05);
    expect(m1().state.presentPosition).to.be.closeTo(40, 1);
    // Let go: a compliant joint stays about where it was left.
    await s.advance(0.5);
    expect(m1().state.presentPosition).to.be.closeTo(40, 3);
  });

  it('a stiff motor resists the hand, and present_load shows the effort', async () => {
    await s.post('/motors/m1/registers/compliant/value.json', false);
    await s.advance(0.3);
    const held = m1().state.presentPosition;
    expect(Math.abs(m1().state.presentLoad)).to.be.below(10);
    const res = hand({ position: held + 60, duration: 2 });
    expect(res).to.not.equal(undefined);
    expect((await res).json()).to.include({ waiting: false });
    await s.advance(1.6); // the hand has arrived at its target (80 % of the duration) and pushes
    const p = m1().state.presentPosition;
    // The hand (twice a stalled servo) wins, but the servo holds it off: a compliant joint reaches the target.
    expect(p - held).to.be.within(30, 57);
    expect(Math.abs(m1().state.presentLoad)).to.be.greaterThan(50);
    // Released: the servo brings the joint back to its goal (after some overshoot of its wound-up integral).
    await s.advance(8);
    expect(m1().state.presentPosition).to.be.closeTo(held, 3);
  });

  it('refuses bad input: 400 for position or duration, 404 for an unknown motor', async () => {
    for (const body of [{}, { position: 'x', duration: 1 }, { position: 10 }, { position: 10, duration: 0 }])
      expect((await hand(body)).statusCode, JSON.stringify(body)).to.equal(400);
    expect((await hand({ position: 10, duration: 1 }, 'nope')).statusCode).to.equal(404);
    expect(
      (
        await s.post('/sim/motors/m1/hand.json', 'position=10&duration=0.5', {
          'content-type': 'application/x-www-form-urlencoded',
        })
      ).statusCode,
    ).to.equal(200);
  });

  it('is listed on the index page under the sim-only /sim prefix', async () => {
    const index = (await s.get('/')).body;
    expect(index).to.include('POST /sim/motors/&lt;motor&gt;/hand.json');
  });
});

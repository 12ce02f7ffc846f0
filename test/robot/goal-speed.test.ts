/** The goal_speed mode gives back the moving speed it took, so a later goto is not capped by it. */
import { expect } from 'chai';
import { setValue, simServer, untilAnswered, value, json, type TestServer } from '../helpers.ts';

describe('robot: goal_speed mode', function () {
  this.timeout(30000);
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr');
    await setValue(s, 'm1', 'compliant', false);
    await setValue(s, 'm1', 'moving_speed', 100);
  });
  afterEach(() => s.close());

  for (const end of ['goal_speed 0', 'a goal_position write', 'a goto'] as const) {
    it(`ends with ${end}, which gives back the moving speed it replaced`, async () => {
      await setValue(s, 'm1', 'goal_speed', 60);
      await s.advance(0.2);
      expect(await value(s, 'm1', 'moving_speed')).to.equal(60);
      if (end === 'goal_speed 0') await setValue(s, 'm1', 'goal_speed', 0);
      else if (end === 'a goal_position write') await setValue(s, 'm1', 'goal_position', 0);
      else await s.post('/motors/m1/goto.json', { position: 0, duration: 0.5 });
      expect(await value(s, 'm1', 'moving_speed')).to.equal(100);
    });
  }

  it('after goal_speed 60 then 0 (speed 0 = full speed before), a 1 s goto with wait reaches its target', async () => {
    await setValue(s, 'm1', 'moving_speed', 0);
    await setValue(s, 'm1', 'goal_speed', 60);
    await s.advance(0.3);
    await setValue(s, 'm1', 'goal_speed', 0);
    const res = await untilAnswered(
      s,
      s.post('/motors/m1/goto.json', { position: -60, duration: 1, wait: true }),
    );
    expect(json(res)).to.include({ cancelled: false });
    await s.advance(0.3);
    expect(Math.abs(((await value(s, 'm1', 'present_position')) as number) + 60)).to.be.below(3);
  });

  it('an explicit moving_speed write during the mode outlasts it', async () => {
    await setValue(s, 'm1', 'goal_speed', 60);
    await setValue(s, 'm1', 'moving_speed', 30);
    await setValue(s, 'm1', 'goal_speed', 0);
    expect(await value(s, 'm1', 'moving_speed')).to.equal(30);
  });
});

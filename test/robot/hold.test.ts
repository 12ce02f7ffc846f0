/**
 * The robot's hold (a calibration run's): every command that would move the robot is refused with the hold's 409,
 * the control loop writes nothing meanwhile (the owner's bus writes stand), and release() makes the commands what
 * the servos were left as, writing back what the owner changed. On the sim twin, at its stepped clock.
 */
import { expect } from 'chai';
import { degToPosition, percentToTorqueLimit } from '../../src/dynamixel/registers.ts';
import { type TestServer, json, simServer, standStill } from '../helpers.ts';

const HOLD = { reason: 'a test holds the robot', tip: 'end the test' };

describe('robot: the hold', function () {
  this.timeout(60000);
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr');
    await standStill(s);
  });
  afterEach(() => s.close());

  it("refuses gotos, register writes but the LED, and primitive starts with the hold's 409", async () => {
    s.robot.hold(HOLD);
    const refused: [string, unknown][] = [
      ['/motors/m1/goto.json', { position: 20, duration: 1 }],
      ['/motors/goto.json', { motors: ['m1'], positions: [20], duration: 1 }],
      ['/motors/m1/registers/goal_position/value.json', 20],
      ['/motors/m1/registers/compliant/value.json', true],
      ['/motors/m1/registers/pid/value.json', [4, 0, 0]],
      ['/ik/chain/goto.json', { xyz: '0,-0.1,0.15', duration: 1 }],
      ['/records/none/record.json', {}],
    ];
    for (const [url, body] of refused) {
      const res = await s.post(url, body);
      expect(res.statusCode, `${url}: ${res.body}`).to.equal(409);
      expect(json(res)).to.include({ error: HOLD.reason, tip: HOLD.tip });
    }
    const start = await s.get('/primitives/dance/start.json');
    expect(start.statusCode).to.equal(409);
    expect(json(start).details).to.equal('refused: the start of primitive "dance"');
    expect(json(await s.get('/primitives/running/list.json')).primitives).to.deep.equal([]);
    expect((await s.post('/motors/m1/registers/led/value.json', 'red')).statusCode).to.equal(200);
    expect(() => s.robot.hold(HOLD), 'held already').to.throw(HOLD.reason);
  });

  it('writes nothing while held; released, leaves the servos compliant or holding and writes back the rest', async () => {
    const m2 = s.robot.motor('m2');
    const bus = s.robot.backend.bus;
    s.robot.hold(HOLD);
    // The owner drives m2 on the bus, and lowers its torque limit.
    await bus.write('goal_position', new Map([[m2.id, degToPosition(m2.spec, m2.toRaw(-30))]]));
    await bus.write('torque_limit', new Map([[m2.id, 512]]));
    await s.advance(1.5);
    // At half its torque m2 sags a few degrees below its goal; the loop's own goal (0) is far.
    expect(m2.state.presentPosition, 'the loop did not put its own goal back').to.be.closeTo(-30, 6);
    const left = m2.state.presentPosition;
    expect(m2.commands.goalPosition).to.be.closeTo(0, 0.5);
    s.robot.release('hold');
    await s.advance(0.1);
    const limit = (await bus.read([m2.id], 'torque_limit')).get(m2.id);
    expect(limit, "the robot's torque limit written back").to.equal(
      percentToTorqueLimit(m2.commands.torqueLimit),
    );
    expect(limit).to.not.equal(512);
    expect(m2.commands.compliant).to.equal(false);
    expect(m2.commands.goalPosition).to.be.closeTo(left, 0.5);
    await s.advance(1);
    expect(m2.state.presentPosition, 'holding where it was left').to.be.closeTo(left, 3);
    expect((await s.post('/motors/m2/goto.json', { position: 0, duration: 0.5 })).statusCode).to.equal(200);

    s.robot.hold(HOLD);
    s.robot.release('compliant');
    await s.advance(0.1);
    expect((await bus.read([m2.id], 'torque_enable')).get(m2.id)).to.equal(0);
    expect(json(await s.get('/motors/m2/registers/compliant/value.json')).compliant).to.equal(true);
  });
});

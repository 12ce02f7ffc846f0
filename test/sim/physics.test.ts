/** Physics checks that a fake (a motor that teleports to its goal) would fail. */
import { expect } from 'chai';
import { simServer, setValue, value, untilAnswered, json, type TestServer } from '../helpers.ts';
import { PhysicsWorld } from '../../src/sim/world.ts';
import { pendulumUrdf } from '../../src/lab/fidelity.ts';
import { type DriveCommand, GEARBOX_SLACK } from '../../src/sim/servo.ts';
import { expectArrival } from '../http/arrival.ts';
import { SETTLE_MAX_S, TORSO } from '../http/facts.ts';

describe('sim physics (Torso)', function () {
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('torso');
  });
  afterEach(() => s.close());

  async function stiffArmAt(shoulderX: number) {
    for (const m of s.robot.motors) await setValue(s, m.name, 'compliant', false);
    await s.advance(0.1);
    const res = await untilAnswered(
      s,
      s.post('/motors/goto.json', {
        motors: ['l_shoulder_x', 'l_elbow_y', 'l_shoulder_y'],
        positions: [shoulderX, 0, 0],
        duration: 1,
        wait: true,
      }),
    );
    expect(res.statusCode).to.equal(200);
  }

  it('a stiff arm held out sideways sags as a P loop does, and an integral gain brings it within 1 degree', async () => {
    await stiffArmAt(90);
    await s.advance(2);
    // MX firmware P 32: full duty at 10.9 degrees of error (docs/reference/servo-models.md 1); the arm's weight takes a few.
    const sag = 90 - ((await value(s, 'l_shoulder_x', 'present_position')) as number);
    expect(sag).to.be.within(0.5, 6);
    await setValue(s, 'l_shoulder_x', 'pid', [4, 2, 0]);
    await s.advance(3);
    const p = (await value(s, 'l_shoulder_x', 'present_position')) as number;
    expect(Math.abs(p - 90)).to.be.below(1);
  });

  it('the gravity torque shows in present_load, and a lower torque_limit cannot lift the arm', async () => {
    await stiffArmAt(90);
    await s.advance(1);
    const loadOut = Math.abs((await value(s, 'l_shoulder_x', 'present_load')) as number);
    const sagFull = 90 - ((await value(s, 'l_shoulder_x', 'present_position')) as number);
    // Arm hanging down: much less gravity torque about the shoulder.
    await untilAnswered(
      s,
      s.post('/motors/l_shoulder_x/goto.json', { position: 0, duration: 1, wait: true }),
    );
    await s.advance(1);
    const loadDown = Math.abs((await value(s, 'l_shoulder_x', 'present_load')) as number);
    expect(loadOut).to.be.greaterThan(3);
    expect(loadOut).to.be.greaterThan(loadDown * 2);
    // At 5 % the MX-28's motor gives 0.27 N.m at rest (0.125 at the output once its gearbox took its share, the
    // datasheet's figure): not enough to lift the arm's 0.25 N.m through the gearbox. (An arm already held out may
    // stay there: the back-driven gearbox's static friction helps the weak motor hold it.)
    await setValue(s, 'l_shoulder_x', 'torque_limit', 5);
    await untilAnswered(
      s,
      s.post('/motors/l_shoulder_x/goto.json', { position: 90, duration: 1, wait: true }),
    );
    await s.advance(2);
    const sagWeak = 90 - ((await value(s, 'l_shoulder_x', 'present_position')) as number);
    expect(sagWeak).to.be.greaterThan(sagFull + 5);
  });

  it('a compliant gearbox holds a light forearm but not the whole arm held out', async () => {
    // Upper arm hanging, elbow at user 0 = bent 90 degrees with the forearm horizontal, pointing forward: about
    // 0.05 N.m, within the MX-28 gearbox's friction when back-driven.
    await stiffArmAt(0);
    await s.advance(0.5);
    const before = (await value(s, 'l_elbow_y', 'present_position')) as number;
    await setValue(s, 'l_elbow_y', 'compliant', true);
    await s.advance(1.5);
    const after = (await value(s, 'l_elbow_y', 'present_position')) as number;
    expect(Math.abs(after - before)).to.be.below(10);
    // The whole arm out sideways weighs far more on the shoulder: released, it falls.
    await stiffArmAt(90);
    await s.advance(0.5);
    await setValue(s, 'l_shoulder_x', 'compliant', true);
    await s.advance(1.5);
    expect((await value(s, 'l_shoulder_x', 'present_position')) as number).to.be.below(60);
  });

  it('a goto with wait ends within 1 degree of its target, and not instantly', async () => {
    await setValue(s, 'head_z', 'compliant', false);
    await s.advance(0.1);
    const start = s.backend.clock.now();
    const res = await untilAnswered(
      s,
      s.post('/motors/head_z/goto.json', { position: 40, duration: 1.5, wait: 'true' }),
      10,
      0.02,
    );
    await expectArrival(
      json(res),
      { motors: { head_z: 40 }, duration: 1.5, waiting: true, cancelled: false },
      TORSO,
      async (m) => (await value(s, m, 'present_position')) as number,
    );
    // After the motion, and the head at rest (at most SETTLE_MAX_S more).
    expect(s.backend.clock.now() - start).to.be.within(1.45, 1.6 + SETTLE_MAX_S);
    expect(Math.abs(((await value(s, 'head_z', 'present_position')) as number) - 40)).to.be.below(1);
  });

  it('temperature rises under sustained load and stays at ambient without load', async () => {
    await stiffArmAt(90);
    const t0 = (await value(s, 'l_shoulder_x', 'present_temperature')) as number;
    const head0 = (await value(s, 'head_z', 'present_temperature')) as number;
    // A hand pushes the stiff arm for two minutes: the servo fights it at about half its motor's stall torque.
    const id = s.robot.motor('l_shoulder_x').id;
    void s.simulation!.hand.push(id, 2.4, 120);
    await s.advance(60);
    expect(Math.abs((await value(s, 'l_shoulder_x', 'present_load')) as number)).to.be.greaterThan(30);
    await s.advance(60);
    const t1 = (await value(s, 'l_shoulder_x', 'present_temperature')) as number;
    expect(t1).to.be.greaterThan(t0 + 5);
    expect((await value(s, 'head_z', 'present_temperature')) as number).to.equal(head0);
  });
});

describe('sim physics (Ergo Jr)', function () {
  it('starts compliant in its rest pose and reports the start-up settings', async () => {
    const s = await simServer('ergo-jr');
    try {
      expect(Math.abs(((await value(s, 'm2', 'present_position')) as number) + 90)).to.be.below(1);
      await s.advance(0.5);
      expect(await value(s, 'm1', 'compliant')).to.equal(true);
      expect(await value(s, 'm2', 'torque_limit')).to.equal(70);
      // Ki 2 becomes raw I 4, which the servo holds as 1.953125 (as pypot reports it too).
      expect(await value(s, 'm2', 'pid')).to.deep.equal([4, 1.953125, 0]);
      expect(await value(s, 'm1', 'led')).to.equal('off');
    } finally {
      await s.close();
    }
  });

  it('a stiff motor holds; a goto moves it through the physics with a finite speed', async () => {
    const s = await simServer('ergo-jr');
    try {
      await setValue(s, 'm1', 'compliant', false);
      await s.advance(0.1);
      void s.post('/motors/m1/goto.json', { position: 90, duration: 1 });
      await s.advance(0.5);
      const mid = (await value(s, 'm1', 'present_position')) as number;
      const speed = (await value(s, 'm1', 'present_speed')) as number;
      // Half way through the move the goal is at 45 degrees; the XL-320's P loop lags it by v / (w0 Kp error_gain)
      // at the move's speed, about 15-25 degrees (docs/reference/servo-models.md 1).
      expect(mid).to.be.within(10, 45);
      expect(speed).to.be.greaterThan(50);
      await s.advance(1);
      // The gearbox's static friction (0.016 N.m, BAM m6) against a P gain of 32: the XL-320 stops up to 2.5 degrees
      // short until its integral term builds up.
      expect(Math.abs(((await value(s, 'm1', 'present_position')) as number) - 90)).to.be.below(3);
    } finally {
      await s.close();
    }
  });

  it('a stiff arm that stopped reads present_speed 0 on every motor', async () => {
    const s = await simServer('ergo-jr');
    try {
      const motors = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
      await s.post('/sim/motors/compliant.json', { compliant: false });
      for (const goal of [15, -15, 15, 0]) {
        await s.post('/motors/goto.json', { motors, positions: motors.map(() => goal), duration: 0.3 });
        await s.advance(0.4);
      }
      await s.advance(10);
      // m5 used to chatter at +-7 deg/s about a still angle (the friction overshooting zero speed every step), and
      // read -7.33 deg/s for ever.
      for (let k = 0; k < 10; k++) {
        await s.advance(0.02);
        const speeds = json(await s.get('/motors/registers/present_speed/list.json')).present_speed as Record<
          string,
          number
        >;
        for (const m of motors) expect(Math.abs(speeds[m]!), `${m} present_speed`).to.be.below(1);
      }
    } finally {
      await s.close();
    }
  });
});

describe('sim gearbox friction in the physics world', function () {
  /** One joint about x carrying a 50 g ball 5 cm out, no gravity: only the drive turns it. */
  async function oneJoint(): Promise<PhysicsWorld> {
    const urdf = pendulumUrdf(0.05, 0.05);
    return PhysicsWorld.create(urdf, { dt: 0.002, armature: new Map([['q', 0.001163]]), gravity: 0 });
  }
  const held = (motorTorque: number, slipping: boolean): DriveCommand => ({
    target: 0,
    targetVelocity: 0,
    stiffness: 0,
    damping: 0,
    limp: false,
    held: true,
    slipping,
    motorTorque,
    frictionBudget: 0.05,
  });

  it('a held joint that slipped stays where it slipped: friction does not spring it back', async () => {
    const world = await oneJoint();
    try {
      const run = (cmd: DriveCommand, steps: number) => {
        for (let k = 0; k < steps; k++) {
          world.drive(0, cmd);
          world.step();
        }
      };
      run(held(0.02, false), 100);
      expect(Math.abs(world.angle(0))).to.be.below(1e-6);
      // The motor overcomes the budget for 10 ms: the joint slips, within the friction motor's slack.
      run(held(0.08, true), 5);
      const slipped = world.angle(0);
      expect(slipped).to.be.within(2e-4, GEARBOX_SLACK);
      // Back under the budget: it stops there. Anchored where it took hold, it was pulled back to 0.
      run(held(0.02, false), 200);
      expect(world.angle(0)).to.be.closeTo(slipped, 0.05 * slipped);
    } finally {
      world.free();
    }
  });
});

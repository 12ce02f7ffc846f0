/** The manager combines the requests of running primitives per motor and register (docs/reference/pypot.md 4.6). */
import { expect } from 'chai';
import { PrimitiveManager } from '../../src/primitives/manager.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { json, simServer, untilAnswered, type TestServer, standStill } from '../helpers.ts';
import { Probe } from './probes.ts';

describe('primitives: combination of requests', function () {
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr');
  });
  afterEach(() => s.close());

  function probe(
    name: string,
    opts: ConstructorParameters<typeof Probe>[2] = {},
    manager = s.primitives,
  ): Probe {
    const p = new Probe(manager.context, name, opts);
    manager.attach(p);
    return p;
  }
  const m1 = () => s.robot.motor('m1');

  it('sums two primitives on one motor (the Ergo Jr combine), and stopping one removes its part', async () => {
    await standStill(s); // a limp arm lies on the table, and m1 would drag it
    // Smooth moves: the twin's Ergo Jr servo rings after a large step of its goal.
    const a = probe('a', { requests: { m1: { compliant: false } } });
    const b = probe('b');
    await a.start();
    await b.start();
    void a.move({ m1: 10 }, 1);
    void b.move({ m1: 15 }, 1);
    await s.advance(2);
    expect(m1().commands.goalPosition).to.be.closeTo(25, 1e-6);
    expect(m1().state.presentPosition).to.be.closeTo(25, 3); // XL-320 dead band: 2.4 degrees
    void b.move({ m1: 0 }, 1);
    await s.advance(2);
    expect(m1().state.presentPosition).to.be.closeTo(10, 3); // XL-320 dead band: 2.4 degrees
    b.ask('m1', 'goal_position', 5);
    await s.advance(0.1);
    expect(m1().commands.goalPosition).to.be.closeTo(15, 1e-6);
    await b.stop();
    await s.advance(0.1);
    expect(m1().commands.goalPosition).to.be.closeTo(10, 1e-6);
    await a.stop();
    await s.advance(0.2);
    // Nobody drives it now: the motor keeps its last command.
    expect(m1().commands.goalPosition).to.be.closeTo(10, 1e-6);
    expect(s.primitives.activeCount()).to.equal(0);
  });

  it('averages with the mean combine', async () => {
    const mean = new PrimitiveManager(s.robot, { combine: 'mean', logger: silentLogger, builtins: false });
    await mean.open();
    try {
      const a = probe('a', { requests: { m1: { goal_position: 10, torque_limit: 40 } } }, mean);
      const b = probe('b', { requests: { m1: { goal_position: 30, torque_limit: 60 } } }, mean);
      await Promise.all([a.start(), b.start()]);
      await s.advance(0.1);
      expect(m1().commands.goalPosition).to.equal(20);
      expect(m1().commands.torqueLimit).to.equal(50);
    } finally {
      await mean.close();
    }
  });

  it('clamps sums into the register domains', async () => {
    probe('a', { requests: { m1: { torque_limit: 80, goal_position: 100, moving_speed: 500 } } });
    probe('b', { requests: { m1: { torque_limit: 50, goal_position: 100, moving_speed: 500 } } });
    await Promise.all([s.primitives.get('a').start(), s.primitives.get('b').start()]);
    await s.advance(0.1);
    expect(m1().commands.torqueLimit).to.equal(100);
    expect(m1().commands.goalPosition).to.equal(150); // m1's upper limit
    expect(m1().commands.movingSpeed).to.be.closeTo(681.318, 0.01); // the XL-320's fastest
  });

  it('sums pid gains element by element and keeps what the servo can hold', async () => {
    probe('a', { requests: { m2: { pid: [2, 0, 0] } } });
    probe('b', { requests: { m2: { pid: [3, 1, 0] } } });
    await Promise.all([s.primitives.get('a').start(), s.primitives.get('b').start()]);
    await s.advance(0.1);
    expect(s.robot.motor('m2').commands.pid).to.deep.equal([5, 0.9765625, 0]);
  });

  it('led: a colour wins over off; among colours the latest request wins', async () => {
    const a = probe('a', { requests: { m1: { led: 'off' } } });
    const b = probe('b', { requests: { m1: { led: 'red' } } });
    await a.start();
    await b.start();
    await s.advance(0.1);
    expect(m1().commands.led).to.equal('red');
    a.ask('m1', 'led', 'blue');
    await s.advance(0.1);
    expect(m1().commands.led).to.equal('blue');
    await a.stop();
    await s.advance(0.1);
    expect(m1().commands.led).to.equal('red');
  });

  it('compliant: the latest request wins; turning stiff holds the motor where it is', async () => {
    const a = probe('a', { requests: { m1: { compliant: false } } });
    const b = probe('b');
    await a.start();
    await b.start();
    await s.advance(0.1);
    expect(m1().commands.compliant).to.equal(false);
    expect(m1().commands.goalPosition).to.be.closeTo(m1().state.presentPosition, 0.5);
    b.ask('m1', 'compliant', true);
    await s.advance(0.1);
    expect(m1().commands.compliant).to.equal(true);
    a.ask('m1', 'compliant', false);
    await s.advance(0.1);
    expect(m1().commands.compliant).to.equal(false);
  });

  it('a primitive driving goal_position cancels a REST goto in progress, and wins over REST writes', async () => {
    await standStill(s);
    const t0 = s.backend.clock.now();
    const waiting = s.post('/motors/m1/goto.json', { position: 90, duration: 5, wait: true });
    await s.advance(0.5);
    const p = probe('p');
    await p.start();
    void p.move({ m1: -20 }, 0.5);
    const res = await untilAnswered(s, waiting, 1, 0.02);
    expect(res.statusCode).to.equal(200);
    expect(s.backend.clock.now() - t0).to.be.below(1.4);
    expect(s.robot.isMoving(m1())).to.equal(false);
    await s.advance(1);
    expect(m1().state.presentPosition).to.be.closeTo(-20, 3); // XL-320 dead band: 2.4 degrees
    expect(json(await s.post('/motors/m1/registers/goal_position/value.json', 50)).goal_position).to.equal(
      50,
    );
    await s.advance(0.1);
    expect(m1().commands.goalPosition).to.equal(-20);
  });

  it('sub-primitives combine but are not listed', async () => {
    const dance = s.primitives.get('dance');
    await dance.start();
    await s.advance(3.5);
    expect(s.primitives.runningList().map((p) => p.name)).to.deep.equal(['dance']);
    expect(s.primitives.activeCount()).to.equal(6); // dance and its five sinuses
    expect((await s.get('/primitives/list.json')).json().primitives).not.to.include.members([
      'dance:sinus#0',
    ]);
    await dance.stop();
    expect(s.primitives.activeCount()).to.equal(0);
    // its teardown's request reached the motors without waiting for a tick
    expect(s.robot.motor('m3').commands.led).to.equal('off');
  });

  it('refuses requests for unknown motors, missing registers and wrong types', async () => {
    const p = probe('p');
    expect(() => p.ask('nope', 'goal_position', 1))
      .to.throw()
      .with.property('code', 'not_found');
    expect(() => p.ask('m1', 'goal_position', 'far'))
      .to.throw()
      .with.property('code', 'bad_request');
    expect(() => p.ask('m1', 'led', 'purple'))
      .to.throw()
      .with.property('code', 'bad_request');
    expect(() => p.ask('m1', 'pid', [1, 2]))
      .to.throw()
      .with.property('code', 'bad_request');
    expect(() => p.ask('m1', 'compliant', 'maybe'))
      .to.throw()
      .with.property('code', 'bad_request');
    expect(() => p.move({ m1: Number.NaN }, 1))
      .to.throw()
      .with.property('code', 'bad_request');
    expect(() => p.move({ m1: 1 }, -1))
      .to.throw()
      .with.property('code', 'bad_request');
  });
});

describe('primitives: combination on a robot without LEDs', function () {
  it('a led request on a Torso motor is refused (its servos have no LED)', async () => {
    const s = await simServer('torso');
    try {
      const p = new Probe(s.primitives.context, 'p');
      expect(() => p.ask('head_z', 'led', 'red'))
        .to.throw()
        .with.property('code', 'bad_request');
      expect(() => p.ask('head_z', 'pid', [1, 0, 0]))
        .to.throw()
        .with.property('code', 'bad_request');
    } finally {
      await s.close();
    }
  });
});

/** The primitive lifecycle on the robot clock (docs/reference/contract.md 5) and the races pypot had. */
import { expect } from 'chai';
import { simServer, type TestServer, standStill } from '../helpers.ts';
import { Probe, recordingLogger } from './probes.ts';

describe('primitives: lifecycle', function () {
  let s: TestServer;
  let log: ReturnType<typeof recordingLogger>;

  beforeEach(async () => {
    log = recordingLogger();
    s = await simServer('ergo-jr', { logger: log });
  });
  afterEach(() => s.close());

  function probe(name: string, opts: ConstructorParameters<typeof Probe>[2] = {}): Probe {
    const p = new Probe(s.primitives.context, name, opts);
    s.primitives.attach(p);
    return p;
  }

  it('runs setup, then update at its frequency on the robot clock, then teardown', async () => {
    const p = probe('p', { frequency: 10 });
    await p.start();
    expect(p.state).to.equal('running');
    expect(p.running).to.equal(true);
    await s.advance(1.0);
    expect(p.setups).to.equal(1);
    // Updates at t = 0, 0.1, ..., 1.0 of its own time.
    expect(p.updates).to.be.within(10, 11);
    expect(p.elapsed).to.be.closeTo(1.0, 0.03);
    await p.stop();
    expect(p.state).to.equal('stopped');
    expect(p.teardowns).to.equal(1);
    const updates = p.updates;
    await s.advance(0.5);
    expect(p.updates).to.equal(updates);
  });

  it('start of a running primitive keeps it running without a new setup', async () => {
    const p = probe('p');
    await p.start();
    await s.advance(0.2);
    await p.start();
    await s.advance(0.2);
    expect(p.setups).to.equal(1);
    expect(p.state).to.equal('running');
  });

  it('stop of a stopped primitive is fine; pause of a stopped one and resume of a running one are 409', async () => {
    const p = probe('p');
    await p.stop();
    expect(() => p.pause())
      .to.throw()
      .with.property('code', 'conflict');
    expect(() => p.resume())
      .to.throw()
      .with.property('code', 'conflict');
    await p.start();
    expect(() => p.resume())
      .to.throw()
      .with.property('code', 'conflict');
    p.pause();
    p.pause(); // pausing a paused one changes nothing
    expect(p.state).to.equal('paused');
    expect(p.running).to.equal(true);
    expect(s.primitives.runningList().map((x) => x.name)).to.include('p');
  });

  it('pause freezes the loop and the elapsed time; resume continues where it was', async () => {
    const p = probe('p', { frequency: 50 });
    await p.start();
    await s.advance(0.5);
    p.pause();
    const updates = p.updates;
    const elapsed = p.elapsed;
    await s.advance(1);
    expect(p.updates).to.equal(updates);
    expect(p.elapsed).to.be.closeTo(elapsed, 1e-9);
    p.resume();
    await s.advance(0.5);
    expect(p.updates).to.be.within(updates + 24, updates + 26);
    expect(p.elapsed).to.be.closeTo(elapsed + 0.5, 0.03);
  });

  it('a paused primitive stops (pypot could not), and pause then stop works', async () => {
    const p = probe('p');
    await p.start();
    await s.advance(0.1);
    p.pause();
    await s.advance(0.1);
    await p.stop();
    expect(p.state).to.equal('stopped');
    expect(p.teardowns).to.equal(1);
    expect(s.primitives.runningList()).to.be.empty;
    // and it starts again afterwards
    await p.start();
    await s.advance(0.1);
    expect(p.setups).to.equal(2);
    expect(p.updates).to.be.greaterThan(0);
  });

  it('a teardown that throws is logged; the primitive still ends stopped and leaves the running list', async () => {
    const p = probe('p', { failIn: 'teardown' });
    await p.start();
    await s.advance(0.1);
    await p.stop();
    expect(p.state).to.equal('stopped');
    expect(p.busy).to.equal(false);
    expect(p.lastError).to.match(/^teardown: teardown failed on purpose/);
    expect(log.has('error', /primitive p: teardown failed/)).to.equal(true);
    expect(s.primitives.runningList().map((x) => x.name)).not.to.include('p');
    expect(s.primitives.activeCount()).to.equal(0);
  });

  for (const failIn of ['setup', 'update', 'run'] as const) {
    it(`a primitive whose ${failIn} throws stops itself; the error is logged and visible; the server serves on`, async () => {
      const p = probe('p', failIn === 'run' ? { oneShot: 1, failIn } : { failIn });
      const res = await s.get('/primitives/p/start.json');
      expect(res.statusCode).to.equal(200);
      await s.advance(0.1);
      expect(p.state).to.equal('stopped');
      expect(p.teardowns).to.equal(1);
      expect(p.lastError).to.contain(`${failIn} failed on purpose`);
      expect(log.has('error', new RegExp(`primitive p: ${failIn} failed`))).to.equal(true);
      expect((await s.get('/primitives/running/list.json')).json().primitives).not.to.include('p');
      expect((await s.get('/motors/list.json')).statusCode).to.equal(200);
      // A new start clears the error and tries again.
      p.failIn = undefined;
      await p.start();
      expect(p.lastError).to.equal(undefined);
      await s.advance(0.1);
      expect(p.state).to.equal('running');
    });
  }

  it('a one-shot primitive stops by itself when run() returns, and may start again', async () => {
    const p = probe('p', { oneShot: 0.5 });
    await p.start();
    await s.advance(0.4);
    expect(p.state).to.equal('running');
    await s.advance(0.2);
    expect(p.state).to.equal('stopped');
    expect(p.teardowns).to.equal(1);
    await p.start();
    expect(p.state).to.equal('running');
    await s.advance(0.6);
    expect(p.state).to.equal('stopped');
    expect(p.setups).to.equal(2);
  });

  it('concurrent start and stop calls serialise: never two setups alive, one teardown per setup', async () => {
    const p = probe('p', { setupSeconds: 0.3, teardownSeconds: 0.2 });
    const calls: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      calls.push(p.start(), p.stop(), p.start());
    }
    calls.push(p.start());
    expect(p.state).to.equal('running');
    await s.advance(3);
    await Promise.all(calls);
    expect(p.maxLive).to.equal(1);
    expect(p.state).to.equal('running');
    expect(p.live).to.equal(1);
    const stopping = p.stop();
    expect(p.state).to.equal('stopped');
    // stop answers after the teardown, which takes robot time
    let stopped = false;
    void stopping.then(() => (stopped = true));
    await s.advance(0.1);
    expect(stopped).to.equal(false);
    await s.advance(0.2);
    expect(stopped).to.equal(true);
    expect(p.setups).to.equal(p.teardowns);
    expect(p.live).to.equal(0);
  });

  it('stop during a long setup aborts its sleeps at once; the teardown still runs', async () => {
    const p = probe('p', { setupSeconds: 10 });
    await p.start();
    await s.advance(0.2);
    await p.stop();
    expect(p.state).to.equal('stopped');
    expect(p.teardowns).to.equal(1);
    expect(p.updates).to.equal(0);
    expect(p.lastError).to.equal(undefined);
  });

  it('a start during a teardown waits for it, then sets up again', async () => {
    const p = probe('p', { teardownSeconds: 0.5 });
    await p.start();
    await s.advance(0.1);
    const stopped = p.stop();
    const started = p.start();
    expect(p.state).to.equal('running');
    await s.advance(0.3);
    expect(p.setups).to.equal(1);
    await s.advance(0.3);
    await stopped;
    await started;
    expect(p.setups).to.equal(2);
    expect(p.maxLive).to.equal(1);
  });

  it('pause during a goto freezes the move; resume finishes it', async () => {
    await standStill(s); // a limp arm lies on the table, and m1 would drag it
    const p = probe('p', { requests: { m1: { compliant: false } } });
    await p.start();
    await s.advance(0.1);
    let done = false;
    void p.move({ m1: 40 }, 1).then(() => (done = true));
    await s.advance(0.5);
    p.pause();
    await s.advance(0.05); // the next tick applies the request as it stood at the pause
    const held = s.robot.motor('m1').commands.goalPosition;
    expect(held).to.be.within(10, 30);
    await s.advance(1);
    expect(s.robot.motor('m1').commands.goalPosition).to.equal(held);
    expect(done).to.equal(false);
    p.resume();
    await s.advance(0.6);
    expect(done).to.equal(true);
    expect(s.robot.motor('m1').commands.goalPosition).to.be.closeTo(40, 1e-6);
    await s.advance(0.5);
    expect(s.robot.motor('m1').state.presentPosition).to.be.closeTo(40, 3); // XL-320 dead band: 2.4 degrees
  });

  it('detach stops the primitive and removes it; attach refuses a taken name', async () => {
    const p = probe('p');
    expect(() => s.primitives.attach(new Probe(s.primitives.context, 'p')))
      .to.throw()
      .with.property('code', 'conflict');
    await p.start();
    await s.advance(0.1);
    await s.primitives.detach('p');
    expect(p.state).to.equal('stopped');
    expect(s.primitives.has('p')).to.equal(false);
    expect(() => s.primitives.get('p'))
      .to.throw()
      .with.property('code', 'not_found');
  });

  it('close stops everything, also teardowns that wait on a clock nobody advances', async () => {
    const p = probe('p', { teardownSeconds: 100 });
    await p.start();
    await s.advance(0.1);
    await s.primitives.close();
    expect(p.state).to.equal('stopped');
    expect(p.busy).to.equal(false);
  });
});

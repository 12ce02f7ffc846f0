/** SteppedClock: time moves only when its owner says so; timers fire in due order; sleeps abort. */
import { expect } from 'chai';
import {
  AbortError,
  SteppedClock,
  WallClock,
  advanceManualClock,
  flushMicrotasks,
  isAbortError,
} from '../../src/core/clock.ts';

describe('SteppedClock', () => {
  it('starts at 0 and does not move by itself', async () => {
    const clock = new SteppedClock();
    expect(clock.now()).to.equal(0);
    let fired = false;
    void clock.sleep(0.1).then(() => (fired = true));
    await flushMicrotasks();
    expect(fired).to.equal(false);
    expect(clock.now()).to.equal(0);
    expect(clock.pendingTimers()).to.equal(1);
    expect(clock.nextDue()).to.equal(0.1);
  });

  it('fires timers in due order, and in creation order for equal due times', async () => {
    const clock = new SteppedClock();
    const order: string[] = [];
    const at = (name: string, s: number) => void clock.sleep(s).then(() => order.push(name));
    at('c', 0.3);
    at('a', 0.1);
    at('b1', 0.2);
    at('b2', 0.2);
    at('d', 0.5);
    void clock.sleepUntil(0.25).then(() => order.push('u'));
    await advanceManualClock(clock, 0.3);
    expect(order).to.deep.equal(['a', 'b1', 'b2', 'u', 'c']);
    expect(clock.now()).to.be.closeTo(0.3, 1e-12);
    await advanceManualClock(clock, 0.3);
    expect(order).to.deep.equal(['a', 'b1', 'b2', 'u', 'c', 'd']);
    expect(clock.nextDue()).to.equal(Infinity);
  });

  it('each timer resolves at its own due time (the clock reads it when it runs)', async () => {
    const clock = new SteppedClock();
    const seen: number[] = [];
    for (const s of [0.05, 0.15, 0.1]) void clock.sleep(s).then(() => seen.push(clock.now()));
    await advanceManualClock(clock, 1);
    expect(seen).to.deep.equal([0.05, 0.1, 0.15]);
    expect(clock.now()).to.equal(1);
  });

  it('advanceManualClock fires timers set by timers within the same advance', async () => {
    const clock = new SteppedClock();
    const ticks: number[] = [];
    const loop = async () => {
      for (let i = 0; i < 10; i++) {
        await clock.sleep(0.02);
        ticks.push(clock.now());
      }
    };
    const done = loop();
    await advanceManualClock(clock, 0.1);
    expect(ticks).to.have.lengthOf(5);
    ticks.forEach((t, i) => expect(t).to.be.closeTo(0.02 * (i + 1), 1e-9));
    await advanceManualClock(clock, 0.1);
    await done;
    expect(ticks).to.have.lengthOf(10);
  });

  it('an aborted sleep rejects with an AbortError and never fires', async () => {
    const clock = new SteppedClock();
    const ac = new AbortController();
    let outcome = 'pending';
    clock.sleep(0.1, ac.signal).then(
      () => (outcome = 'fired'),
      (err: unknown) => (outcome = isAbortError(err) ? 'aborted' : 'other'),
    );
    ac.abort();
    await flushMicrotasks();
    expect(outcome).to.equal('aborted');
    expect(clock.pendingTimers()).to.equal(0);
    await advanceManualClock(clock, 1);
    expect(outcome).to.equal('aborted');
  });

  it('a sleep with an already aborted signal rejects at once', async () => {
    const clock = new SteppedClock();
    const ac = new AbortController();
    ac.abort();
    let err: unknown;
    await clock.sleep(1, ac.signal).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(AbortError);
    expect(clock.pendingTimers()).to.equal(0);
  });

  it('aborting one sleep leaves the others alone; a fired sleep ignores a later abort', async () => {
    const clock = new SteppedClock();
    const ac = new AbortController();
    const log: string[] = [];
    void clock.sleep(0.1, ac.signal).then(
      () => log.push('first'),
      () => log.push('first aborted'),
    );
    void clock.sleep(0.2).then(() => log.push('second'));
    await advanceManualClock(clock, 0.15);
    ac.abort();
    await advanceManualClock(clock, 0.1);
    expect(log).to.deep.equal(['first', 'second']);
  });

  it('setNow never moves time back; fireDue fires only what is due and counts it', () => {
    const clock = new SteppedClock();
    void clock.sleep(0.1);
    void clock.sleep(0.2);
    clock.setNow(0.15);
    clock.setNow(0.05);
    expect(clock.now()).to.equal(0.15);
    expect(clock.fireDue()).to.equal(1);
    expect(clock.fireDue()).to.equal(0);
    expect(clock.pendingTimers()).to.equal(1);
    expect(clock.nextDue()).to.equal(0.2);
  });

  it('a negative sleep is a sleep of 0, due now', async () => {
    const clock = new SteppedClock();
    let fired = false;
    void clock.sleep(-1).then(() => (fired = true));
    expect(clock.nextDue()).to.equal(0);
    await advanceManualClock(clock, 0);
    expect(fired).to.equal(true);
  });
});

describe('WallClock', () => {
  it('an aborted sleep rejects at once with an AbortError', async () => {
    const clock = new WallClock();
    const ac = new AbortController();
    const p = clock.sleep(60, ac.signal);
    ac.abort();
    let err: unknown;
    await p.catch((e: unknown) => (err = e));
    expect(isAbortError(err)).to.equal(true);
    expect(clock.now()).to.be.within(0, 5);
  });

  it('never wakes before its time', async () => {
    const clock = new WallClock();
    for (let i = 0; i < 20; i++) {
      const t = clock.now() + 0.003;
      await clock.sleepUntil(t);
      expect(clock.now()).to.be.at.least(t);
    }
  });

  it('with wakeEarlyMs 0 it waits on its timer alone: never early, a turn or two of the event loop a wait', async () => {
    const clock = new WallClock({ wakeEarlyMs: 0 });
    const real = globalThis.setImmediate;
    let turns = 0;
    globalThis.setImmediate = ((...args: Parameters<typeof setImmediate>) => {
      turns++;
      return real(...args);
    }) as typeof setImmediate;
    try {
      for (let i = 0; i < 10; i++) {
        const t = clock.now() + 0.01;
        await clock.sleepUntil(t);
        expect(clock.now()).to.be.at.least(t);
      }
    } finally {
      globalThis.setImmediate = real;
    }
    // Woken 1 ms early, the default clock yields turns until the time: hundreds of them over these ten waits.
    expect(turns).to.be.at.most(20);
  });

  it("a wait already due costs a turn of the event loop, not a timer's 1 ms floor", async () => {
    const clock = new WallClock();
    const started = performance.now();
    for (let i = 0; i < 200; i++) await clock.sleepUntil(clock.now());
    // With setTimeout(0) the 200 waits took at least 200 ms.
    expect(performance.now() - started).to.be.below(100);
  });
});

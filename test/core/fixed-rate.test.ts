/**
 * The fixed-rate loop on a manual clock: cycles on the period's grid, late cycles told their lateness and caught up
 * back to back, a loop far behind restarted from now instead of bursting, and an abort that ends it at once.
 */
import { expect } from 'chai';
import { SteppedClock, advanceManualClock, flushMicrotasks } from '../../src/core/clock.ts';
import { MAX_BEHIND_PERIODS, runFixedRate } from '../../src/core/fixed-rate.ts';

const PERIOD = 0.02;
const round = (x: number) => Math.round(x * 1e6) / 1e6;

/** Runs the loop, recording [start time, lateness] of each cycle; `slow` says how long cycle n takes (clock s). */
function startLoop(clock: SteppedClock, slow: (n: number) => number = () => 0) {
  const cycles: [number, number][] = [];
  const stop = new AbortController();
  const done = runFixedRate(clock, PERIOD, stop.signal, async (late) => {
    cycles.push([round(clock.now()), round(late)]);
    const takes = slow(cycles.length);
    if (takes > 0) await clock.sleep(takes);
  });
  return { cycles, stop, done };
}

describe('runFixedRate', () => {
  it('runs one cycle per period on the grid, none before the first period', async () => {
    const clock = new SteppedClock();
    const { cycles, stop, done } = startLoop(clock);
    await advanceManualClock(clock, 0.019);
    expect(cycles).to.deep.equal([]);
    await advanceManualClock(clock, 0.081);
    expect(cycles).to.deep.equal([
      [0.02, 0],
      [0.04, 0],
      [0.06, 0],
      [0.08, 0],
      [0.1, 0],
    ]);
    stop.abort();
    await done;
  });

  it('catches up a slow cycle back to back, telling each late cycle its lateness', async () => {
    const clock = new SteppedClock();
    // The first cycle takes 2.5 periods: the two cycles it overlapped run at once after it, late.
    const { cycles, stop, done } = startLoop(clock, (n) => (n === 1 ? 0.05 : 0));
    await advanceManualClock(clock, 0.1);
    expect(cycles).to.deep.equal([
      [0.02, 0],
      [0.07, 0.03],
      [0.07, 0.01],
      [0.08, 0],
      [0.1, 0],
    ]);
    stop.abort();
    await done;
  });

  it(`restarts from now when more than ${MAX_BEHIND_PERIODS} periods behind, instead of bursting`, async () => {
    const clock = new SteppedClock();
    // The first cycle takes 10 periods: the next one starts at once, on time by the new schedule, then the grid again.
    const { cycles, stop, done } = startLoop(clock, (n) => (n === 1 ? 10 * PERIOD : 0));
    await advanceManualClock(clock, 0.27);
    expect(cycles).to.deep.equal([
      [0.02, 0],
      [0.22, 0],
      [0.24, 0],
      [0.26, 0],
    ]);
    stop.abort();
    await done;
  });

  it('ends when aborted during its wait, and runs no cycle after', async () => {
    const clock = new SteppedClock();
    const { cycles, stop, done } = startLoop(clock);
    await advanceManualClock(clock, 0.03);
    let ended = false;
    void done.then(() => (ended = true));
    stop.abort();
    await flushMicrotasks();
    expect(ended).to.equal(true);
    await advanceManualClock(clock, 0.1);
    expect(cycles).to.have.length(1);
    expect(clock.pendingTimers()).to.equal(0);
  });

  it('ends after the cycle in progress when aborted during it', async () => {
    const clock = new SteppedClock();
    const stop = new AbortController();
    let cycles = 0;
    const done = runFixedRate(clock, PERIOD, stop.signal, () => {
      cycles++;
      stop.abort();
    });
    await advanceManualClock(clock, 0.1);
    await done;
    expect(cycles).to.equal(1);
  });

  it('rejects with what a cycle throws', async () => {
    const clock = new SteppedClock();
    const done = runFixedRate(clock, PERIOD, new AbortController().signal, () => {
      throw new Error('cycle broke');
    });
    const outcome = done.then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    await advanceManualClock(clock, 0.05);
    expect(await outcome).to.equal('cycle broke');
  });
});

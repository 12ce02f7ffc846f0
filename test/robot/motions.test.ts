/** Gotos' ends: `done` tells how a goto ended whenever it is read, before or after the end. */
import { expect } from 'chai';
import { Motions } from '../../src/robot/motions.ts';
import type { Motor } from '../../src/robot/motor.ts';
import { motorsOf } from '../scenario/helpers.ts';

describe('robot: motions', () => {
  let m1: Motor;
  let m2: Motor;
  before(async () => {
    [m1, m2] = (await motorsOf('ergo-jr')) as [Motor, Motor];
    m1.commands.compliant = false;
    m2.commands.compliant = false;
  });

  it('a goto read only after its end says it reached its target', async () => {
    const motions = new Motions();
    const started = motions.goto(new Map([[m1, 20]]), 1, 0);
    motions.step(0.5);
    expect(motions.isMoving(m1)).to.equal(true);
    motions.step(1);
    expect(motions.isMoving(m1)).to.equal(false);
    expect(m1.commands.goalPosition).to.equal(20);
    expect(await started.done).to.deep.equal({ cancelled: false });
  });

  it('a goto read before a newer one takes its motor over says it was cancelled', async () => {
    const motions = new Motions();
    const first = motions.goto(new Map([[m1, 20]]), 1, 0);
    const done = first.done;
    const second = motions.goto(new Map([[m1, -20]]), 1, 0.2);
    expect(await done).to.deep.equal({ cancelled: true });
    motions.step(1.2);
    expect(await second.done).to.deep.equal({ cancelled: false });
  });

  it('a goto of two motors is cancelled if either is taken over, read late or early', async () => {
    const motions = new Motions();
    const both = motions.goto(
      new Map([
        [m1, 10],
        [m2, 10],
      ]),
      1,
      0,
    );
    motions.goto(new Map([[m2, 0]]), 1, 0.1);
    motions.step(2);
    expect(await both.done).to.deep.equal({ cancelled: true });
    const again = motions.goto(
      new Map([
        [m1, 5],
        [m2, 5],
      ]),
      1,
      2,
    );
    const early = again.done;
    motions.cancelAll();
    expect(await early).to.deep.equal({ cancelled: true });
  });

  it('the targets are clamped into the angle limits', () => {
    const motions = new Motions();
    const started = motions.goto(new Map([[m1, 1000]]), 1, 0);
    expect(started.targets.get(m1)).to.equal(m1.maxAngle);
  });
});

/**
 * The fit's least-squares tools (src/calibration/least-squares.ts) on problems whose answer is known, and where its
 * last stage starts (fit.ts `frictionStart`).
 */
import { expect } from 'chai';
import { frictionStart } from '../../src/calibration/fit.ts';
import { nelderMead, polish } from '../../src/calibration/least-squares.ts';

/** y = a * exp(-b t) + c sampled at 40 points, x = [c, log a, log b]: the fit's shape (log coordinates). */
const T = Array.from({ length: 40 }, (_, k) => k * 0.1);
const truth = [0.3, Math.log(2), Math.log(0.7)];
const model = (x: readonly number[], t: number) => Math.exp(x[1]!) * Math.exp(-Math.exp(x[2]!) * t) + x[0]!;
const data = T.map((t) => model(truth, t));
const residuals = async (x: readonly number[]) => Float64Array.from(T, (t, k) => model(x, t) - data[k]!);

describe("the fit's least-squares tools", () => {
  it('Levenberg-Marquardt steps reach the optimum of the free coordinates, the held one left', async () => {
    const start = [0.3, Math.log(1.2), Math.log(1.5)];
    const { x, r, lastStep } = await polish(residuals, start, [1, 2], 8);
    expect(x[0]).to.equal(0.3);
    expect(Math.exp(x[1]!)).to.be.closeTo(2, 1e-4);
    expect(Math.exp(x[2]!)).to.be.closeTo(0.7, 1e-4);
    expect(Math.max(...r.map(Math.abs))).to.be.below(1e-5);
    expect(Math.abs(lastStep[1]!)).to.be.below(1e-3);
  });

  it('one step from far away lowers the error and reports the distance still to go', async () => {
    // One iteration from far away: the step it takes is large, and says the optimum is not reached.
    const start = [0.3, Math.log(0.5), Math.log(3)];
    const before = await residuals(start);
    const { r, lastStep } = await polish(residuals, start, [1, 2], 1);
    const sq = (v: Float64Array) => v.reduce((s, e) => s + e * e, 0);
    expect(sq(r)).to.be.at.most(sq(before));
    expect(Math.hypot(lastStep[1]!, lastStep[2]!)).to.be.above(0.1);
  });

  it('Nelder-Mead holds a coordinate with a zero step and lowers the cost', async () => {
    const cost = async (x: number[]) => (await residuals(x)).reduce((s, e) => s + e * e, 0);
    const start = [0.1, Math.log(1.2), Math.log(1.5)];
    const x = await nelderMead(cost, start, [0, 0.3, 0.3], 60);
    expect(x[0]).to.equal(0.1);
    expect(await cost(x)).to.be.below(await cost(start));
  });
});

describe("where the whole run's fit starts", () => {
  // A release's cost: flat wherever the friction holds the link (log friction over -0.2), a valley below it.
  const release = async (x: readonly number[]) => {
    const friction = (x[3]! + x[4]!) / 2;
    return friction > -0.2 ? 1.7 : 0.4 + (friction + 0.62) ** 2 + (x[1]! - 0.1) ** 2;
  };

  it('leaves a plateau for the friction that replays the run best, the other figures as they were', async () => {
    const start = [0.5, 0.1, -0.2, 1.4, 1.1];
    const y = await frictionStart(release, start);
    expect(y.slice(0, 3)).to.deep.equal([0.5, 0.1, -0.2]);
    expect(y[3]).to.equal(-Math.LN2);
    expect(y[4]).to.equal(-Math.LN2);
  });

  it('keeps a start better than any friction scanned', async () => {
    const start = [0, 0.1, 0, -0.62, -0.62];
    expect(await frictionStart(release, start)).to.deep.equal(start);
  });
});

/**
 * The fit's least-squares tools (src/calibration/least-squares.ts) on problems whose answer is known, and where its
 * last stage starts (fit.ts `frictionStart`, `afterOffsetStage`), and what it counts of an error against a rounded reading (`beyondCount`).
 */
import { expect } from 'chai';
import { afterOffsetStage, beyondCount, frictionStart, stillSamples } from '../../src/calibration/fit.ts';
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

  // [offset, log gain, log armature, log kv, log kcs]: the dynamics' stage, then the approaches' (offset and gain).
  const dynamics = [0, -0.065, 0.175, 0.095, 0.239];
  const staged = [2.4, -0.162, 0.175, 0.095, 0.239];

  it('goes on from the offset and gain the approaches fitted when the offset is kept', () => {
    expect(afterOffsetStage(dynamics, staged, true)).to.deep.equal(staged);
  });

  it('takes back the gain the approaches moved with an offset that is not kept', () => {
    expect(afterOffsetStage(dynamics, staged, false)).to.deep.equal([0, -0.065, 0.175, 0.095, 0.239]);
  });
});

describe("the fit's error against a rounded reading", () => {
  const q = 0.29; // an XL-320's or AX-12A's count (degrees)
  const read = (deg: number) => Math.round(deg / q) * q;
  const sq = (r: Float64Array) => r.reduce((s, v) => s + v * v, 0);

  it('counts only what lies beyond the half count, with its sign', () => {
    const r = beyondCount(Float64Array.from([0.1, -0.14, 0.145, 0.4, -0.4]), q / 2);
    expect([...r].map((v) => Number(v.toFixed(6)))).to.deep.equal([0, 0, 0, 0.255, -0.255]);
  });

  it('a joint at rest is a reading equal to both its neighbours; only its errors lose the half count', () => {
    const logged = [0, 0.29, 0.29, 0.29, 0.58, 0.58, 0.87, 0.87, 0.87, 0.87];
    const still = stillSamples(logged);
    expect([...still]).to.deep.equal([0, 0, 1, 0, 0, 0, 0, 1, 1, 0]);
    const r = beyondCount(new Float64Array(10).fill(0.1), q / 2, still);
    expect([...r]).to.deep.equal([0.1, 0.1, 0, 0.1, 0.1, 0.1, 0.1, 0, 0, 0.1]);
    // A window of the run: the mask read from its first sample on.
    expect([...beyondCount(new Float64Array(3).fill(0.1), q / 2, still, 6)]).to.deep.equal([0.1, 0, 0]);
  });

  it('a joint at rest: any twin within the reading count costs nothing, so no figure wins by moving it there', () => {
    const logged = new Float64Array(100).fill(read(10.1)); // at rest 0.1 degree past a count's centre, for 2 s
    const still = stillSamples(logged);
    const atTruth = Float64Array.from(logged, () => 10.1);
    const atCentre = Float64Array.from(logged, () => read(10.1));
    // Plainly the twin at the count's centre would win the hold's whole error over the true angle.
    expect(sq(atCentre.map((v, k) => v - logged[k]!))).to.be.below(sq(atTruth.map((v, k) => v - logged[k]!)));
    // The hold's cost to the fit, its two ends (one neighbour each) left out.
    const holdCost = (twin: Float64Array) =>
      sq(
        beyondCount(
          twin.map((v, k) => v - logged[k]!),
          q / 2,
          still,
        ).subarray(1, 99),
      );
    expect(holdCost(atTruth)).to.equal(0);
    expect(holdCost(atCentre)).to.equal(0);
  });

  it('a moving joint keeps its whole error: a twin a third of a count behind costs as plainly', () => {
    const angle = Array.from({ length: 200 }, (_, k) => 0.37 * k); // over a count per sample: never still
    const logged = angle.map(read);
    const still = stillSamples(logged);
    expect(still.some(Boolean)).to.equal(false);
    const errors = (lag: number) => Float64Array.from(angle, (a, k) => a - lag - logged[k]!);
    for (const lag of [q / 3, (2 * q) / 3])
      expect(sq(beyondCount(errors(lag), q / 2, still))).to.equal(sq(errors(lag)));
  });
});

/**
 * A fitted figure's sigma (src/calibration/fit.ts `uncertainty`) carries how well the other servos are known: on a
 * linear problem whose answer is known, a neighbour one sigma off that looks like a shift of one figure widens that
 * figure's sigma by exactly the shift, and no other's; and fitRobot's view of the others (`neighbourSigmas`).
 */
import { expect } from 'chai';
import { defaultCalibration } from '../../src/calibration/defaults.ts';
import {
  PRIOR_LOG_SIGMA,
  PRIOR_OFFSET_SIGMA_DEG,
  neighbourShifts,
  uncertainty,
} from '../../src/calibration/fit.ts';
import type { ServoParams } from '../../src/config/calibration.ts';
import { neighbourSigmas } from '../../src/calibration/fit-robot.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';

/** r_k = sum_i A_ki x_i - y_k over 400 samples: x = [offset, four figures], y the truth plus seeded noise. */
const N = 400;
const rnd = mulberry32(7);
const A = Array.from({ length: N }, (_, k) => [
  0.2,
  Math.sin(k / 9),
  Math.cos(k / 23),
  (k % 50) / 50,
  k < N / 2 ? 1 : -0.5,
]);
const truth = [0, 0.1, -0.2, 0.3, 0.05];
const y = A.map((row) => row.reduce((s, a, i) => s + a * truth[i]!, 0) + 0.01 * (rnd() - 0.5));
const residuals = async (x: readonly number[]) =>
  Float64Array.from(A, (row, k) => row.reduce((s, a, i) => s + a * x[i]!, 0) - y[k]!);
const segments = Array.from({ length: 10 }, (_, g): [number, number] => [g * 40, (g + 1) * 40]);

describe("a fitted figure's sigma and the other servos", () => {
  it('a neighbour one sigma off that mimics a figure widens that figure by the shift it causes, and no other', async () => {
    const x = truth;
    const r0 = await residuals(x);
    const alone = await uncertainty(residuals, x, r0, segments, 0);
    // The neighbour's effect is the second figure's column times 0.04: the fit would put 0.04 less in that figure.
    const dr = Float64Array.from(A, (row) => row[2]! * 0.04);
    const beside = await uncertainty(residuals, x, r0, segments, 0, [dr]);
    expect(beside[2]!).to.be.closeTo(Math.hypot(alone[2]!, 0.04), 1e-6);
    for (const i of [1, 3, 4]) expect(beside[i]!, `figure ${i}`).to.be.closeTo(alone[i]!, 1e-6);
    expect(alone[2]!, 'the noise alone pins it much better').to.be.below(0.004);
  });

  it('two neighbours add as independent errors', async () => {
    const x = truth;
    const r0 = await residuals(x);
    const alone = await uncertainty(residuals, x, r0, segments, 0);
    const a = Float64Array.from(A, (row) => row[1]! * 0.03);
    const b = Float64Array.from(A, (row) => row[1]! * -0.04);
    const both = await uncertainty(residuals, x, r0, segments, 0, [a, b]);
    expect(both[1]!).to.be.closeTo(Math.hypot(alone[1]!, 0.03, 0.04), 1e-6);
  });

  it("a neighbour's offset, where its sigma is known, is one more error: the change when it is one sigma off", async () => {
    const config = await loadRobotConfig('ergo-jr');
    // A stand-in forward model: the residuals move with m3's offset (0.1 a degree) and its gain (1 per unit of log).
    const seen: ServoParams[] = [];
    const around = async (others: ReadonlyMap<number, ServoParams>) => {
      const m3 = others.get(3)!;
      seen.push(m3);
      return Float64Array.from({ length: 4 }, () => 0.1 * m3.offsetDeg + Math.log(m3.errorGain));
    };
    const sigmas = { gain: 0.05, armature: 0.1, kv: 0.2, kcs: 0.2 };
    const withOffset = await neighbourShifts(
      config,
      2,
      new Map([[3, { ...sigmas, offsetDeg: 0.7 }]]),
      undefined,
      around,
    );
    expect(withOffset).to.have.length(2);
    expect(
      [...withOffset[0]!].every((v) => Math.abs(v - 0.05) < 1e-9),
      'the dynamics one sigma up',
    ).to.equal(true);
    expect(
      [...withOffset[1]!].every((v) => Math.abs(v - 0.07) < 1e-9),
      'the offset one sigma off',
    ).to.equal(true);
    expect(seen.at(-1)!.errorGain, 'the offset moved alone').to.equal(seen[0]!.errorGain);
    expect(await neighbourShifts(config, 2, new Map([[3, sigmas]]), undefined, around)).to.have.length(1);
  });

  it("the others' sigmas: a figure's and an offset's own where the file has one, the prior's where it has none; not the motor's own", async () => {
    const config = await loadRobotConfig('ergo-jr');
    const cal = defaultCalibration(config);
    const m2 = cal.motors.m2!;
    m2.gain = { value: 0.05, sigma: 0.005 };
    m2.friction.kv = { value: 0.01, sigma: 0.02 };
    m2.offset = { value: 1.2, sigma: 0.6 };
    const s = neighbourSigmas(config, cal, 1);
    expect([...s.keys()]).to.deep.equal([2, 3, 4, 5, 6]);
    expect(s.get(2)!.gain).to.be.closeTo(Math.log(1.1), 1e-12);
    expect(s.get(2)!.kv).to.be.closeTo(Math.log(3), 1e-12);
    expect(s.get(2)!.armature).to.equal(PRIOR_LOG_SIGMA.armature);
    expect(s.get(2)!.offsetDeg).to.equal(0.6);
    expect(s.get(3)).to.deep.equal({ ...PRIOR_LOG_SIGMA, offsetDeg: PRIOR_OFFSET_SIGMA_DEG });
    // Friction x0.5-x2 log-uniform: ln 4 / sqrt 12.
    expect(PRIOR_LOG_SIGMA.kv).to.be.closeTo(0.4002, 1e-4);
  });
});

/** The second pass's sigmas (src/calibration/fit-robot.ts): what the others' figures moved a figure by is a floor. */
import { expect } from 'chai';
import { defaultMotorCalibration } from '../../src/calibration/defaults.ts';
import type { FitResult } from '../../src/calibration/fit.ts';
import { widened } from '../../src/calibration/fit-robot.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';

/** A fit result of m1 whose figures are `value` with `sigma`, every one identified. */
function result(values: Record<'gain' | 'armature' | 'kv' | 'kcs', number>, sigma: number): FitResult {
  const c = defaultMotorCalibration({ id: 1, model: 'XL-320' } as never);
  const f = (v: number) => ({ value: v, sigma: v * sigma });
  return {
    evaluations: 1,
    estimates: {
      offset: { value: 0, sigma: 3 },
      gain: f(values.gain),
      armature: f(values.armature),
      kv: f(values.kv),
      kcs: f(values.kcs),
    },
    calibration: {
      ...c,
      gain: f(values.gain),
      armature: f(values.armature),
      friction: { ...c.friction, kv: f(values.kv), kcs: f(values.kcs) },
      residualRmsDeg: 0.1,
      notIdentifiable: ['kc', 'offset'],
    },
  };
}

describe("a calibration's second pass", () => {
  it('a figure the others moved by more than the tolerance is said not identifiable, its estimate kept', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const first = result({ gain: 0.05, armature: 0.00153, kv: 0.0072, kcs: 0.0163 }, 0.01);
    // The armature moved 12 % between the passes, the others under 1 %.
    const second = result({ gain: 0.0502, armature: 0.00137, kv: 0.00722, kcs: 0.0163 }, 0.01);
    const w = widened(second, first, config, 'm1');
    expect(w.calibration.notIdentifiable).to.deep.equal(['kc', 'offset', 'armature']);
    expect(w.calibration.armature.value).to.equal(0.00137);
    // Two pass moves as its sigma (PASS_SHIFT_SIGMAS).
    expect(w.calibration.armature.sigma).to.be.closeTo(0.00032, 1e-6);
    expect(w.estimates.armature.sigma).to.be.closeTo(0.00032, 1e-6);
    // Moved less than half its own sigma: unchanged.
    expect(w.calibration.gain.value).to.equal(0.0502);
    expect(w.calibration.gain.sigma).to.be.closeTo(0.000502, 1e-9);
    expect(w.calibration.friction.kcs!.sigma).to.be.closeTo(second.calibration.friction.kcs!.sigma!, 1e-9);
  });

  it('a figure moved by more than itself goes back to the model', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const first = result({ gain: 0.05, armature: 0.004, kv: 0.0072, kcs: 0.0163 }, 0.01);
    const second = result({ gain: 0.05, armature: 0.0015, kv: 0.0072, kcs: 0.0163 }, 0.01);
    const w = widened(second, first, config, 'm1');
    expect(w.calibration.armature).to.deep.equal({ value: 0.001163, sigma: null });
    expect(w.calibration.notIdentifiable).to.include('armature');
  });
});

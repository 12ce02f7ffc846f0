/**
 * A robot's fit (src/calibration/fit-robot.ts): the order of the motors, what each fit knows of the others, and the
 * second pass's sigmas (what the others' figures moved a figure by is a floor).
 */
import { expect } from 'chai';
import type { FitResult } from '../../src/calibration/fit.ts';
import { defaultCalibration, defaultMotorCalibration } from '../../src/calibration/defaults.ts';
import { fitOrder, othersKnown, widened } from '../../src/calibration/fit-robot.ts';
import type { MotorLog } from '../../src/calibration/run.ts';
import { servoParamsOf } from '../../src/config/calibration.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

describe("a robot's fit: the order and the others", () => {
  it('fits the joints that carry least first: the Ergo Jr from its wrist down, the Torso from its elbows to abs_z', async () => {
    for (const [robot, first, last] of [
      ['ergo-jr', ['m6', 'm5', 'm4', 'm3', 'm2', 'm1'], []],
      ['torso', ['r_elbow_y', 'l_elbow_y'], ['bust_x', 'bust_y', 'abs_z']],
    ] as const) {
      const config = await loadRobotConfig(robot);
      const urdf = await loadUrdf(config.urdfPath);
      // The logs in the config's order; only the motor's name matters to the order.
      const logs = config.motors.map((m) => ({ motor: m.name }) as MotorLog);
      const order = fitOrder(urdf, logs).map((l) => l.motor);
      expect(order).to.have.members(config.motors.map((m) => m.name));
      expect(order.slice(0, first.length), robot).to.deep.equal(first);
      expect(order.slice(order.length - last.length), robot).to.deep.equal(last);
    }
  });

  it("a fit sees the figures fitted before it, the others' models with their touched offsets", async () => {
    const config = await loadRobotConfig('ergo-jr');
    const cal = defaultCalibration(config);
    const model = servoParamsOf(defaultCalibration(config));
    cal.motors.m6 = {
      ...cal.motors.m6!,
      armature: { value: 0.5, sigma: 0.01 },
      offset: { value: 2, sigma: 0.1 },
    };
    const touched = new Map([
      ['m6', { value: 2, sigma: 0.5 }],
      ['m5', { value: -1, sigma: 0.5 }],
    ]);
    expect(othersKnown(config, cal, new Set(), undefined)).to.equal(undefined);
    const view = othersKnown(config, cal, new Set(['m6']), touched)!;
    const id = (name: string) => config.motors.find((m) => m.name === name)!.id;
    expect(view.get(id('m6'))!.armature).to.equal(0.5);
    expect(view.get(id('m6'))!.offsetDeg).to.equal(2);
    expect(view.get(id('m5'))).to.deep.equal({ ...model.get(id('m5'))!, offsetDeg: -1 });
    expect(view.get(id('m4'))).to.deep.equal(model.get(id('m4')));
  });
});

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

  it("a run the twin did not reproduce keeps the model's figures in the second pass too", async () => {
    const config = await loadRobotConfig('ergo-jr');
    const first = result({ gain: 0.05, armature: 0.00153, kv: 0.0072, kcs: 0.0163 }, 0.01);
    const model = defaultMotorCalibration({ id: 1, model: 'XL-320' } as never);
    const fitted = result({ gain: 0.03, armature: 0.0004, kv: 0.0072, kcs: 0.0007 }, 0.5);
    const second: FitResult = {
      ...fitted,
      notReproduced: true,
      calibration: { ...model, residualRmsDeg: 4.2, notIdentifiable: ['kc', 'offset', 'gain'], note: 'x' },
    };
    // Its estimates moved far and their sigmas are under 100 %: a reproduced run's would be kept (decision 0064).
    const w = widened(second, first, config, 'm1');
    expect(w.calibration).to.deep.equal(second.calibration);
    expect(w.calibration.gain).to.deep.equal(model.gain);
  });
});

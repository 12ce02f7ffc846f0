/**
 * Calibration runs on the emulator at the manual clock: servos with seeded random true parameters, one joint run
 * and fitted (the whole robot is bench/calibration.ts); the sim backend refused with a tip; a run stopped early.
 */
import { expect } from 'chai';
import { SIM_REFUSAL, main } from '../../src/calibration/cli.ts';
import { clearExcitation } from '../../src/calibration/clearance.ts';
import { MAX_REPRODUCED_RESIDUAL_DEG, fitMotor } from '../../src/calibration/fit.ts';
import { replayRms } from '../../src/calibration/forward.ts';
import { type Rig, runMotor } from '../../src/calibration/run.ts';
import { drawTrueParams } from '../../src/calibration/truth.ts';
import { servoParamsOf } from '../../src/config/calibration.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { modelSpec } from '../../src/dynamixel/registers.ts';
import { servoModel } from '../../src/sim/servo-models.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

async function emulated(robot: string, seed: number) {
  const config = await loadRobotConfig(robot);
  const truth = drawTrueParams(config, seed);
  const emu = await emulateBus({ robot, speed: 'manual', servoParams: truth });
  const rig: Rig = { bus: emu.sim.bus, now: () => emu.sim.clock.now(), wait: (s) => emu.sim.advance(s) };
  return { config, truth, emu, rig, urdf: await loadUrdf(config.urdfPath) };
}

describe('calibration runs (npm run calibrate)', function () {
  // A motor's fit replays its 38 s run on the whole twin a hundred times or more: 2.7 minutes alone on a loaded
  // 2-core machine, over 3 beside the parallel suite.
  this.timeout(360000);

  it('refuses the sim backend with a tip', async () => {
    const lines: string[] = [];
    const original = console.error;
    console.error = (line: string) => lines.push(line);
    try {
      expect(await main(['node', 'calibrate', '--backend=sim'])).to.equal(2);
    } finally {
      console.error = original;
    }
    expect(lines).to.deep.equal([SIM_REFUSAL]);
    expect(SIM_REFUSAL).to.match(/tip: .*--backend=real/);
  });

  it('a stopped run ends at once with what it logged', async () => {
    const { config, emu, rig } = await emulated('ergo-jr', 3);
    try {
      let samples = 0;
      const log = await runMotor({ ...rig, stopped: () => ++samples > 50 }, config, 'm3');
      expect(log.t.length).to.equal(50);
    } finally {
      await emu.close();
    }
  });

  it("a motor that does not answer the settle's read is left out of the run's start", async () => {
    const { config, emu, rig } = await emulated('ergo-jr', 3);
    try {
      const bus = rig.bus;
      // The emulated bus, but motor 6 never in a read's answer.
      const deaf = new Proxy(bus, {
        get(target, prop) {
          if (prop === 'read')
            return async (ids: readonly number[], reg: Parameters<Rig['bus']['read']>[1]) => {
              const values = await target.read(ids, reg);
              values.delete(6);
              return values;
            };
          const value: unknown = Reflect.get(target, prop);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const log = await runMotor({ ...rig, bus: deaf, stopped: () => true }, config, 'm3');
      expect(Object.keys(log.startReadings!)).to.have.members(['m1', 'm2', 'm3', 'm4', 'm5']);
      expect(Object.values(log.startReadings!).every(Number.isFinite)).to.equal(true);
    } finally {
      await emu.close();
    }
  });

  it('Ergo Jr m2: 38 s of robot time, clear of the table; the offset said not identifiable, the gain within 15 %', async () => {
    const { config, truth, emu, rig, urdf } = await emulated('ergo-jr', 1);
    try {
      // As the CLI runs it: the widest swing the twin predicts clear of the table (+-14 degrees: clearance.test.ts).
      const plan = await clearExcitation(config, urdf, 'm2');
      const log = await runMotor(rig, config, 'm2', undefined, plan.excitation);
      expect(log.t.length * 0.02).to.be.closeTo(38, 0.01);
      expect(log.segments.filter(([name]) => name.startsWith('approach-'))).to.have.length(6);
      // The run reads where the settle left every joint (from the emulator's folded start, m2 stays short of its
      // pose), and the forward model starts there: at the true figures it replays the run within a tenth of a
      // degree or so (from the pose told instead, 0.45 degree RMS, 6.4 at worst, on seed 2).
      expect(Object.keys(log.startReadings!)).to.have.members(config.motors.map((m) => m.name));
      expect(log.startReadings!.m2).to.be.closeTo(log.position[0]!, 0.3);
      expect(await replayRms(config, urdf, log, servoParamsOf(truth))).to.be.below(0.15);
      const { calibration: c, estimates } = await fitMotor(config, urdf, log, {
        dynamics: 25,
        offset: 10,
        all: 10,
      });
      const tr = truth.motors.m2!;
      expect(c.residualRmsDeg).to.be.a('number').below(2);
      // The offset: within 0.3 degree, or said not identifiable with the default kept (decision 0062: today the
      // latter, its sigma wide).
      if (!c.notIdentifiable.includes('offset'))
        expect(Math.abs(c.offset.value - tr.offset.value)).to.be.below(0.3);
      else {
        expect(c.offset).to.deep.equal({ value: 0, sigma: null });
        expect(estimates.offset.sigma).to.be.above(0.15);
      }
      const figures = [
        ['gain', c.gain],
        ['armature', c.armature],
        ['kv', c.friction.kv!],
        ['kcs', c.friction.kcs!],
      ] as const;
      const truths = {
        gain: tr.gain.value,
        armature: tr.armature.value,
        kv: tr.friction.kv!.value,
        kcs: tr.friction.kcs!.value,
      };
      // Every figure called identified is within 15 % of the truth (with the encoder read a step behind the joint:
      // decision 0073); a figure not identified keeps its estimate while its sigma is under 100 % (decision 0064).
      for (const [name, found] of figures)
        if (!c.notIdentifiable.includes(name)) {
          expect(found.sigma, name).to.be.a('number');
          expect(Math.abs(found.value / truths[name] - 1), name).to.be.below(0.15);
        } else if (found.sigma !== null) expect(found.sigma / found.value, name).to.be.within(0.075, 1);
      expect(Math.abs(c.gain.value / tr.gain.value - 1)).to.be.below(0.15);
      expect(c.notIdentifiable).to.include('kc');
      expect(c.notIdentifiable).to.not.include('gain');
    } finally {
      await emu.close();
    }
  });

  it("a run the twin cannot reproduce (a horn that slipped 8 degrees) keeps the model's figures and says why", async () => {
    const { config, emu, rig, urdf } = await emulated('ergo-jr', 1);
    try {
      const plan = await clearExcitation(config, urdf, 'm6');
      const log = await runMotor(rig, config, 'm6', undefined, plan.excitation);
      // From the steps on, the encoder reads 8 degrees more: no servo figures replay that.
      const slip = log.segments.find(([name]) => name === 'steps@1023')![1] / 0.02;
      const position = log.position.map((p, k) => (k >= slip ? p + 8 : p));
      const touched = { value: 1.2, sigma: 0.4 };
      const { calibration: c, notReproduced } = await fitMotor(
        config,
        urdf,
        { ...log, position },
        { dynamics: 8, offset: 3, all: 3 },
        { touched },
      );
      const model = servoModel(modelSpec('XL-320'));
      expect(notReproduced).to.equal(true);
      expect(c.gain).to.deep.equal({ value: model.errorGain, sigma: null });
      expect(c.armature).to.deep.equal({ value: model.armature, sigma: null });
      expect(c.friction.kv).to.deep.equal({ value: model.friction.kv, sigma: null });
      expect(c.friction.kcs).to.deep.equal({ value: model.friction.kcs, sigma: null });
      // The table placed the offset, not this run: kept.
      expect(c.offset).to.deep.equal(touched);
      expect(c.notIdentifiable).to.have.members(['kc', 'gain', 'armature', 'kv', 'kcs']);
      expect(c.note).to.match(/did not reproduce its run \([0-9.]+ degrees RMS/);
      // What the twin leaves with the figures written: the slip's, far over a reproduced run's.
      expect(c.residualRmsDeg).to.be.above(MAX_REPRODUCED_RESIDUAL_DEG);
    } finally {
      await emu.close();
    }
  });
});

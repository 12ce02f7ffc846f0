/**
 * Offsets from touches of the table (src/calibration/touch.ts, touch-fit.ts; src/sim/table-gap.ts): the twin plans
 * each press, the emulated robot runs it, and the geometry of the readings puts the offsets where the link lies on
 * the table, with sigmas that cover what a press's sink leaves.
 */
import { expect } from 'chai';
import { PRIOR_OFFSET_SIGMA_DEG } from '../../src/calibration/fit.ts';
import { fitInWorker } from '../../src/calibration/fit-thread.ts';
import { fitTouches, touchFitLine } from '../../src/calibration/touch-fit.ts';
import { defaultCalibration } from '../../src/calibration/defaults.ts';
import {
  TOUCHES,
  type TouchLog,
  planTouch,
  resinkTouches,
  runTouch,
  runTouches,
  touchLine,
} from '../../src/calibration/touch.ts';
import { drawTrueParams } from '../../src/calibration/truth.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { modelSpec, positionResolution } from '../../src/dynamixel/registers.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { type TableGeometry, tableGeometry } from '../../src/sim/table-gap.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

const DEG = Math.PI / 180;

async function ergoJr() {
  const config = await loadRobotConfig('ergo-jr');
  return { config, urdf: await loadUrdf(config.urdfPath) };
}

/** The offsets the synthetic touches are made with (degrees). */
const TRUTH: Record<string, number> = { m1: 3, m2: 2, m3: -3, m4: 1, m5: -2, m6: 1.5 };

/**
 * Touches as the geometry makes them: for poses of the Ergo Jr's arm, m2 where the tip, sunk up to a millimetre (seeded),
 * meets the table (by bisection), every reading the joint's angle plus its offset, rounded to the XL-320's count.
 */
function syntheticTouches(geo: TableGeometry, truth: Record<string, number>): TouchLog[] {
  const count = positionResolution(modelSpec('XL-320'));
  const rnd = mulberry32(7);
  const logs: TouchLog[] = [];
  for (const m3 of [-30, -10, 10, 30])
    for (const [m4, m5, m6] of [
      [0, 0, 0],
      [45, -30, 30],
      [90, 30, -30],
    ]) {
      const sink = -0.001 * rnd();
      const physical = new Map([
        ['m1', 10 * DEG],
        ['m3', m3 * DEG],
        ['m4', m4! * DEG],
        ['m5', m5! * DEG],
        ['m6', m6! * DEG],
      ]);
      let [hi, lo] = [0, -90];
      for (let k = 0; k < 40; k++) {
        const mid = (hi + lo) / 2;
        const gap = geo.gap('tip', new Map([...physical, ['m2', mid * DEG]]));
        if (gap > sink) hi = mid;
        else lo = mid;
      }
      physical.set('m2', hi * DEG);
      // Only poses whose tip reaches the table within m2's travel.
      if (Math.abs(geo.gap('tip', physical) - sink) > 1e-6) continue;
      const readings = Object.fromEntries(
        [...physical].map(([n, rad]) => [n, Math.round((rad / DEG + truth[n]!) / count) * count]),
      );
      logs.push({ motor: 'm2', link: 'tip', samples: [readings], read: 1, sinkMm: 0 });
    }
  return logs;
}

describe('offsets from touches of the table', function () {
  this.timeout(180000);

  it("the Ergo Jr's tip comes down onto the table as m2 leans forward: the gap, from geometry alone", async () => {
    const { config, urdf } = await ergoJr();
    const geo = await tableGeometry(urdf, config.world.table!);
    const gapAt = (m2: number) => geo.gap('tip', new Map([['m2', m2 * DEG]]));
    expect(gapAt(0)).to.be.within(0.1, 0.15);
    expect(gapAt(-20)).to.be.below(gapAt(0));
    expect(gapAt(-37)).to.be.within(0, 0.01);
    expect(gapAt(-40), 'into the table').to.be.below(0);
    // A lifted table top is nearer by the lift.
    expect(geo.gap('tip', new Map([['m2', -20 * DEG]]), 0.01)).to.be.closeTo(gapAt(-20) - 0.01, 1e-6);
  });

  it('the twin plans a press of the tip onto the table, and refuses one that meets nothing', async () => {
    const { config, urdf } = await ergoJr();
    const plan = await planTouch(config, urdf, { motor: 'm2', direction: -1 });
    if ('refused' in plan) expect.fail(plan.refused);
    else {
      expect(plan.link).to.equal('tip');
      expect(plan.predicted).to.be.within(-39, -35);
      expect(plan.target).to.be.closeTo(plan.predicted - 12, 1e-9);
      expect(plan.start).to.be.closeTo(plan.predicted + 12, 1e-9);
      // Its line once run: a touch that read nothing pressing says so, not that it put the tip down.
      const log = { motor: 'm2', link: 'tip', samples: [{ m2: -37 }], read: 15, sinkMm: plan.sinkMm };
      expect(touchLine('touch 1/1', plan, log)).to.equal(
        'touch 1/1: m2 put the tip on the table (1 of 15 readings pressing)',
      );
      expect(touchLine('touch 1/1', plan, { ...log, samples: [] })).to.equal(
        'touch 1/1: m2 did not press the tip on the table (0 of 15 readings pressing): left out',
      );
    }
    // Leaning back, the arm meets its own base before any table; the base's yaw brings nothing down.
    const back = await planTouch(config, urdf, { motor: 'm2', direction: 1 });
    expect(back).to.deep.equal({ refused: 'm2 would bring base_link onto section_3 before the table' });
    const yaw = await planTouch(config, urdf, { motor: 'm1', direction: 1 });
    expect(yaw).to.deep.equal({ refused: 'm1 meets nothing within its limits from that pose' });
  });

  it('fits known offsets from readings the geometry makes, each press sunk up to a millimetre', async () => {
    const { config, urdf } = await ergoJr();
    const geo = await tableGeometry(urdf, config.world.table!);
    const logs = syntheticTouches(geo, TRUTH);
    expect(logs.length, 'poses whose tip reaches the table').to.be.at.least(8);
    const fit = await fitTouches(config, urdf, logs, geo);
    expect(fit.rejected).to.equal(undefined);
    expect(fit.unseen, 'a yaw about the vertical moves no height').to.deep.equal(['m1']);
    for (const name of ['m2', 'm3', 'm4', 'm5', 'm6']) {
      const o = fit.offsets.get(name)!;
      expect(Math.abs(o.value - TRUTH[name]!), `${name}: ${o.value} +- ${o.sigma}`).to.be.below(3 * o.sigma);
      expect(o.sigma, name).to.be.below(PRIOR_OFFSET_SIGMA_DEG);
    }
    expect(touchFitLine(fit)).to.match(
      /^offsets from the table \(deg\): m2 .*not identifiable by touch: m1$/,
    );
    // One reading a centimetre off is not one geometry: the offsets are not taken.
    const bad = logs.map((l, i) =>
      i === 0 ? { ...l, samples: [{ ...l.samples[0]!, m2: l.samples[0]!.m2! + 10 }] } : l,
    );
    const rejected = await fitTouches(config, urdf, bad, geo);
    expect(rejected.offsets.size).to.equal(0);
    expect(rejected.rejected).to.match(/the touches disagree/);
    // Fewer touches than unknowns: said, nothing fitted.
    const few = await fitTouches(config, urdf, logs.slice(0, 3), geo);
    expect(few.rejected).to.match(/^3 touches pressed, too few for the 5 offsets/);
  });

  it("the server's fit worker fits the touches it is given and says their line", async () => {
    const { config, urdf } = await ergoJr();
    const logs = syntheticTouches(await tableGeometry(urdf, config.world.table!), TRUTH);
    const lines: string[] = [];
    await fitInWorker(
      { robot: 'ergo-jr', logs: [], touches: logs },
      () => expect.fail('no motor was run'),
      new AbortController().signal,
      (line) => lines.push(line),
    );
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(
      /^offsets from the table \(deg\): m2 \d\.\d\d \+- \d.*; not identifiable by touch: m1$/,
    );
  });

  it("presses on past the twin's contact where the robot's table lies further, and says so", async () => {
    const { config, urdf } = await ergoJr();
    const plan = await planTouch(config, urdf, TOUCHES['ergo-jr']![0]!);
    if ('refused' in plan) return expect.fail(plan.refused);
    // m3 reads 16 degrees below where it stands: the tip meets the table beyond the plan's 12 degrees of press.
    const servos = structuredClone(defaultCalibration(config, '(test)', new Date(0).toISOString()));
    (servos.motors.m3!.offset as { value: number }).value = -16;
    const emulated = await emulateBus({ robot: 'ergo-jr', speed: 'manual', servoParams: servos });
    try {
      const rig = {
        bus: emulated.sim.bus,
        now: () => emulated.sim.clock.now(),
        wait: (s: number) => emulated.sim.advance(s),
      };
      const log = await runTouch(rig, config, plan);
      expect(log.searchedDeg, 'went on past the planned target').to.be.above(1);
      expect(log.samples.length, 'and pressed').to.equal(log.read);
      expect(touchLine('touch 1/24', plan, log)).to.match(
        /^touch 1\/24: m3 put the tip on the table \(15 of 15 readings pressing, \d+ degrees past the twin's contact\)$/,
      );
    } finally {
      await emulated.close();
    }
  });

  it('on the emulator with servos of their own, the touches put each offset within 0.3 degree', async () => {
    const { config, urdf } = await ergoJr();
    const truth = drawTrueParams(config, 3);
    const emulated = await emulateBus({ robot: 'ergo-jr', speed: 'manual', servoParams: truth });
    const lines: string[] = [];
    let logs: TouchLog[];
    try {
      const rig = {
        bus: emulated.sim.bus,
        now: () => emulated.sim.clock.now(),
        wait: (s: number) => emulated.sim.advance(s),
      };
      logs = await runTouches(rig, config, urdf, (line) => lines.push(line));
    } finally {
      await emulated.close();
    }
    expect(lines.filter((l) => /put the tip on the table/.test(l)).length).to.be.at.least(20);
    // Each plan says how deep its link sank on the twin: tenths of a millimetre, never above the table.
    expect(
      logs.every((l) => l.sinkMm <= 0 && l.sinkMm > -1),
      logs.map((l) => l.sinkMm).join(' '),
    ).to.equal(true);
    // Pressed again on a twin without offsets, each touch sinks as its plan did; with the true ones, some move.
    const same = await resinkTouches(config, urdf, logs, new Map());
    expect(same.every((l) => Math.abs(l.sinkShiftMm!) < 1e-6)).to.equal(true);
    const offsets = new Map(Object.entries(truth.motors).map(([n, m]) => [n, m.offset.value]));
    const moved = await resinkTouches(config, urdf, logs, offsets);
    expect(moved.some((l) => Math.abs(l.sinkShiftMm!) > 0.02)).to.equal(true);
    const fit = await fitTouches(config, urdf, logs);
    expect(fit.rejected).to.equal(undefined);
    expect(fit.unseen).to.deep.equal(['m1']);
    expect([...fit.offsets.keys()]).to.deep.equal(['m2', 'm3', 'm4', 'm5', 'm6']);
    for (const [name, o] of fit.offsets) {
      const error = o.value - truth.motors[name]!.offset.value;
      expect(Math.abs(error), `${name}: ${o.value} +- ${o.sigma}`).to.be.at.most(0.3);
      expect(Math.abs(error), `${name}: ${o.value} +- ${o.sigma}`).to.be.below(3 * o.sigma);
      expect(o.sigma, `${name}: the touches say more than the prior`).to.be.below(0.3);
    }
  });
});

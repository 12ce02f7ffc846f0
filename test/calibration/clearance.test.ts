/**
 * Each joint's excitation is checked on the twin before a run (src/calibration/clearance.ts): a swing whose
 * prediction brings links, or a link and the table, into a new contact is narrowed, and the run is told which; a
 * chirp whose prediction a tenth of a degree's disturbance changes is narrowed too (decision 0085).
 */
import { expect } from 'chai';
import {
  type ClearExcitation,
  STEADY_CHIRP_DEG,
  chirpSpread,
  clearExcitation,
  plannedLog,
  predictTouch,
} from '../../src/calibration/clearance.ts';
import { servoParamsAt } from '../../src/calibration/fit.ts';
import { simulate } from '../../src/calibration/forward.ts';
import { modelSpec } from '../../src/dynamixel/registers.ts';
import { servoModel } from '../../src/sim/servo-models.ts';
import { excitation } from '../../src/calibration/excitation.ts';
import { calibrationPose } from '../../src/calibration/run.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

async function robot(name: string) {
  const config = await loadRobotConfig(name);
  return { config, urdf: await loadUrdf(config.urdfPath) };
}

describe('the calibration excitation kept clear of contacts', function () {
  this.timeout(120000);

  it('Ergo Jr m2: the +-20 degree steps put the tip on the table; +-14 is clear and is what runs', async () => {
    const { config, urdf } = await robot('ergo-jr');
    const plan = await clearExcitation(config, urdf, 'm2');
    expect(plan.refused).to.have.length(1);
    expect(plan.refused[0]!.amplitudeDeg).to.equal(20);
    expect(plan.refused[0]!.links).to.have.members(['tip', 'table']);
    expect(plan.excitation, 'a clear swing').to.not.equal(undefined);
    if (!plan.excitation) return;
    expect((plan as { amplitudeDeg: number }).amplitudeDeg).to.equal(14);
    // The chosen one swings 14 degrees each way about the pose.
    const centre = calibrationPose(config).m2!;
    const steps = plan.excitation.segments.find(([n]) => n === 'steps@1023')!;
    expect(plan.excitation.at(steps[1] + 0.1).goal - centre).to.be.closeTo(14, 1e-9);
  });

  it('Ergo Jr m4 (the forearm roll) swings the full 20 degrees', async () => {
    const { config, urdf } = await robot('ergo-jr');
    const plan = await clearExcitation(config, urdf, 'm4');
    expect(plan.refused).to.deep.equal([]);
    expect((plan as { amplitudeDeg: number }).amplitudeDeg).to.equal(20);
    // Its chirp too: nothing it swings makes the prediction depend on where the rest of the arm starts.
    expect((plan as ClearExcitation).chirpAmplitudeDeg).to.equal(20);
    expect((plan as ClearExcitation).unsteady).to.deep.equal([]);
  });

  it('a release held too long lets the upright Ergo Jr arm fall onto the table: the twin sees it', async () => {
    const { config, urdf } = await robot('ergo-jr');
    const centre = calibrationPose(config).m3!;
    const ex = excitation(centre, config.motors.find((m) => m.name === 'm3')!.angleLimit, 5, 4);
    // The same excitation with its torque off from 6 s to the end: nothing holds the arm.
    const limp = { ...ex, at: (t: number) => (t < 6 ? ex.at(t) : { ...ex.at(t), torqueOn: false }) };
    const touch = await predictTouch(config, urdf, 'm3', limp);
    expect(touch, 'a contact').to.not.equal(undefined);
    expect(touch!.links).to.include('table');
    expect(touch!.time).to.be.above(6);
    expect(await predictTouch(config, urdf, 'm3', ex)).to.equal(undefined);
  });

  it('Torso, arms 20 degrees out: the bust leans and a shoulder swings the full 20 degrees, touching nothing', async () => {
    const { config, urdf } = await robot('torso');
    for (const motor of ['bust_x', 'l_shoulder_x']) {
      const plan = await clearExcitation(config, urdf, motor);
      expect(plan.refused, motor).to.deep.equal([]);
      expect((plan as { amplitudeDeg: number }).amplitudeDeg, motor).to.equal(20);
    }
  });

  it('Torso bust_y: a chirp that swings the whole upper body does not replay; its chirp narrows to +-5, its steps do not', async () => {
    const { config, urdf } = await robot('torso');
    const plan = (await clearExcitation(config, urdf, 'bust_y')) as ClearExcitation;
    expect(plan.refused).to.deep.equal([]);
    expect(plan.amplitudeDeg).to.equal(20);
    expect(plan.chirpAmplitudeDeg).to.equal(5);
    expect(plan.unsteady.map((u) => u.chirpAmplitudeDeg)).to.deep.equal([20, 10]);
    for (const u of plan.unsteady) expect(u.spreadDeg).to.be.above(STEADY_CHIRP_DEG);
    const centre = calibrationPose(config).bust_y!;
    const swingOf = (segment: string) => {
      const [, from, to] = plan.excitation.segments.find(([n]) => n === segment)!;
      let widest = 0;
      for (let t = from; t < to; t += 0.01)
        widest = Math.max(widest, Math.abs(plan.excitation.at(t).goal - centre));
      return widest;
    };
    // The steps as wide as its limits allow (18 degrees of the 20 asked), the chirps a quarter of the swing asked.
    expect(swingOf('steps@1023')).to.be.closeTo(18, 1e-9);
    expect(swingOf('chirp@1023')).to.be.within(4.9, 5);
    expect(swingOf('chirp@512')).to.be.within(4.9, 5);
    // The chosen chirp is steady: the same disturbance moves it less than the threshold.
    const motor = config.motors.find((m) => m.name === 'bust_y')!;
    const defaults = servoParamsAt(servoModel(modelSpec(motor.model)), [0, 0, 0, 0, 0]);
    const readings = await simulate(config, urdf, defaults, plannedLog(config, 'bust_y', plan.excitation));
    const spread = await chirpSpread(config, urdf, 'bust_y', plan.excitation, readings);
    expect(spread).to.be.below(STEADY_CHIRP_DEG);
  });
});

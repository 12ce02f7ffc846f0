/**
 * Each joint's excitation is checked on the twin before a run (src/calibration/clearance.ts): a swing whose
 * prediction brings links, or a link and the table, into a new contact is narrowed, and the run is told which.
 */
import { expect } from 'chai';
import { clearExcitation, predictTouch } from '../../src/calibration/clearance.ts';
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
});

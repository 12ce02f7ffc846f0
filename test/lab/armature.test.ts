/**
 * The armature's off-axis share (build-world.ts): the twin's share carries a light chain as a one-joint integration of the
 * same bodies says it should move, and Rapier still needs it. The last two are canaries: if a Rapier upgrade makes
 * them fail, the share or the multibody route should be looked at again (src/lab/armature-probe.ts).
 */
import { expect } from 'chai';
import { referenceJoint1, runChain, runPendulum } from '../../src/lab/armature-probe.ts';
import { OFF_AXIS_ARMATURE_SHARE } from '../../src/sim/build-world.ts';

describe('sim armature: what the off-axis share is for', function () {
  it("with the twin's share, a light four-joint XL-320 chain moves as the one-joint reference and holds together", async () => {
    const run = await runChain('impulse', OFF_AXIS_ARMATURE_SHARE);
    // Measured 2.3 degrees RMS over the half second after a 60-degree goal (reference peak 70.9, twin 72.3).
    expect(run.rms).to.be.below(3);
    expect(run.peak).to.be.closeTo(Math.max(...referenceJoint1(0.5)), 3);
    // Joint 0 then swings the whole chain 60 degrees: no joint goes past 90.
    expect(run.worstAfterBase).to.be.below(90);
  });

  it("canary: without the share, Rapier's impulse joints lose the chain", async () => {
    const run = await runChain('impulse', 0);
    // Measured: 15.6 degrees RMS, and joints past 300 degrees once joint 0 moves.
    expect(run.rms > 10 || run.worstAfterBase > 180, JSON.stringify(run)).to.equal(true);
  });

  it("canary: a multibody joint's pendulum does not follow its inertia in rapier.js (no way out there)", async () => {
    expect((await runPendulum('impulse')).ratio).to.be.closeTo(1, 0.01);
    // Measured 0.005x.
    expect((await runPendulum('multibody')).ratio).to.be.below(0.5);
  });
});

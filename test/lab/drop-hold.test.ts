/**
 * Drop, hold and no-load step of each servo model on a link sized like the robots' own: the twin (Rapier, the servo
 * model, the friction motor) against the one-joint reference integration of the same published law.
 */
import { expect } from 'chai';
import { FIDELITY_MODELS, modelFigures } from '../../src/lab/fidelity.ts';
import {
  HOLD_ANGLES,
  HOLD_LIMITS,
  REFERENCE,
  TWIN,
  agrees,
  drop,
  hold,
  noLoadStep,
} from '../../src/lab/drop-hold.ts';

describe('sim fidelity: drop, hold and no-load step on robot-sized links, twin vs reference', function () {
  for (const model of FIDELITY_MODELS) {
    describe(model, () => {
      it('limp from horizontal: final angle (10 % or 2 degrees), fall time and peak speed within 10 %', async () => {
        const t = await drop(model, TWIN);
        const r = await drop(model, REFERENCE);
        expect(r.fallTime, 'the reference link falls').to.be.lessThan(2);
        expect(agrees(t.final, r.final, 2), `final: twin ${t.final} vs ${r.final}`).to.equal(true);
        expect(agrees(t.fallTime, r.fallTime), `fall: twin ${t.fallTime} vs ${r.fallTime}`).to.equal(true);
        expect(agrees(t.peakSpeed, r.peakSpeed), `peak: twin ${t.peakSpeed} vs ${r.peakSpeed}`).to.equal(
          true,
        );
      });

      it('held at 3, 10 and 30 % torque limit from 20 to 90 degrees: ends within 10 % or 2 degrees', async () => {
        for (const limit of HOLD_LIMITS)
          for (const angle of HOLD_ANGLES) {
            const t = await hold(model, TWIN, limit, angle);
            const r = await hold(model, REFERENCE, limit, angle);
            expect(agrees(t, r, 2), `${limit} % at ${angle}: twin ${t} vs ${r}`).to.equal(true);
          }
      });

      it('no-load step: peak speed within 10 % of the reference, never past the motor line', async () => {
        const t = await noLoadStep(model, TWIN);
        const r = await noLoadStep(model, REFERENCE);
        expect(agrees(t, r), `twin ${t} vs ${r}`).to.equal(true);
        expect(t).to.be.below(modelFigures(model).noLoadDegS);
      });
    });
  }

  it('a low torque limit lets a heavy link sag where the reference says it does (the MX-64 leg at 3 %)', async () => {
    const t = await hold('MX-64', TWIN, 3, 90);
    expect(t).to.be.below(45);
    expect(await hold('MX-64', TWIN, 30, 90)).to.be.above(85);
  });
});

/**
 * The identification testbench (docs/reference/servo-models.md 4) in the twin's physics against a one-joint integration of the
 * same published model: the 3D solver, the friction motor and the servo code must reproduce the equations.
 */
import { expect } from 'chai';
import {
  FIDELITY_MODELS,
  benchPendulum,
  chirpProgram,
  effectiveStall,
  liftAndDropProgram,
  measure,
  modelFigures,
  runReference,
  runTwin,
  sineProgram,
  stepProgram,
  trajectoryRms,
  type Figures,
} from '../../src/lab/fidelity.ts';

const within = (twin: number, ref: number, share: number) => Math.abs(twin - ref) <= share * Math.abs(ref);

describe('sim fidelity: one servo on a pendulum, twin vs the published model', function () {
  for (const model of FIDELITY_MODELS) {
    describe(model, () => {
      let twin: Omit<Figures, 'rms'>;
      let ref: Omit<Figures, 'rms'>;
      before(async () => {
        twin = await measure(model, (load, p) => runTwin(model, load, p));
        ref = await measure(model, (load, p) => runReference(model, load, p));
      });

      it('no-load speed, stall torque, speed at half stall and drop time within 10 %', () => {
        for (const k of ['noLoadSpeed', 'stallTorque', 'speedAtHalfStall', 'dropTime'] as const)
          expect(within(twin[k], ref[k], 0.1), `${k}: twin ${twin[k]} vs reference ${ref[k]}`).to.equal(true);
      });

      it('hold error within 10 % of the reference', () => {
        expect(
          within(twin.holdError, ref.holdError, 0.1),
          `twin ${twin.holdError} vs reference ${ref.holdError}`,
        ).to.equal(true);
      });

      it('30-degree step: overshoot within 1 degree of the reference', () => {
        expect(Math.abs(twin.overshoot - ref.overshoot)).to.be.below(1);
        expect(twin.settling).to.be.within(0.05, 1);
      });

      it('the reference itself honours the model: no faster than its no-load speed, loads slow it down', () => {
        const figures = modelFigures(model);
        expect(ref.noLoadSpeed).to.be.below(figures.noLoadDegS);
        expect(ref.speedAtHalfStall).to.be.below(ref.noLoadSpeed * 0.75);
        expect(ref.holdError).to.be.greaterThan(0.2);
        expect(ref.dropTime).to.be.greaterThan(0.05);
      });

      if (!modelFigures(model).measured)
        it('no measured model: no-load speed and stall torque within 10 % of the datasheet', () => {
          const { datasheet } = modelFigures(model);
          expect(
            within(twin.noLoadSpeed, datasheet.noLoadDegS, 0.1),
            `no-load: twin ${twin.noLoadSpeed} deg/s vs datasheet ${datasheet.noLoadDegS}`,
          ).to.equal(true);
          expect(
            within(twin.stallTorque, datasheet.stallTorque, 0.1),
            `stall: twin ${twin.stallTorque} N.m vs datasheet ${datasheet.stallTorque}`,
          ).to.equal(true);
        });

      it('the stall is a stall: the servo stops against the torque before it reaches its goal', () => {
        // Measured from a ramp of the opposing torque; an arrival at the goal once passed for the stall (a third of it).
        expect(twin.stallTorque).to.be.greaterThan(0.8 * effectiveStall(model));
        expect(ref.stallTorque).to.be.greaterThan(0.8 * effectiveStall(model));
      });

      it('the speed at half stall is a steady speed, not an average over the arrival at the goal', () => {
        // The reference against half its stall torque, from -170 towards its goal: its speed at 0.5 s, mid-way.
        const run = runReference(
          model,
          { mass: 0.001, length: 0.01 },
          {
            duration: 0.6,
            start: -170,
            at: () => ({ goal: 170, torqueOn: true, external: -0.5 * effectiveStall(model) }),
          },
        );
        const midway = run.dq[run.t.findIndex((t) => t >= 0.5)]!;
        expect(ref.speedAtHalfStall).to.be.closeTo(midway, 0.02 * midway);
        expect(twin.speedAtHalfStall).to.be.closeTo(midway, 0.05 * midway);
      });

      it('lift-and-drop, step, sine and chirp trajectories within 2 degrees RMS of the reference', async () => {
        const rms = await trajectoryRms(model);
        for (const [name, value] of Object.entries(rms))
          expect(value, `${name} RMS ${value.toFixed(2)} deg`).to.be.below(2);
      });
    });
  }

  it('the trajectories really move the pendulum (the comparison is not between two still arms)', async () => {
    const load = benchPendulum('XL-320');
    for (const p of [liftAndDropProgram(), stepProgram(0, 30), sineProgram(), chirpProgram()]) {
      const run = runReference('XL-320', load, p);
      expect(Math.max(...run.q) - Math.min(...run.q)).to.be.greaterThan(20);
    }
  });
});

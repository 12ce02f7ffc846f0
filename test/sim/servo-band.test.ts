/**
 * Where a stiff servo's gearbox holds a still joint: about its goal with no load, about the point where its P loop
 * bears the links' weight under one (restSpanDeg); the sim's servos come to rest inside it.
 */
import { expect } from 'chai';
import { runGains } from '../../src/calibration/run.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { degToPosition, modelSpec, positionToDeg } from '../../src/dynamixel/registers.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { restBandDeg, restSpanDeg } from '../../src/sim/servo-band.ts';
import { servoModel } from '../../src/sim/servo-models.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

describe("sim: the gearbox's hold span under a load", () => {
  const xl320 = servoModel(modelSpec('XL-320'));

  it('with no load is the rest band either side of the goal; beyond the stall, none', () => {
    const band = restBandDeg(xl320, 32);
    const [low, high] = restSpanDeg(xl320, 32, 0)!;
    expect(low).to.be.closeTo(-band, 0.01);
    expect(high).to.be.closeTo(band, 0.01);
    expect(restSpanDeg(xl320, 32, 5)).to.equal(undefined);
  });

  it('under a load lies on its side, wider as the load raises the friction, narrower at a higher gain', () => {
    const band = restBandDeg(xl320, 32);
    const [low, high] = restSpanDeg(xl320, 32, -0.07)!;
    expect(high, 'the whole span below the goal').to.be.below(0);
    expect(high - low, 'wider than with no load').to.be.above(2 * band);
    const [up, upHigh] = restSpanDeg(xl320, 32, 0.07)!;
    expect(up).to.be.closeTo(-high, 1e-6);
    expect(upHigh).to.be.closeTo(-low, 1e-6);
    const [stiffLow, stiffHigh] = restSpanDeg(xl320, 64, -0.07)!;
    expect(stiffHigh - stiffLow).to.be.below(high - low);
    expect(stiffLow).to.be.above(low);
  });

  it("holds the Ergo Jr's arm where its servos come to rest, beyond the goal's rest band", async () => {
    const config = await loadRobotConfig('ergo-jr');
    const urdf = await loadUrdf(config.urdfPath);
    const sim = new SimBackend({ config, urdf, speed: 'manual' });
    await sim.open();
    try {
      await runGains(sim.bus, config);
      const ids = config.motors.map((m) => m.id);
      const pose: Record<string, number> = { m2: -40, m3: 40, m5: 20 };
      const goals = new Map(
        config.motors.map((m) => [m.id, degToPosition(modelSpec(m.model), pose[m.name] ?? 0)]),
      );
      await sim.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
      await sim.bus.write('goal_position', goals);
      await sim.advance(4);
      const at = await sim.bus.read(ids, 'present_position');
      const loads = sim.simulation.jointLoads();
      const sagged: string[] = [];
      for (const m of config.motors) {
        const spec = modelSpec(m.model);
        const model = servoModel(spec);
        const off = positionToDeg(spec, at.get(m.id) as number) - positionToDeg(spec, goals.get(m.id)!);
        const [low, high] = restSpanDeg(model, 32, loads.get(m.name)!)!;
        // One encoder count (0.29 degree) either side: the reading is rounded.
        expect(off, `${m.name} at rest, ${off.toFixed(2)} from its goal`).to.be.within(low - 0.3, high + 0.3);
        if (Math.abs(off) > restBandDeg(model, 32)) sagged.push(m.name);
      }
      expect(sagged, 'the joints bearing the arm rest beyond the no-load band').to.include.members([
        'm2',
        'm3',
      ]);
    } finally {
      await sim.close();
    }
  });
});

/**
 * What a simulated servo's encoder reads (SimBackend.encoderDeg): present_position before its rounding to counts,
 * taken at the start of each physics step, so a step behind the joint while it moves, with the servo's offset. The
 * calibration's forward model compares a robot's readings with this (decisions/0073).
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { modelSpec, positionResolution, positionToDeg } from '../../src/dynamixel/registers.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

const DEG = Math.PI / 180;
const IDS = [1, 2, 3, 4, 5, 6];

describe('sim: the encoder a servo reads', function () {
  this.timeout(60000);

  it('is present_position unrounded, the joint a step before plus the offset, a step behind it while it turns', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const urdf = await loadUrdf(config.urdfPath);
    const offsetDeg = 2.5;
    const base = { offsetDeg, armature: 0.0015, errorGain: 0.05, friction: { kv: 0.007, kcs: 0.016 } };
    const sim = new SimBackend({ config, urdf, speed: 'manual', servoParams: new Map([[1, base]]) });
    await sim.open();
    try {
      const spec = modelSpec(config.motors[0]!.model);
      await sim.bus.write('torque_enable', new Map(IDS.map((id) => [id, 1])));
      await sim.bus.write('goal_position', new Map([[1, 800]]));
      let lagged = 0;
      for (let k = 0; k < 100; k++) {
        const before = sim.jointAngles().get('m1')! / DEG + offsetDeg;
        await sim.advance(sim.dt);
        const after = sim.jointAngles().get('m1')! / DEG + offsetDeg;
        const encoder = sim.encoderDeg(1);
        expect(encoder, `step ${k}`).to.be.closeTo(before, 1e-9);
        const count = (await sim.bus.read([1], 'present_position')).get(1) as number;
        expect(Math.abs(positionToDeg(spec, count) - encoder), `step ${k}`).to.be.at.most(
          positionResolution(spec) / 2 + 1e-9,
        );
        if (Math.abs(after - encoder) > 0.01) lagged++;
      }
      expect(lagged, 'steps where the joint had moved on from the reading').to.be.above(50);
    } finally {
      await sim.close();
    }
  });
});

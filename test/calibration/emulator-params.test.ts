/**
 * Servos that are not the twin (--servo-params): an emulated servo with an offset reads the joint shifted through
 * the real bus path (driver, sync loop), and drives the joint to its goal minus the offset.
 */
import { expect } from 'chai';
import { defaultCalibration } from '../../src/calibration/defaults.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { RealBackend } from '../../src/real/backend.ts';
import { inProcessBus } from '../../src/real/bus-host.ts';
import { degToPosition, modelSpec, positionToDeg } from '../../src/dynamixel/registers.ts';

const DEG = Math.PI / 180;

describe('emulator with servo parameters of its own (--servo-params)', function () {
  this.timeout(30000);

  it('an offset shifts what the real backend reads, and where the goal puts the joint', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const cal = defaultCalibration(config);
    cal.motors.m1!.offset = { value: 4, sigma: null };
    cal.motors.m2!.offset = { value: -3, sigma: null };
    const plain = await emulateBus({ robot: 'ergo-jr', speed: 'manual' });
    const shifted = await emulateBus({ robot: 'ergo-jr', speed: 'manual', servoParams: cal });
    const spec = modelSpec('XL-320');
    const backends: RealBackend[] = [];
    try {
      const read = async (emulated: typeof plain) => {
        const binding = memoryBinding({ '/dev/mem0': emulated.bus });
        const b = new RealBackend({
          config,
          serial: '/dev/mem0',
          timeoutMs: 50,
          busHost: inProcessBus(binding),
        });
        backends.push(b);
        await b.open();
        return (await b.bus.read([1, 2, 3], 'present_position')) as Map<number, number>;
      };
      const [a, b] = [await read(plain), await read(shifted)];
      const deg = (m: Map<number, number>, id: number) => positionToDeg(spec, m.get(id)!);
      expect(deg(b, 1) - deg(a, 1)).to.be.closeTo(4, 0.3);
      expect(deg(b, 2) - deg(a, 2)).to.be.closeTo(-3, 0.3);
      expect(deg(b, 3) - deg(a, 3)).to.be.closeTo(0, 0.3);

      // Torque on, goal 20 degrees (on the servos' side): the encoder reads about 20, the joint stands at 20 - offset.
      const bus = shifted.sim.bus;
      await bus.write('torque_enable', new Map([[1, 1]]));
      await bus.write('goal_position', new Map([[1, degToPosition(spec, 20)]]));
      await shifted.sim.advance(2);
      const joint = shifted.sim.jointAngles().get('m1')! / DEG;
      const reads = positionToDeg(spec, (await bus.read([1], 'present_position')).get(1) as number);
      expect(reads).to.be.closeTo(20, 1.5);
      expect(reads - joint).to.be.closeTo(4, 0.3);
    } finally {
      for (const b of backends) await b.close();
      await plain.close();
      await shifted.close();
    }
  });
});

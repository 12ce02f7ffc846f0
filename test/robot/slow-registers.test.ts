/** The control loop's reads: position, speed and load every cycle; voltage, temperature and current at 5 Hz. */
import { expect } from 'chai';
import { simServer } from '../helpers.ts';

const SLOW = ['present_voltage', 'present_temperature', 'present_current'];

describe('robot: the control loop reads the slow registers at 5 Hz, one a cycle', () => {
  it('over 2 s at 50 Hz: every cycle reads the fast registers, each slow one 10 times, never two in one cycle', async () => {
    const s = await simServer('humanoid');
    try {
      const bus = s.backend.bus;
      const read = bus.read.bind(bus);
      let cycle: string[] = [];
      bus.read = (ids, reg) => (cycle.push(reg), read(ids, reg));
      const robot = s.robot;
      const tick = robot.tick.bind(robot);
      const cycles: string[][] = [];
      robot.tick = async () => {
        cycle = [];
        await tick();
        cycles.push(cycle);
      };
      await s.advance(2);
      expect(cycles.length).to.be.within(99, 101);
      for (const c of cycles) {
        expect(c.slice(0, 3)).to.deep.equal(['present_position', 'present_speed', 'present_load']);
        expect(c.filter((r) => SLOW.includes(r)).length, c.join(', ')).to.be.at.most(1);
      }
      // Of the Humanoid's servos only the MX-64s have present_current: it is read for them.
      for (const reg of SLOW) expect(cycles.filter((c) => c.includes(reg)).length, reg).to.be.within(9, 11);
    } finally {
      await s.close();
    }
  });
});

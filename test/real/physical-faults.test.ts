/**
 * The bus emulator's faults of the physical world (block, weak, push, offset), put on and taken off through fault
 * lines as its --console takes them, seen by a host over the real pseudo-terminal: the servos keep speaking
 * the protocol, and what they report is what the changed physics does. Ergo Jr's m1 (id 1), the base turn: its axis is
 * vertical, so gravity loads it with nothing. Wall time is inherent (servos at real time): waits are bounded polls.
 */
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { applyFaultLine } from '../../src/emulator/main.ts';
import { RealBackend } from '../../src/real/backend.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { degToPosition, modelSpec, positionToDeg } from '../../src/dynamixel/registers.ts';

describe('emulator physical faults over the pty (ergo-jr m1)', function () {
  this.timeout(40000);
  const spec = modelSpec('XL-320');
  let emulator: RunningEmulator;
  let host: RealBackend;
  /** The present position (raw degrees) the host reads over the bus. */
  const reported = async () =>
    positionToDeg(spec, (await host.bus.read([1], 'present_position')).get(1) as number);
  /** The joint's own angle in the emulator's physics (what no offset touches). */
  const physical = async () =>
    positionToDeg(spec, (await emulator.sim.bus.read([1], 'present_position')).get(1) as number);
  const goal = (deg: number) => host.bus.write('goal_position', new Map([[1, degToPosition(spec, deg)]]));
  /** Waits until the reported position holds still (within 0.5 degree over 300 ms) and returns it. */
  const settled = async (what: string) => {
    let last = NaN;
    let since = performance.now();
    return until(
      what,
      async () => {
        const p = await reported();
        if (!(Math.abs(p - last) <= 0.5)) {
          last = p;
          since = performance.now();
          return undefined;
        }
        return performance.now() - since > 300 ? p : undefined;
      },
      8000,
      50,
    );
  };
  /** Waits until the reported position comes within 1.5 degrees of `deg` (the integral unwinds after a fault). */
  const reaches = (deg: number) =>
    until(`m1 at ${deg}`, async () => {
      const p = await reported();
      return Math.abs(p - deg) <= 1.5 ? p : undefined;
    });
  const line = (text: string) => {
    const out = applyFaultLine(emulator.bus, text);
    expect(out, text).to.match(/^faults /);
    return out;
  };

  before(async () => {
    emulator = await startEmulator({ robot: 'ergo-jr' });
    const config = await loadRobotConfig('ergo-jr');
    host = new RealBackend({ config, serial: await emulator.addPort() });
    await host.open();
    // The arm held upright by m2 to m6, clear of the base: limp, it would rest on the m1 servo and rub on it as m1 turns.
    const arm = [2, 3, 4, 5, 6];
    await host.bus.write('goal_position', new Map(arm.map((id) => [id, degToPosition(spec, 0)])));
    await host.bus.write('torque_enable', new Map(arm.map((id) => [id, 1])));
    // The servo's own gains (P only): a constant push then moves the joint to a steady angle the integral would undo.
    await host.bus.write('torque_enable', new Map([[1, 1]]));
    await goal(0);
    await reaches(0);
  });
  after(async () => {
    await host?.close();
    await emulator?.close();
  });

  it('block=<id>@<deg> stops the joint there on its way to a goal past it; off lets it through', async () => {
    expect(line('block=1@15')).to.match(/block=1@15/);
    await goal(40);
    expect(await settled('m1 against the stop')).to.be.closeTo(15, 1.5);
    line('block=1@off');
    // Past the stop towards the goal (P only: the gearbox's friction leaves it a few degrees short).
    expect(await settled('m1 free')).to.be.within(30, 41);
  });

  it('offset=<id>:<deg> shifts the position reported, not the joint', async () => {
    await settled('m1 still');
    const before = await physical();
    line('offset=1:10');
    const seen = await reported();
    expect(seen - (await physical())).to.be.closeTo(10, 0.5);
    expect(await physical()).to.be.closeTo(before, 0.5);
    line('offset=1:off');
    expect((await reported()) - (await physical())).to.be.closeTo(0, 0.5);
  });

  it('push=<id>:<N.m> turns a held joint away from its goal; weak=<id>:<factor> lets the same push turn it further', async () => {
    const rest = await settled('m1 still');
    line('push=1:0.1');
    const pushed = (await settled('m1 pushed')) - rest;
    expect(Math.abs(pushed)).to.be.greaterThan(2);
    line('weak=1:0.5');
    const weakPushed = (await settled('m1 pushed, weak')) - rest;
    expect(Math.sign(weakPushed)).to.equal(Math.sign(pushed));
    expect(Math.abs(weakPushed)).to.be.greaterThan(2 * Math.abs(pushed));
    expect(line('status')).to.match(/weak=1:0.5,push=1:0.1/);
    line('clear');
    await goal(0);
    await reaches(0);
  });
});

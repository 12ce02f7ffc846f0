/**
 * The bus driver on the in-memory binding onto the emulated bus (no socat): servo error bits surfaced per motor and
 * an overloaded servo still read, the fallback to single reads when sync/bulk reads go unanswered at start-up (the
 * emulator's `nosync` fault), and REBOOT (2.0) followed by the motor's configuration as before. The same emulator
 * answers over a pty in test/emulator/manual.test.ts; this file's bus is the same code without the relay.
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { RobotError } from '../../src/core/errors.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { type Faults, noFaults } from '../../src/emulator/bus.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { busMotors } from '../../src/real/backend.ts';
import { BusDriver } from '../../src/real/driver.ts';

type Emulated = Awaited<ReturnType<typeof emulateBus>>;

interface Rig {
  readonly driver: BusDriver;
  readonly bus: Emulated;
  readonly logs: string[];
  close(): Promise<void>;
}

/** One emulated bus per robot for the whole file (the twin behind it is the costly part); faults reset after each. */
const buses = new Map<string, Emulated>();
after(async () => {
  for (const b of buses.values()) await b.close();
});
afterEach(() => {
  for (const b of buses.values()) Object.assign(b.bus.faults, noFaults());
});

async function rig(robot: string, faults: Partial<Faults> = {}): Promise<Rig> {
  let bus = buses.get(robot);
  if (!bus) buses.set(robot, (bus = await emulateBus({ robot, speed: 'manual' })));
  Object.assign(bus.bus.faults, faults);
  const config = await loadRobotConfig(robot);
  const logs: string[] = [];
  const driver = new BusDriver(
    {
      path: '/dev/mem0',
      baud: config.bus.baudrate,
      protocol: config.bus.protocol,
      motors: busMotors(config),
      timeoutMs: 20,
    },
    (line) => logs.push(line),
    memoryBinding({ '/dev/mem0': bus.bus }),
  );
  await driver.open();
  return {
    driver,
    bus,
    logs,
    async close() {
      await driver.close('hold');
    },
  };
}

describe('bus driver on the in-memory binding: servo errors, read fallback, reboot', () => {
  it('surfaces an overload per motor and in the log, keeps reading the motor, and says when it clears', async () => {
    const r = await rig('torso');
    try {
      const ids = [...r.driver.models.keys()];
      r.bus.bus.faults.errorBits.set(33, 0x20);
      for (let i = 0; i < 8; i++) {
        const values = await r.driver.read(ids, 'present_position');
        expect(values.has(33), 'the overloaded motor is read').to.equal(true);
      }
      const h = r.driver.health.get(33)!;
      expect(h.online).to.equal(true);
      expect(h.failedReads).to.equal(0);
      expect(h.conditions).to.deep.equal(['overload']);
      expect(h.statusErrors).to.be.at.least(8);
      expect(r.logs.filter((l) => /abs_z \(id 33\) reports overload/.test(l))).to.have.length(1);
      r.bus.bus.faults.errorBits.delete(33);
      await r.driver.read(ids, 'present_position');
      expect(h.conditions).to.deep.equal([]);
      expect(r.logs.at(-1)).to.match(/abs_z \(id 33\) reports no error any more/);
    } finally {
      await r.close();
    }
  });

  it('reads in one sync read (2.0) or bulk read (MX on 1.0) when the servos answer it', async () => {
    const ergo = await rig('ergo-jr');
    const torso = await rig('torso');
    try {
      expect([...ergo.driver.health.values()].every((h) => h.read === 'sync')).to.equal(true);
      const reads = [...torso.driver.health.values()].map((h) => `${h.model}:${h.read}`);
      expect(new Set(reads)).to.deep.equal(new Set(['MX-28:bulk', 'AX-12:single']));
      expect(ergo.logs.concat(torso.logs).some((l) => /one at a time/.test(l))).to.equal(false);
      const before = ergo.driver.link.stats.transactions;
      await ergo.driver.read([1, 2, 3, 4, 5, 6], 'present_position');
      expect(ergo.driver.link.stats.transactions - before).to.equal(1);
    } finally {
      await ergo.close();
      await torso.close();
    }
  });

  it('falls back to single reads for the servos that leave the sync read unanswered (nosync), with one log line', async () => {
    const r = await rig('ergo-jr', { nosync: new Set([2, 5]) });
    try {
      const modes = [...r.driver.health.values()].map((h) => [h.id, h.read]);
      expect(modes).to.deep.equal([
        [1, 'sync'],
        [2, 'single'],
        [3, 'sync'],
        [4, 'sync'],
        [5, 'single'],
        [6, 'sync'],
      ]);
      const lines = r.logs.filter((l) => /sync read gets no answer/.test(l));
      expect(lines).to.have.length(1);
      expect(lines[0]).to.match(/m2 \(id 2\), m5 \(id 5\), which answer single reads/);
      const before = r.driver.link.stats.transactions;
      const values = await r.driver.read([1, 2, 3, 4, 5, 6], 'present_position');
      expect([...values.keys()].sort()).to.deep.equal([1, 2, 3, 4, 5, 6]);
      expect(r.driver.link.stats.transactions - before, 'one sync read and two single reads').to.equal(3);
      expect(
        [...r.driver.health.values()].every((h) => (h.online && h.timeouts === 0) || h.read === 'single'),
      ).to.equal(true);
    } finally {
      await r.close();
    }
  });

  it('a Torso whose MX servos ignore the bulk read reads every motor on its own', async () => {
    const config = await loadRobotConfig('torso');
    const mx = config.motors.filter((m) => m.model === 'MX-28').map((m) => m.id);
    const r = await rig('torso', { nosync: new Set(mx) });
    try {
      expect([...r.driver.health.values()].every((h) => h.read === 'single')).to.equal(true);
      expect(r.logs.filter((l) => /bulk read gets no answer/.test(l))).to.have.length(1);
      const values = await r.driver.read([...r.driver.models.keys()], 'present_position');
      expect(values.size).to.equal(13);
    } finally {
      await r.close();
    }
  });

  it('reboots a servo in hardware alert (2.0): it comes back and is configured as before', async () => {
    const r = await rig('ergo-jr');
    try {
      const sim = r.bus.sim.bus;
      const regs = async (reg: 'torque_enable' | 'led' | 'angle_limit') => (await sim.read([3], reg)).get(3);
      await r.driver.write('torque_enable', new Map([[3, 1]]));
      await r.driver.write('led', new Map([[3, 2]]));
      expect(await regs('torque_enable')).to.equal(1);
      const limits = await regs('angle_limit');
      r.bus.bus.faults.errorBits.set(3, 0x80);
      await r.driver.read([1, 2, 3], 'present_position');
      expect(r.driver.health.get(3)!.conditions).to.deep.equal(['hardware_alert']);
      expect(r.driver.health.get(3)!.online, 'in alert, still answering').to.equal(true);
      expect(await regs('torque_enable'), 'the alert turned the torque off').to.equal(0);
      expect(await r.driver.reboot(3)).to.equal(true);
      expect(await regs('torque_enable'), 'torque as before').to.equal(1);
      expect(await regs('led'), 'LED as before').to.equal(2);
      expect(await regs('angle_limit')).to.deep.equal(limits);
      await r.driver.read([1, 2, 3], 'present_position');
      expect(r.driver.health.get(3)!.conditions).to.deep.equal([]);
      expect(r.logs.some((l) => /m3 \(id 3\) rebooted and configured again/.test(l))).to.equal(true);
    } finally {
      await r.close();
    }
  });

  for (const robot of ['ergo-jr', 'torso'])
    it(`${robot}: leaves every servo limp at close though some miss the torque-off write or its read-back`, async () => {
      const r = await rig(robot);
      const ids = [...r.driver.models.keys()];
      const torque = async () => [...(await r.bus.sim.bus.read(ids, 'torque_enable')).values()];
      try {
        await r.driver.write('torque_enable', new Map(ids.map((id) => [id, 1])));
        // A sync write has no reply: a read behind it in the emulator's queue waits until it took effect.
        expect([...(await r.driver.read(ids, 'torque_enable')).values()]).to.deep.equal(ids.map(() => 1));
        expect(await torque()).to.deep.equal(ids.map(() => 1));
        // The second misses the sync write; the third that too and the read that would find it stiff, and its retry.
        r.bus.bus.faults.deaf = new Map([
          [ids[1]!, 1],
          [ids[2]!, 3],
        ]);
      } catch (err) {
        await r.close();
        throw err;
      }
      await r.driver.close('compliant');
      expect(await torque()).to.deep.equal(ids.map(() => 0));
      expect(r.bus.bus.faults.deaf.size, 'every missed instruction used up').to.equal(0);
      expect(r.logs.filter((l) => /did not confirm torque off/.test(l))).to.deep.equal([]);
    });

  it('says which servo did not confirm torque off at close when it never hears', async () => {
    const r = await rig('ergo-jr');
    await r.driver.write('torque_enable', new Map([[4, 1]]));
    expect((await r.driver.read([4], 'torque_enable')).get(4)).to.equal(1);
    r.bus.bus.faults.deaf = new Map([[4, 1000]]);
    await r.driver.close('compliant');
    expect((await r.bus.sim.bus.read([4], 'torque_enable')).get(4)).to.equal(1);
    expect(r.logs.filter((l) => /did not confirm torque off/.test(l))).to.deep.equal([
      'closing: m4 did not confirm torque off after 3 tries',
    ]);
  });

  it('refuses a reboot on protocol 1.0, which has none, and sends nothing', async () => {
    const r = await rig('torso');
    try {
      const before = r.driver.link.stats.transactions;
      let err: unknown;
      await r.driver.reboot(33).catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(RobotError);
      expect((err as RobotError).code).to.equal('bad_request');
      expect(r.driver.link.stats.transactions).to.equal(before);
    } finally {
      await r.close();
    }
  });
});

/**
 * The serial link over a real pseudo-terminal (the bus emulator's): transactions, the exclusive lock while open (a
 * second server or pypot on the same bus is refused), and the lock released on close.
 */
import { expect } from 'chai';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { instructions } from '../../src/dynamixel/packet.ts';
import { SerialLink } from '../../src/real/link.ts';
import { BusDriver } from '../../src/real/driver.ts';
import { busMotors } from '../../src/real/backend.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { until } from '../helpers.ts';

describe('serial link over the emulator (Ergo Jr, protocol 2.0)', function () {
  this.timeout(20000);
  let emulator: RunningEmulator;
  before(async () => {
    emulator = await startEmulator({ robot: 'ergo-jr', speed: 'manual' });
  });
  after(async () => {
    await emulator?.close();
  });

  it('reads every motor in one sync read, and counts the bytes both ways', async () => {
    const link = new SerialLink({ path: emulator.path, baud: 1_000_000, protocol: 2 });
    await link.open();
    try {
      const ids = [1, 2, 3, 4, 5, 6];
      for (let i = 0; i < 20; i++) {
        // 100 ms: the replies take 1 ms, but the suite shares two cores (a relay stall is not what this counts).
        const r = await link.transact(instructions.syncRead(37, 6, ids), ids, 100);
        expect([...r.packets.keys()].sort()).to.deep.equal(ids);
        expect(r.errors.size).to.equal(0);
        for (const p of r.packets.values()) expect(p.params.length).to.equal(6);
      }
      expect(link.stats.transactions).to.equal(20);
      expect(link.stats.sent).to.equal(20 * 20); // 10 + 4 + 6 ids
      expect(link.stats.received).to.equal(20 * 6 * 17); // 11 + 6 bytes a status packet
    } finally {
      await link.close();
    }
  });

  it('holds an exclusive lock while open: a second link is refused, and gets the port once the first closes', async () => {
    const first = new SerialLink({ path: emulator.path, baud: 1_000_000, protocol: 2 });
    await first.open();
    const second = new SerialLink({ path: emulator.path, baud: 1_000_000, protocol: 2 });
    let refused: unknown;
    await second.open().catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/lock/i);
    expect(second.isOpen).to.equal(false);
    // The first still works, then lets go.
    const r = await first.transact(instructions.ping(2, 1), [1]);
    expect(r.packets.has(1)).to.equal(true);
    await first.close();
    expect(first.isOpen).to.equal(false);
    await second.open();
    try {
      expect((await second.transact(instructions.ping(2, 3), [3])).packets.has(3)).to.equal(true);
    } finally {
      await second.close();
    }
  });

  it('a sync write (no reply) finishes once its bytes are handed over, and reaches the servos', async () => {
    const link = new SerialLink({ path: emulator.path, baud: 1_000_000, protocol: 2 });
    await link.open();
    try {
      // LED (address 25 on the XL-320) of motors 1 and 2: colours 2 and 4.
      const r = await link.transact(
        instructions.syncWrite(2, 25, 1, [
          [1, [2]],
          [2, [4]],
        ]),
        [],
      );
      expect(r.packets.size + r.errors.size).to.equal(0);
      const read = await link.transact(instructions.read(2, 2, 25, 1), [2]);
      expect([...read.packets.get(2)!.params]).to.deep.equal([4]);
    } finally {
      await link.close();
    }
  });
});

describe('the bus driver closing (Ergo Jr over the emulator)', function () {
  this.timeout(20000);

  it('leaves every motor limp on close, motors counted lost included', async () => {
    const emulator = await startEmulator({ robot: 'ergo-jr', speed: 'manual' });
    try {
      const config = await loadRobotConfig('ergo-jr');
      const driver = new BusDriver({
        path: emulator.path,
        baud: config.bus.baudrate,
        protocol: config.bus.protocol,
        motors: busMotors(config),
        timeoutMs: 5,
      });
      await driver.open();
      const ids = config.motors.map((m) => m.id);
      await driver.write('torque_enable', new Map(ids.map((id) => [id, 1])));
      const torque = async () => [...(await emulator.sim.bus.read(ids, 'torque_enable')).values()];
      // The emulator obeys once the bytes have crossed the pty.
      await until('torque on', async () => ((await torque()).every((t) => t === 1) ? true : undefined));
      // Every reply lost from now on (the servos still hear and obey): the driver soon counts them all lost.
      emulator.bus.faults.dropRate = 1;
      for (let i = 0; i < 20 && [...driver.health.values()].some((h) => h.online); i++)
        await driver.read(ids, 'present_position');
      expect([...driver.health.values()].filter((h) => h.online)).to.deep.equal([]);
      await driver.close('compliant');
      await until(
        'torque off',
        async () => ((await torque()).every((t) => t === 0) ? true : undefined),
        2000,
      );
    } finally {
      await emulator.close();
    }
  });

  it('over the pty: reads the servos that ignore the sync read (nosync) one at a time, and reports an overload', async () => {
    const emulator = await startEmulator({
      robot: 'ergo-jr',
      speed: 'manual',
      faults: { nosync: new Set([4]) },
    });
    try {
      const config = await loadRobotConfig('ergo-jr');
      const logs: string[] = [];
      const driver = new BusDriver(
        {
          path: emulator.path,
          baud: config.bus.baudrate,
          protocol: config.bus.protocol,
          motors: busMotors(config),
        },
        (line) => logs.push(line),
      );
      await driver.open();
      try {
        expect(driver.health.get(4)!.read).to.equal('single');
        expect(driver.health.get(3)!.read).to.equal('sync');
        expect(logs.filter((l) => /sync read gets no answer from m4 \(id 4\)/.test(l))).to.have.length(1);
        emulator.bus.faults.errorBits.set(2, 0x01 | 0x80);
        const values = await driver.read([1, 2, 3, 4, 5, 6], 'present_position');
        expect(values.size).to.equal(6);
        expect(driver.health.get(2)!.conditions).to.deep.equal(['hardware_alert']);
      } finally {
        await driver.close('hold');
      }
    } finally {
      await emulator.close();
    }
  });
});

/**
 * The sync loop's order of work, on a manual clock and a scripted driver that records what reaches the bus: queued
 * writes go out at the next cycle in the order they came, a read queued after a write sees it, every cycle reads
 * present position/speed/load, the slow registers come one a cycle at 5 Hz, and stop() sends what is still queued;
 * then the same loop with a real driver on the in-memory bus.
 */
import { expect } from 'chai';
import { SteppedClock, advanceManualClock } from '../../src/core/clock.ts';
import { type BusRegister, type RawValue, modelSpec } from '../../src/dynamixel/registers.ts';
import { BusDriver, type MotorHealth, freshHealth } from '../../src/real/driver.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { busMotors } from '../../src/real/backend.ts';
import { type CycleReport, ReportThrottle, SyncLoop } from '../../src/real/sync-loop.ts';

type Op = { op: 'read' | 'write'; reg: BusRegister; ids: number[]; values?: [number, RawValue][] };

function scriptedDriver(): { driver: BusDriver; ops: Op[]; registers: Map<string, RawValue> } {
  const ops: Op[] = [];
  const registers = new Map<string, RawValue>();
  const models = new Map([
    [1, modelSpec('MX-28')],
    [2, modelSpec('MX-28')],
    [3, modelSpec('AX-12')],
  ]);
  const health = new Map<number, MotorHealth>(
    [...models.keys()].map((id) => [
      id,
      { ...freshHealth({ id, name: `m${id}`, model: id === 3 ? 'AX-12' : 'MX-28' }, 1), online: true },
    ]),
  );
  const driver = {
    models,
    health,
    link: { stats: { transactions: 0, sent: 0, received: 0 } },
    healthSnapshot: () => [...health.values()].map((h) => ({ ...h })),
    async read(ids: readonly number[], reg: BusRegister) {
      ops.push({ op: 'read', reg, ids: [...ids] });
      await new Promise((r) => setImmediate(r)); // the bus takes its time
      return new Map(ids.map((id) => [id, registers.get(`${id}:${reg}`) ?? 0]));
    },
    async write(reg: BusRegister, values: ReadonlyMap<number, RawValue>) {
      ops.push({ op: 'write', reg, ids: [...values.keys()], values: [...values] });
      await new Promise((r) => setImmediate(r));
      for (const [id, v] of values) registers.set(`${id}:${reg}`, v);
    },
  };
  return { driver: driver as unknown as BusDriver, ops, registers };
}

/** Waits (real time, a few ms at a time) until `done()`: the scripted bus answers on later turns of the event loop. */
async function until(done: () => boolean, ms = 2000): Promise<void> {
  const end = performance.now() + ms;
  while (!done()) {
    if (performance.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 1));
  }
}

describe('sync loop (the bus process): the order of work on the bus', () => {
  it('before start(), queued work runs at once and in order: a read after a write sees it', async () => {
    const { driver, ops } = scriptedDriver();
    const loop = new SyncLoop(driver, {
      hz: 50,
      clock: new SteppedClock(),
      log: () => {},
      onCycle: () => {},
    });
    loop.write('goal_position', new Map([[1, 600]]));
    const read = await loop.read([1, 2], 'goal_position');
    expect(read.get(1)).to.equal(600);
    expect(ops.map((o) => `${o.op} ${o.reg}`)).to.deep.equal(['write goal_position', 'read goal_position']);
  });

  it('once running, writes wait for the next cycle and go out first, in the order they came; the cycle then reads present position, speed and load of every motor', async () => {
    const { driver, ops } = scriptedDriver();
    const clock = new SteppedClock();
    const cycles: CycleReport[] = [];
    const loop = new SyncLoop(driver, { hz: 50, clock, log: () => {}, onCycle: (c) => cycles.push(c) });
    loop.start();
    await advanceManualClock(clock, 0.02);
    await until(() => cycles.length === 1);
    ops.length = 0;
    loop.write('goal_position', new Map([[1, 600]]));
    loop.write('torque_enable', new Map([[1, 1]]));
    loop.write('goal_position', new Map([[2, 400]]));
    await new Promise((r) => setTimeout(r, 5));
    expect(ops, 'nothing sent between cycles').to.have.length(0);
    await advanceManualClock(clock, 0.02);
    await until(() => cycles.length === 2);
    expect(ops.slice(0, 6).map((o) => `${o.op} ${o.reg} ${o.ids.join(',')}`)).to.deep.equal([
      'write goal_position 1',
      'write torque_enable 1',
      'write goal_position 2',
      'read present_position 1,2,3',
      'read present_speed 1,2,3',
      'read present_load 1,2,3',
    ]);
    const regs = cycles[1]!.values.map(([reg]) => reg);
    expect(regs.slice(0, 3)).to.deep.equal(['present_position', 'present_speed', 'present_load']);
    await loop.stop();
  });

  it('reads the slow registers one a cycle at 5 Hz, each from the motors that have it', async () => {
    const { driver } = scriptedDriver();
    const clock = new SteppedClock();
    const cycles: CycleReport[] = [];
    const loop = new SyncLoop(driver, { hz: 50, clock, log: () => {}, onCycle: (c) => cycles.push(c) });
    loop.start();
    for (let i = 1; i <= 20; i++) {
      await advanceManualClock(clock, 0.02);
      await until(() => cycles.length === i);
    }
    await loop.stop();
    expect(cycles).to.have.length(20);
    const slow = cycles.map((c) => c.values.map(([reg]) => reg).filter((r) => !r.startsWith('present_p')));
    const perCycle = slow.map((regs) => regs.filter((r) => r !== 'present_speed' && r !== 'present_load'));
    // 50 Hz / 5 Hz = every 10 cycles: voltage, temperature, current on three consecutive cycles.
    expect(perCycle.filter((r) => r.length > 0).map((r) => r.join())).to.deep.equal([
      'present_voltage',
      'present_temperature',
      'present_voltage',
      'present_temperature',
    ]);
    expect(
      perCycle.every((r) => r.length <= 1),
      'at most one slow register a cycle',
    ).to.equal(true);
    // present_current: none of these models has it, so it is not asked at all.
    expect(slow.flat()).to.not.include('present_current');
  });

  it('stop() ends the loop and still sends the writes queued before it', async () => {
    const { driver, registers } = scriptedDriver();
    const clock = new SteppedClock();
    const loop = new SyncLoop(driver, { hz: 50, clock, log: () => {}, onCycle: () => {} });
    loop.start();
    loop.write('torque_enable', new Map([[3, 0]]));
    await loop.stop();
    expect(registers.get('3:torque_enable')).to.equal(0);
  });

  it('a cycle that fails is logged once, and the loop carries on', async () => {
    const { driver } = scriptedDriver();
    let fail = true;
    const read = driver.read.bind(driver);
    (driver as { read: BusDriver['read'] }).read = async (ids, reg) => {
      if (fail) throw new Error('port gone');
      return read(ids, reg);
    };
    const clock = new SteppedClock();
    const logs: string[] = [];
    const cycles: CycleReport[] = [];
    const loop = new SyncLoop(driver, {
      hz: 50,
      clock,
      log: (l) => logs.push(l),
      onCycle: (c) => cycles.push(c),
    });
    loop.start();
    for (let i = 1; i <= 3; i++) {
      await advanceManualClock(clock, 0.02);
      await until(() => cycles.length === i);
    }
    fail = false;
    await advanceManualClock(clock, 0.02);
    await until(() => cycles.length === 4);
    await loop.stop();
    expect(logs).to.deep.equal(['sync loop: a cycle failed: port gone']);
    expect(cycles).to.have.length(4);
    expect(cycles.slice(0, 3).every((c) => c.values.length === 0)).to.equal(true);
    expect(cycles[3]!.values.map(([reg]) => reg)).to.include('present_position');
  });
});

describe('sync loop reports: at most one every few milliseconds, nothing read lost', () => {
  const report = (seq: number, values: CycleReport['values'], health?: MotorHealth[]): CycleReport => ({
    seq,
    startedAt: 0,
    lateMs: 0,
    values,
    health,
    stats: { transactions: seq, sent: 0, received: 0 },
    writes: 0,
  });

  it('sends the first at once, merges those that come within the interval, and sends the merge when it ends', async () => {
    const sent: CycleReport[] = [];
    const throttle = new ReportThrottle((r) => sent.push(r), 20);
    throttle.add(report(1, [['present_position', [[1, 500]]]]));
    expect(sent.map((r) => r.seq)).to.deep.equal([1]);
    throttle.add(report(2, [['present_voltage', [[1, 120]]]]));
    throttle.add(report(3, [['present_position', [[1, 510]]]]));
    expect(sent, 'held within the interval').to.have.length(1);
    await new Promise((r) => setTimeout(r, 40));
    expect(sent.map((r) => r.seq)).to.deep.equal([1, 3]);
    // The voltage read in cycle 2 survives the merge; the position is cycle 3's.
    expect(new Map(sent[1]!.values).get('present_voltage')).to.deep.equal([[1, 120]]);
    expect(new Map(sent[1]!.values).get('present_position')).to.deep.equal([[1, 510]]);
    expect(sent[1]!.stats.transactions).to.equal(3);
  });

  it('keeps the latest health of the merged reports, and flush() sends what is held', () => {
    const sent: CycleReport[] = [];
    const throttle = new ReportThrottle((r) => sent.push(r), 1000);
    const sick = { online: false } as MotorHealth;
    throttle.add(report(1, []));
    throttle.add(report(2, [], [sick]));
    throttle.add(report(3, []));
    throttle.flush();
    expect(sent.map((r) => r.seq)).to.deep.equal([1, 3]);
    expect(sent[1]!.health).to.deep.equal([sick]);
    throttle.flush();
    expect(sent, 'nothing held, nothing sent').to.have.length(2);
  });
});

describe('sync loop on the in-memory bus: a real driver, the emulated servos', () => {
  it('sends the queued writes at the next cycle and reads every motor each cycle', async () => {
    const emulated = await emulateBus({ robot: 'ergo-jr', speed: 'manual' });
    const config = await loadRobotConfig('ergo-jr');
    const driver = new BusDriver(
      { path: '/dev/mem0', baud: 1_000_000, protocol: 2, motors: busMotors(config), timeoutMs: 20 },
      () => {},
      memoryBinding({ '/dev/mem0': emulated.bus }),
    );
    const clock = new SteppedClock();
    const cycles: CycleReport[] = [];
    const loop = new SyncLoop(driver, { hz: 50, clock, log: () => {}, onCycle: (c) => cycles.push(c) });
    try {
      await driver.open();
      loop.start();
      await advanceManualClock(clock, 0.02);
      await until(() => cycles.length === 1);
      loop.write('led', new Map([[4, 5]]));
      expect((await emulated.sim.bus.read([4], 'led')).get(4), 'not before the cycle').to.equal(0);
      await advanceManualClock(clock, 0.02);
      await until(() => cycles.length === 2);
      expect((await emulated.sim.bus.read([4], 'led')).get(4)).to.equal(5);
      const positions = new Map(cycles[1]!.values.find(([reg]) => reg === 'present_position')![1]);
      const sim = await emulated.sim.bus.read([1, 2, 3, 4, 5, 6], 'present_position');
      expect(positions).to.deep.equal(sim);
    } finally {
      await loop.stop();
      await driver.close('hold');
      await emulated.close();
    }
  });
});

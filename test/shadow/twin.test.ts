/**
 * The shadow twin and its comparator without a bus: the real backend is scripted (its cycle reports and its write
 * tap are called by the test), so each case is deterministic, whatever the machine's load.
 */
import { expect } from 'chai';
import { defaultCalibration } from '../../src/calibration/defaults.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import {
  type BusRegister,
  type RawValue,
  degSToSpeed,
  degToPosition,
  modelSpec,
  positionToDeg,
} from '../../src/dynamixel/registers.ts';
import type { RealBackend } from '../../src/real/backend.ts';
import type { CycleReport } from '../../src/real/sync-loop.ts';
import {
  BAND,
  Comparator,
  type Reading,
  type TwinContact,
  calibratedDeadBands,
  classify,
} from '../../src/shadow/comparator.ts';
import type { ThreadTwinEngine } from '../../src/shadow/twin-engine-thread.ts';
import { ShadowTwin } from '../../src/shadow/twin.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { until } from '../helpers.ts';
import { besideTwin } from './sim-real.ts';

/** The wall clock of the scripted cycle reports (epoch ms): it runs with the scripted backend's clock. */
const EPOCH_MS = 1.7e12;

/** A real backend as the twin sees it: models, a clock, health, a bus read at open, and the two taps. */
class ScriptedReal {
  readonly spec = modelSpec('XL-320');
  readonly models = new Map([1, 2, 3, 4, 5, 6].map((id) => [id, this.spec]));
  readonly health = new Map([1, 2, 3, 4, 5, 6].map((id) => [id, { online: true }]));
  now = 10;
  readonly clock = { now: () => this.now };
  readonly wallMs = () => EPOCH_MS + this.now * 1000;
  /** Raw degrees (and degrees per second) of each servo, as the bus reads them. */
  readonly positions = new Map([1, 2, 3, 4, 5, 6].map((id) => [id, 0]));
  readonly speeds = new Map<number, number>();
  #writeIndex = 0;
  #writes = 0;
  #seq = 0;
  #writeListener?: (reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number) => void;
  #cycleListener?: (report: CycleReport) => void;
  readonly bus = {
    read: async (ids: readonly number[]) =>
      new Map(ids.map((id) => [id, degToPosition(this.spec, this.positions.get(id)!)])),
  };
  onWrite(l: (reg: BusRegister, values: ReadonlyMap<number, RawValue>, index: number) => void) {
    this.#writeListener = l;
    return () => (this.#writeListener = undefined);
  }
  onCycle(l: (report: CycleReport) => void) {
    this.#cycleListener = l;
    return () => (this.#cycleListener = undefined);
  }
  /** The server queues a write (it goes out on the bus at a later cycle). */
  queue(reg: BusRegister, values: [number, RawValue][]): void {
    this.#writeListener?.(reg, new Map(values), ++this.#writeIndex);
  }
  /** A cycle 20 ms after the last one, which sent `sent` more of the queued writes. */
  cycle(sent: number): void {
    this.now += 0.02;
    this.#writes += sent;
    const ids = [...this.positions.keys()];
    this.#cycleListener?.({
      seq: ++this.#seq,
      startedAt: this.wallMs(),
      lateMs: 0,
      values: [
        ['present_position', ids.map((id) => [id, degToPosition(this.spec, this.positions.get(id)!)])],
        ['present_speed', ids.map((id) => [id, degSToSpeed(this.spec, this.speeds.get(id) ?? 0)])],
        ['present_load', ids.map((id) => [id, 0])],
      ],
      stats: { transactions: 0, sent: 0, received: 0 },
      writes: this.#writes,
    });
  }
}

describe('the shadow twin, scripted', function () {
  this.timeout(20000);
  let real: ScriptedReal;
  let twin: ShadowTwin;
  const settle = async () => {
    // The twin's cycles run on a promise chain: a macrotask lets the queued ones finish.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  };

  /** The Ergo Jr's twin beside `real`, m3 at 30 degrees. */
  const openTwin = async (real: ScriptedReal): Promise<ShadowTwin> => {
    const config = await loadRobotConfig('ergo-jr');
    const twin = new ShadowTwin({
      config,
      urdf: await loadUrdf(config.urdfPath),
      real: real as unknown as RealBackend,
      log: () => {},
      wallMs: real.wallMs,
    });
    real.positions.set(3, 30);
    await twin.open();
    return twin;
  };

  beforeEach(async () => {
    real = new ScriptedReal();
    twin = await openTwin(real);
  });
  afterEach(() => twin.close());

  it('starts from the measured pose', async () => {
    const pos = await twin.sim.bus.read([3], 'present_position');
    expect(pos.get(3)).to.equal(degToPosition(real.spec, 30));
  });

  it("speaks the user's frame, as the REST motor routes: m3 (indirect) at raw 30 degrees is at -30", async () => {
    real.speeds.set(3, 12);
    real.cycle(0);
    await settle();
    const m3 = twin.status().motors.find((m) => m.motor === 'm3')!;
    expect(m3.real!.position).to.be.closeTo(-30, 0.2);
    expect(m3.real!.speed).to.be.closeTo(-12, 0.2);
    expect(m3.twin!.position).to.be.closeTo(-30, 1.5);
  });

  it('keeps a goal sent a cycle before its torque enable, while it still follows the compliant joint', async () => {
    real.cycle(0);
    // The robot makes m3 stiff where it is (goal, then torque enable: two bus writes, which a busy bus process
    // sends in two cycles), while the falling real joint has gone on to 24 degrees.
    const goal = degToPosition(real.spec, 30);
    real.queue('goal_position', [[3, goal]]);
    real.queue('torque_enable', [[3, 1]]);
    real.cycle(1);
    await settle();
    real.positions.set(3, 24);
    real.cycle(1);
    await settle();
    expect((await twin.sim.bus.read([3], 'goal_position')).get(3)).to.equal(goal);
    expect((await twin.sim.bus.read([3], 'torque_enable')).get(3)).to.equal(1);
    // Let go at the next cycle, before the stiff joint takes a step.
    real.cycle(0);
    await settle();
    expect(twin.sim.simulation.hand.holding(), 'the hand follows compliant joints only').to.not.include(3);
  });

  /** The twin's m1 (raw degrees) every 10 cycles of a 1 s goto of 40 degrees, the cycles coming `burst` at a time. */
  const gotoInBursts = async (burst: number): Promise<number[]> => {
    const ids = [1, 2, 3, 4, 5, 6];
    real.queue(
      'goal_position',
      ids.map((id) => [id, degToPosition(real.spec, real.positions.get(id)!)]),
    );
    real.queue(
      'torque_enable',
      ids.map((id) => [id, 1]),
    );
    real.cycle(2);
    await settle();
    const at: number[] = [];
    for (let i = 1; i <= 60; i++) {
      const s = Math.min(1, i / 50);
      real.queue('goal_position', [[1, degToPosition(real.spec, 40 * s * s * (3 - 2 * s))]]);
      // A busy server: the reports of `burst` cycles wait for it, then come all at once.
      real.cycle(1);
      if (i % burst === 0) await settle();
      if (i % 10 === 0) {
        await settle();
        at.push(
          positionToDeg(real.spec, (await twin.sim.bus.read([1], 'present_position')).get(1) as number),
        );
      }
    }
    return at;
  };

  it('runs each cycle of a burst in turn, its time then its commands, as it runs them one by one', async () => {
    const oneByOne = await gotoInBursts(1);
    await twin.close();
    real = new ScriptedReal();
    twin = await openTwin(real);
    const inBursts = await gotoInBursts(10);
    expect(inBursts, `one by one ${oneByOne.join(' ')}`).to.deep.equal(oneByOne);
    expect(oneByOne.at(-1)).to.be.closeTo(40, 3);
  });

  it('follows a compliant joint moved by hand, within its slack, without changing its goal', async () => {
    const goal = (await twin.sim.bus.read([3], 'goal_position')).get(3);
    real.positions.set(3, -20);
    for (let i = 0; i < 50; i++) {
      real.cycle(0);
      await settle();
    }
    const at = positionToDeg(real.spec, (await twin.sim.bus.read([3], 'present_position')).get(3) as number);
    expect(at).to.be.closeTo(-20, 1.5);
    expect((await twin.sim.bus.read([3], 'goal_position')).get(3)).to.equal(goal);
    expect(twin.sim.simulation.hand.holding().sort()).to.deep.equal([1, 2, 3, 4, 5, 6]);
  });
});

for (const thread of ['main', 'worker'] as const)
  describe(`the shadow twin after a stall, its physics on the ${thread} thread`, function () {
    this.timeout(20000);

    it('drops the time of the cycles queued before, is put on the measured pose once, and goes on', async () => {
      const real = new ScriptedReal();
      const config = await loadRobotConfig('ergo-jr');
      const lines: string[] = [];
      const twin = new ShadowTwin({
        config,
        urdf: await loadUrdf(config.urdfPath),
        real: real as unknown as RealBackend,
        log: (line) => lines.push(line),
        wallMs: real.wallMs,
        thread,
      });
      try {
        await twin.open();
        const m1 = async () =>
          positionToDeg(real.spec, (await twin.registers.read([1], 'present_position')).get(1) as number);
        // m1 stiff at 0, a second of cycles compared.
        real.queue('goal_position', [[1, degToPosition(real.spec, 0)]]);
        real.queue('torque_enable', [[1, 1]]);
        real.cycle(2);
        for (let i = 0; i < 50; i++) real.cycle(0);
        await twin.settled();
        const before = twin.time;
        expect(before, 'a second of cycles (the first one runs no time)').to.be.closeTo(1, 0.003);
        expect(await m1()).to.be.closeTo(0, 1);
        // A burst of cycles queued, then one 1.5 s late (a stalled server), the arm moved meanwhile.
        for (let i = 0; i < 10; i++) real.cycle(0);
        real.positions.set(1, 25);
        real.now += 1.5;
        real.cycle(0);
        await twin.settled();
        expect(twin.stats.reanchored).to.equal(1);
        expect(lines.filter((l) => l.includes('behind the robot'))).to.have.length(1);
        // The stall's 1.5 s is never run. On this thread the burst's cycles, queued behind it, drop their time too;
        // a worker runs the ones it started before it heard of the stall (it runs in parallel), the rest dropped.
        if (thread === 'main')
          expect(twin.time, 'the burst and the stall dropped').to.be.closeTo(before, 0.003);
        else expect(twin.time, 'at most the burst run').to.be.within(before - 0.003, before + 0.203);
        expect(await m1(), 'placed on the measured angle').to.be.closeTo(25, 1);
        // Then on as before: cycles run their time, the stiff m1 goes back to its goal.
        real.positions.set(1, 0);
        const after = twin.time;
        for (let i = 0; i < 50; i++) real.cycle(0);
        await twin.settled();
        expect(twin.time - after, 'a second more').to.be.closeTo(1, 0.003);
        expect(await m1()).to.be.closeTo(0, 2);
        expect(twin.stats.reanchored).to.equal(1);
      } finally {
        await twin.close();
      }
    });
  });

describe('the divergence comparator', () => {
  let ergoJr: Awaited<ReturnType<typeof loadRobotConfig>>;
  before(async () => {
    ergoJr = await loadRobotConfig('ergo-jr');
  });
  const still = (position: number, load = 0): Reading => ({ position, speed: 0, load });
  const r0 = (c: Comparator) => c.status()[0]!;
  const make = () => {
    const seen: string[] = [];
    const c = new Comparator({ motors: ['m1'], onEvent: (e, change) => seen.push(`${change} ${e.kind}`) });
    return { c, seen };
  };

  it('raises nothing for a difference within the dead band, however long', () => {
    const { c, seen } = make();
    for (let t = 0; t < 5; t += 0.02)
      c.update(t, 'm1', still(BAND.DEAD_BAND_DEG * 0.9), true, still(0), false);
    expect(seen).to.deep.equal([]);
    expect(c.status()[0]!.state).to.equal('agree');
  });

  it('raises an offset after the hold time, not before, and clears it once back in the band', () => {
    const { c, seen } = make();
    let t = 0;
    for (; t < BAND.HOLD_S - 0.05; t += 0.02) c.update(t, 'm1', still(10), true, still(0), false);
    expect(c.status()[0]!.state).to.equal('diverging');
    for (; t < BAND.HOLD_S + 0.1; t += 0.02) c.update(t, 'm1', still(10), true, still(0), false);
    expect(seen).to.deep.equal(['raised offset']);
    expect(c.active()).to.have.length(1);
    const end = t + BAND.CLEAR_HOLD_S + 0.05;
    for (; t < end; t += 0.02) c.update(t, 'm1', still(0.5), true, still(0), false);
    expect(seen).to.deep.equal(['raised offset', 'cleared offset']);
    expect(c.events()[0]!.until).to.be.a('number');
  });

  it("two still joints agree with the real one within the servo's rest band of the goal, whichever side; beyond it they are compared", () => {
    const rest = 2.45; // an XL-320 at P 32 (restBandDeg)
    const at = (position: number, goal: number, speed = 0): Reading => ({ position, speed, load: 0, goal });
    const run = (real: Reading, twin: Reading) => {
      const { c, seen } = make();
      for (let t = 0; t < 2; t += 0.02) c.update(t, 'm1', real, true, twin, false, rest);
      return seen;
    };
    // 4 degrees apart beyond a 3-degree band, each 2 from the goal on its own side: where two servos can rest.
    expect(run(at(42, 40), at(38, 40))).to.deep.equal([]);
    // The real one 3 degrees from the goal, beyond its rest band (pushed, blocked): an event.
    expect(run(at(43, 40), at(39.5, 40))).to.deep.equal(['raised offset']);
    // Still moving, or no rest band given (a limp servo, a gain of 0): compared as before.
    expect(run(at(42, 40, 10), at(38, 40))).to.have.length(1);
    const { c, seen } = make();
    for (let t = 0; t < 2; t += 0.02) c.update(t, 'm1', at(42, 40), true, at(38, 40), false);
    expect(seen).to.deep.equal(['raised offset']);
  });

  it("under its links' weight, two still joints agree where the twin's gearbox can hold it, not about the goal", () => {
    const rest = 2.45;
    // The twin's span under the arm's weight (restSpanDeg): 18 to 4 degrees below a goal of 40.
    const loaded = (position: number, speed = 0): Reading => ({
      position,
      speed,
      load: -20,
      goal: 40,
      settles: [22, 36],
    });
    const run = (real: Reading, twin: Reading) => {
      const { c, seen } = make();
      for (let t = 0; t < 2; t += 0.02) c.update(t, 'm1', real, true, twin, false, rest);
      return seen;
    };
    // Both sagged 8 and 13 degrees, 5 apart: where two servos can rest under that weight.
    expect(run(loaded(27), loaded(32))).to.deep.equal([]);
    // The same readings judged about the goal: both beyond its rest band, an event.
    const { settles: _, ...aboutGoal } = loaded(32);
    expect(run(loaded(27), aboutGoal)).to.deep.equal(['raised offset']);
    // The real joint above the span (held up: pushed, blocked) or below it: compared.
    expect(run(loaded(39.5), loaded(32))).to.deep.equal(['raised offset']);
    expect(run(loaded(20), loaded(24))).to.deep.equal(['raised offset']);
    // Still moving: compared.
    expect(run(loaded(27, 10), loaded(32))).to.have.length(1);
    // The twin where it stopped before its goal moved by less than the span (neither joint moved): the real one is
    // where its gearbox can hold it, and agrees.
    expect(run(loaded(27), loaded(37.5))).to.deep.equal([]);
  });

  it("with a calibration, a motor's dead band is its fit's residual x 3, at least the floor (the default's without its offset)", () => {
    const cal = defaultCalibration(ergoJr);
    cal.motors.m1!.residualRmsDeg = 0.3;
    cal.motors.m2!.residualRmsDeg = 0.8;
    const bands = calibratedDeadBands(cal);
    expect(bands.get('m1')).to.equal(BAND.CALIBRATED_FLOOR_DEG);
    expect(bands.get('m2')).to.be.closeTo(2.4, 1e-9);
    expect(bands.has('m3'), 'no residual: the default band').to.equal(false);
    // An offset not identified keeps the default band's floor (the fitted calibrations of today).
    cal.motors.m4!.residualRmsDeg = 0.3;
    cal.motors.m4!.notIdentifiable = ['kc', 'offset'];
    cal.motors.m5!.residualRmsDeg = 1.2;
    cal.motors.m5!.notIdentifiable = ['offset'];
    const unknown = calibratedDeadBands(cal);
    expect(unknown.get('m4')).to.equal(BAND.DEAD_BAND_DEG);
    expect(unknown.get('m5')).to.be.closeTo(3.6, 1e-9);
    // Touched, its sigma known but not identified to 0.3 degree: still the default floor (decision 0088).
    cal.motors.m4!.offset = { value: 1.2, sigma: 0.7 };
    expect(calibratedDeadBands(cal).get('m4')).to.equal(BAND.DEAD_BAND_DEG);
    const seen: string[] = [];
    const c = new Comparator({ motors: ['m1'], deadBands: bands, onEvent: (e) => seen.push(e.kind) });
    // Two degrees off: within the default band, beyond the calibrated one.
    let t = 0;
    for (; t < BAND.HOLD_S + 0.1; t += 0.02) c.update(t, 'm1', still(2), true, still(0), false);
    expect(c.status()[0]!.deadBand).to.equal(BAND.CALIBRATED_FLOOR_DEG);
    expect(seen).to.deep.equal(['offset']);
    const plain = make();
    for (t = 0; t < BAND.HOLD_S + 0.1; t += 0.02) plain.c.update(t, 'm1', still(2), true, still(0), false);
    expect(plain.seen).to.deep.equal([]);
    expect(plain.c.status()[0]!.deadBand).to.equal(BAND.DEAD_BAND_DEG);
  });

  it('paused (a calibration run), judges nothing; resumed, starts afresh', () => {
    const { c, seen } = make();
    let t = 0;
    // Diverging when paused: the onset is dropped, not carried over the pause.
    for (; t < BAND.HOLD_S - 0.1; t += 0.02) c.update(t, 'm1', still(10), true, still(0), false);
    c.pause();
    for (; t < 5; t += 0.02) {
      const r = c.update(t, 'm1', still(10), t < 2, still(0), false);
      expect(r.state).to.equal('paused');
    }
    expect(r0(c)).to.include({ state: 'paused', error: 10 });
    expect(seen).to.deep.equal([]);
    c.resume();
    const resumed = t;
    for (; t < resumed + BAND.HOLD_S - 0.05; t += 0.02) c.update(t, 'm1', still(10), true, still(0), false);
    expect(seen, 'a whole hold after the resume, not before').to.deep.equal([]);
    for (; t < resumed + BAND.HOLD_S + 0.1; t += 0.02) c.update(t, 'm1', still(10), true, still(0), false);
    expect(seen).to.deep.equal(['raised offset']);
  });

  it('the twin pressing a contact the real joint does not feel is touching, not an event; felt, it is judged', () => {
    // The Torso's held soak: the twin's arm pressed on its side at 39 % where the real servo read 0.
    const loaded = (position: number, load: number): Reading => ({ position, speed: 0, load, goal: 0 });
    const run = (real: Reading, twin: Reading, pressed: boolean) => {
      const seen: string[] = [];
      const c = new Comparator({
        motors: ['m1'],
        onEvent: (e, change) => seen.push(`${change} ${e.kind}`),
        onTouching: (motor, r, tw, side) =>
          seen.push(`touching ${motor} ${side} ${(tw.load - r.load).toFixed(1)}`),
      });
      for (let t = 0; t < 2; t += 0.02)
        c.update(t, 'm1', real, true, twin, false, 0, pressed ? 'pressed' : undefined);
      return { seen, state: r0(c).state };
    };
    // Said once (the server logs it), not raised.
    expect(run(loaded(0, 0.5), loaded(-4, 39), true)).to.deep.equal({
      seen: ['touching m1 twin 38.5'],
      state: 'touching',
    });
    // Without the twin's contact, the same readings are an event.
    expect(run(loaded(0, 0.5), loaded(-4, 39), false).seen).to.deep.equal(['raised pushed']);
    // The real joint pressing as hard: the same contact, met a few millimetres apart (the soak's r_shoulder_x at its
    // hip, 38.9 % against the twin's 49.8): touching too.
    expect(run(loaded(0, 38.9), loaded(-4, 49.8), true)).to.deep.equal({
      seen: ['touching m1 both 10.9'],
      state: 'touching',
    });
    // The twin pressing lightly and the real servo holding no push: nothing holds the joints apart, judged.
    expect(run(loaded(0, 10), loaded(-4, 20), true).seen).to.deep.equal(['raised offset']);
    // The real servo past its goal, pulling back within the band, where the twin's presses (the Torso's abs_z, -9.5 %
    // against the twin's 20.4 % on the trunk's contact): the twin's alone; pressing lightly, judged.
    expect(run(loaded(4, -9.5), loaded(0.8, 20.4), true)).to.deep.equal({
      seen: ['touching m1 twin 29.9'],
      state: 'touching',
    });
    expect(run(loaded(4, -9.5), loaded(0.8, 12), true).seen).to.deep.equal(['raised pushed']);
    // Within the band, a contact changes nothing.
    expect(run(loaded(0, 0.5), loaded(-1, 39), true)).to.deep.equal({ seen: [], state: 'agree' });
    // Once the twin's load falls to the real one's, a shift that stays is an offset, raised a whole hold later.
    const { c, seen } = make();
    let t = 0;
    for (; t < 1; t += 0.02) c.update(t, 'm1', loaded(0, 0.5), true, loaded(-4, 39), false, 0, 'pressed');
    const free = t;
    for (; t < free + BAND.HOLD_S - 0.05; t += 0.02)
      c.update(t, 'm1', loaded(0, 0.5), true, loaded(-4, 5), false, 0, 'pressed');
    expect(seen).to.deep.equal([]);
    for (; t < free + BAND.HOLD_S + 0.1; t += 0.02)
      c.update(t, 'm1', loaded(0, 0.5), true, loaded(-4, 5), false, 0, 'pressed');
    expect(seen).to.deep.equal(['raised offset']);
  });

  it("the robot pressing a contact its twin's links come near is touching, not an event; far from any, judged", () => {
    // The Torso's held soak: the real right arm pushed off its hip at 36 % while the twin's, 3 degrees in, read 9 %.
    const arm = (position: number, speed: number, load: number): Reading => ({
      position,
      speed,
      load,
      goal: 5.4,
    });
    const run = (real: Reading, twin: Reading, contact: TwinContact) => {
      const seen: string[] = [];
      const c = new Comparator({
        motors: ['m1'],
        deadBands: new Map([['m1', 1.5]]),
        onEvent: (e, change) => seen.push(`${change} ${e.kind}`),
        onTouching: (motor, r, tw, side) => seen.push(`touching ${motor} ${side} ${r.load - tw.load}`),
      });
      for (let t = 0; t < 2; t += 0.02) c.update(t, 'm1', real, true, twin, false, 0, contact);
      return { seen, state: r0(c).state };
    };
    const real = arm(1.9, -13.7, 35.7);
    const twin = arm(4.8, -0.7, 8.6);
    // Said once, with who presses; not raised, and it stays touching while the readings do.
    expect(run(real, twin, 'near')).to.deep.equal({ seen: ['touching m1 robot 27.1'], state: 'touching' });
    // No link of the twin near: the robot met something the twin has no part of, an event.
    expect(run(real, twin, undefined).seen)
      .to.have.length(1)
      .and.to.match(/^raised (weak|blocked|pushed)$/);
    // The twin's links near, the real servo no more loaded than its twin's: nothing pressing there, an event.
    expect(run(arm(1.9, -13.7, 12), twin, 'near').seen)
      .to.have.length(1)
      .and.to.match(/^raised /);
    // The twin's links pressing there too, the robot the loaded one: the robot's push, touching.
    expect(run(real, twin, 'pressed')).to.deep.equal({ seen: ['touching m1 robot 27.1'], state: 'touching' });
  });

  it("a push that began where the twin's links came near stays the contact's while it lasts (decision 0094)", () => {
    // The Torso's soak at 104 s: the robot's forearm met its hip as the twin's passed within millimetres, then the
    // twin's went on; the real servo held 39 % against the twin's 15 % while the arm stayed caught.
    const arm = (position: number, load: number): Reading => ({ position, speed: 0, load, goal: 8 });
    const make0 = () => {
      const seen: string[] = [];
      const c = new Comparator({
        motors: ['m1'],
        deadBands: new Map([['m1', 1.5]]),
        onEvent: (e, change) => seen.push(`${change} ${e.kind}`),
        onTouching: (motor, r, tw, side) => seen.push(`touching ${motor} ${side}`),
      });
      return { c, seen };
    };
    // The push begins within the band with the twin near, then the twin moves on (no longer near) and the joints part.
    const drive = (nearAtOnset: boolean, pauseS: number) => {
      const { c, seen } = make0();
      let t = 0;
      for (; t < 0.1; t += 0.02)
        c.update(t, 'm1', arm(6, 39), true, arm(6, 15), false, 0, nearAtOnset ? 'near' : undefined);
      for (; t < 0.1 + pauseS; t += 0.02) c.update(t, 'm1', arm(6, 10), true, arm(6, 15), false);
      const apart = t;
      for (; t < apart + 1.5; t += 0.02) c.update(t, 'm1', arm(3, 39), true, arm(6.2, 15), false);
      return { seen, state: r0(c).state };
    };
    expect(drive(true, 0)).to.deep.equal({ seen: ['touching m1 robot'], state: 'touching' });
    // A push the twin's links were never near: the robot met something else, an event.
    expect(drive(false, 0).seen)
      .to.have.length(1)
      .and.to.match(/^raised /);
    // Once begun, it goes on while the push holds half the load band (the soak's bust_x at 475 s: 28.4 % against the
    // twin's 14.6, 13.8 apart, after a push of 30 against 14 had the twin near); below that it has ended.
    const weaker = (load: number) => {
      const { c, seen } = make0();
      let t = 0;
      for (; t < 0.1; t += 0.02) c.update(t, 'm1', arm(6, 30), true, arm(6, 14), false, 0, 'near');
      for (; t < 1.6; t += 0.02) c.update(t, 'm1', arm(3, load), true, arm(6.2, 14.6), false);
      return seen;
    };
    expect(weaker(28.4)).to.deep.equal(['touching m1 robot']);
    expect(weaker(20))
      .to.have.length(1)
      .and.to.match(/^raised /);
    // A pause in the push within the hold window goes on with it; a longer one ends it and the next push is judged.
    expect(drive(true, BAND.HOLD_S - 0.1).seen).to.deep.equal(['touching m1 robot']);
    expect(drive(true, BAND.HOLD_S + 0.2).seen)
      .to.have.length(1)
      .and.to.match(/^raised /);
  });

  it("asks for the twin's gaps where a motor is beyond its band or its real servo pushes beyond its twin", () => {
    const { c } = make();
    const at = (load: number): Reading => ({ position: 0, speed: 0, load, goal: 0 });
    c.update(0, 'm1', at(5), true, at(0), false);
    expect(c.wantsNear('m1')).to.equal(false);
    // Within the band but pushing: asked, so a push that begins as the twin's links pass by is seen near.
    c.update(0.02, 'm1', at(30), true, at(0), false);
    expect(c.wantsNear('m1')).to.equal(true);
    // Limp: the twin's joint follows the real one, nothing to ask.
    c.update(0.04, 'm1', at(30), true, at(0), true);
    expect(c.wantsNear('m1')).to.equal(false);
    c.update(0.06, 'm1', { ...at(0), position: 10 }, true, at(0), false);
    expect(c.wantsNear('m1')).to.equal(true);
    expect(c.wantsNear('nobody')).to.equal(false);
  });

  it('widens the band with the speed of a moving joint', () => {
    const { c } = make();
    const moving = { position: 0, speed: 200, load: 0 };
    const r = c.update(0, 'm1', { ...moving, position: 8 }, true, moving, false);
    expect(r.band).to.be.closeTo(BAND.DEAD_BAND_DEG + BAND.LAG_S * 200, 1e-9);
    expect(r.state).to.equal('agree');
  });

  it('says offline after the hold time without readings, and clears when the motor is back', () => {
    const { c, seen } = make();
    let t = 0;
    for (; t < BAND.HOLD_S + 0.1; t += 0.02) c.update(t, 'm1', undefined, false, still(0), false);
    expect(seen).to.deep.equal(['raised offline']);
    c.update(t, 'm1', still(0), true, still(0), false);
    expect(seen).to.deep.equal(['raised offline', 'cleared offline']);
  });

  it('compares nothing for a compliant joint', () => {
    const { c, seen } = make();
    for (let t = 0; t < 2; t += 0.02) c.update(t, 'm1', still(40), true, still(0), true);
    expect(seen).to.deep.equal([]);
    expect(c.status()[0]!.state).to.equal('compliant');
  });

  it('classifies: steady shift with loads agreeing is an offset; blocked, weak, pushed by motion and onset', () => {
    // What held over a hold window of 15 readings: how many alike (loads and speeds), how many with the real joint moving.
    const held = (alike: number, realMoving = 0) => ({ samples: 15, alike, realMoving });
    expect(classify(held(15), still(10, 5), still(0, 5), false)).to.equal('offset');
    expect(classify(held(0), still(10, 60), still(40, 5), true)).to.equal('blocked');
    expect(
      classify(
        held(0, 15),
        { position: 10, speed: 50, load: 90 },
        { position: 40, speed: 200, load: 30 },
        true,
      ),
    ).to.equal('weak');
    expect(classify(held(0), still(14, -40), still(0, 0), false)).to.equal('pushed');
    // Standing short of the twin after a move: blocked if it barely left its start, weak (sagging) if it came most
    // of the way.
    const start = { real: 0, twin: 0 };
    expect(classify(held(0), still(4, 80), still(40, 5), true, start)).to.equal('blocked');
    expect(classify(held(0), still(32, 80), still(40, 5), true, start)).to.equal('weak');
  });

  it('classifies by what held over most of the hold window, whatever its last reading says', () => {
    const held = (alike: number, realMoving = 0) => ({ samples: 15, alike, realMoving });
    // The last reading's speed and load say a push; 12 of 15 readings said an offset.
    expect(classify(held(12), { position: 10, speed: 30, load: 40 }, still(0, 5), false)).to.equal('offset');
    // The last reading looks alike; most said a push (the load apart).
    expect(classify(held(3), still(14, 0), still(0, 0), false)).to.equal('pushed');
    // Half is not most.
    expect(classify({ samples: 14, alike: 7, realMoving: 0 }, still(10, 5), still(0, 5), false)).to.equal(
      'pushed',
    );
    // Moving at its last reading (and one other) but standing over the window: blocked. Still at its last reading,
    // moving in 5 of 15 (more than a quarter): weak.
    const start = { real: 0, twin: 0 };
    expect(classify(held(0, 2), { position: 4, speed: 20, load: 80 }, still(40, 5), true, start)).to.equal(
      'blocked',
    );
    expect(classify(held(0, 5), still(4, 80), still(40, 5), true, start)).to.equal('weak');
  });

  describe('through a hold window whose last reading flickers (a late cycle, a jostle)', () => {
    /**
     * Comparisons every 20 ms until the one that raises, which is given `last` true: the onset is the first comparison
     * that leaves the band, the raise the first at least HOLD_S after it. Returns the events seen.
     */
    const run = (sample: (t: number, last: boolean) => { real: Reading; twin: Reading }): string[] => {
      const seen: string[] = [];
      const c = new Comparator({ motors: ['m1'], onEvent: (e, change) => seen.push(`${change} ${e.kind}`) });
      let onset: number | undefined;
      for (let i = 0; i < 500 && seen.length === 0; i++) {
        const t = i / 50;
        const last = onset !== undefined && t - onset >= BAND.HOLD_S;
        const { real, twin } = sample(t, last);
        const r = c.update(t, 'm1', real, true, twin, false);
        if (r.state === 'diverging') onset ??= t;
        if (last) expect(r.state, 'the raise falls on the reading given last').to.not.equal('diverging');
      }
      return seen;
    };
    const holding: Reading = { position: 0, speed: 0, load: 5, goal: 0 };
    // The twin's goal turning at 40 deg/s from 0 to 40 (a goto), the twin 1 degree behind it.
    const goto = (t: number): Reading => {
      const goal = Math.min(40, t * 40);
      return { position: goal - 1, speed: t < 1 ? 40 : 0, load: 5, goal };
    };

    it('an offset whose last reading has a speed spike, or a load jostled, is still an offset', () => {
      const spiked = run((_t, last) => ({ real: { ...still(12, 5), speed: last ? 30 : 0 }, twin: holding }));
      expect(spiked).to.deep.equal(['raised offset']);
      const jostled = run((_t, last) => ({ real: still(12, last ? 45 : 5), twin: holding }));
      expect(jostled).to.deep.equal(['raised offset']);
    });

    it('a push whose last load reading happens to match the twin is still a push', () => {
      expect(run((_t, last) => ({ real: still(20, last ? 5 : -60), twin: holding }))).to.deep.equal([
        'raised pushed',
      ]);
    });

    it('a joint standing at a stop with a speed spike at its last reading is blocked, not weak', () => {
      const seen = run((t, last) => ({
        real: { position: Math.min(t * 40, 2), speed: last ? 20 : 0, load: 80 },
        twin: goto(t),
      }));
      expect(seen).to.deep.equal(['raised blocked']);
    });

    it('a weak joint creeping after the twin, still at its last reading, is weak, not blocked', () => {
      const seen = run((t, last) => ({
        real: { position: t * 10, speed: last ? 0 : 10, load: 80 },
        twin: goto(t),
      }));
      expect(seen).to.deep.equal(['raised weak']);
    });
  });

  it("tells a push on a holding joint jostled by the others from a commanded move, by the twin's goal", () => {
    // The twin holds its goal of 0 while its speed flickers (the other joints moving); the real joint is turned away.
    const jostled = (t: number): Reading => ({
      position: 0.5,
      speed: t % 0.04 < 0.02 ? 9 : -9,
      load: 0,
      goal: 0,
    });
    const pushed = make();
    let t = 0;
    for (; t < 1 + BAND.HOLD_S + 0.1; t += 0.02)
      pushed.c.update(t, 'm1', { ...still(t < 1 ? 0.5 : 20), load: -60 }, true, jostled(t), false);
    expect(pushed.seen).to.deep.equal(['raised pushed']);
    // The same readings while the goal moves (a goto under way): the joint that does not follow is blocked.
    const blocked = make();
    t = 0;
    for (; t < 1 + BAND.HOLD_S + 0.1; t += 0.02) {
      const goal = Math.min(40, t * 40);
      const twin = { position: goal - 1, speed: t < 1 ? 40 : 0, load: 5, goal };
      blocked.c.update(t, 'm1', { ...still(Math.min(goal, 2)), load: 80 }, true, twin, false);
    }
    expect(blocked.seen).to.deep.equal(['raised blocked']);
  });

  it('keeps a bounded history, newest last', () => {
    const c = new Comparator({ motors: ['m1'], historySize: 3 });
    let t = 0;
    for (let i = 0; i < 5; i++) {
      const end = t + BAND.HOLD_S + 0.1;
      for (; t < end; t += 0.02) c.update(t, 'm1', still(10), true, still(0), false);
      const back = t + BAND.CLEAR_HOLD_S + 0.1;
      for (; t < back; t += 0.02) c.update(t, 'm1', still(0), true, still(0), false);
    }
    const events = c.events();
    expect(events).to.have.length(3);
    expect(events[0]!.since).to.be.below(events[2]!.since);
  });
});

describe('the shadow twin beside a protocol 1.0 robot (Torso)', function () {
  this.timeout(20000);

  it('keeps the goal a servo had when the robot writes one outside its angle limits, as the servo does', async () => {
    const b = await besideTwin('torso', 0);
    try {
      const headY = 37;
      const spec = b.real.models.get(headY)!;
      const goal = async () => (await b.twin.sim.bus.read([headY], 'goal_position')).get(headY);
      // head_y's limits are raw 0 to 50 degrees: a limp head hanging at 95, made stiff where it is.
      b.real.write('goal_position', new Map([[headY, degToPosition(spec, 20)]]));
      await b.run(0.04);
      expect(await goal()).to.equal(degToPosition(spec, 20));
      b.real.write('goal_position', new Map([[headY, degToPosition(spec, 95)]]));
      await b.run(0.04);
      expect(await goal(), 'refused').to.equal(degToPosition(spec, 20));
      b.real.write('goal_position', new Map([[headY, degToPosition(spec, 45)]]));
      await b.run(0.04);
      expect(await goal()).to.equal(degToPosition(spec, 45));
    } finally {
      await b.close();
    }
  });
});

describe('the shadow twin in a worker that dies, beside a bus that drops a reply', function () {
  this.timeout(30000);

  /** Every servo stiff; m2's torque_enable unanswered `silentFor` times after the worker died. */
  class SilentReal extends ScriptedReal {
    silentFor = 0;
    readonly asked: number[][] = [];
    override readonly bus = {
      read: async (ids: readonly number[], reg?: BusRegister) => {
        if (reg === 'torque_enable') {
          this.asked.push([...ids]);
          const silent = this.silentFor > 0;
          if (silent) this.silentFor--;
          return new Map(ids.filter((id) => !(silent && id === 2)).map((id) => [id, 1]));
        }
        return new Map(ids.map((id) => [id, degToPosition(this.spec, this.positions.get(id)!)]));
      },
    };
  }

  /** A twin in a worker beside a SilentReal, every servo stiff, its worker ended and started again. */
  async function restartWith(silentFor: number) {
    const config = await loadRobotConfig('ergo-jr');
    const real = new SilentReal();
    const logs: string[] = [];
    const twin = new ShadowTwin({
      config,
      urdf: await loadUrdf(config.urdfPath),
      real: real as unknown as RealBackend,
      log: (line) => logs.push(line),
      wallMs: real.wallMs,
      thread: 'worker',
    });
    await twin.open();
    real.queue(
      'torque_enable',
      [1, 2, 3, 4, 5, 6].map((id): [number, RawValue] => [id, 1]),
    );
    real.cycle(1);
    await twin.settled();
    expect(twin.status().motors.map((m) => m.state)).to.not.include('compliant');
    real.silentFor = silentFor;
    await (twin.engine as ThreadTwinEngine).thread.terminate();
    await until('the worker started again', async () => {
      real.cycle(0);
      await twin.settled();
      return logs.some((l) => l.includes("the twin's thread runs again")) ? true : undefined;
    });
    return { real, twin, logs };
  }

  it("asks again for a register a servo did not answer: a stiff servo stays stiff in the new worker's twin", async () => {
    const { real, twin } = await restartWith(1);
    try {
      expect(real.asked, 'everyone, then the one that did not answer').to.deep.equal([
        [1, 2, 3, 4, 5, 6],
        [2],
      ]);
      for (let i = 0; i < 3; i++) real.cycle(0);
      await twin.settled();
      const m2 = twin.status().motors.find((m) => m.motor === 'm2')!;
      expect(m2.state, JSON.stringify(m2)).to.equal('agree');
    } finally {
      await twin.close();
    }
  });

  it('a servo silent through every attempt of the restart is asked again as the cycles come, then said', async () => {
    // Six reads lost: four in the restart, two more once the cycles come; the seventh answers and m2 is stiff again.
    const late = await restartWith(6);
    try {
      for (let i = 0; i < 10; i++) {
        late.real.cycle(0);
        await late.twin.settled();
      }
      expect(late.real.asked.filter((ids) => ids.join() === '2')).to.have.length(6);
      const m2 = late.twin.status().motors.find((m) => m.motor === 'm2')!;
      expect(m2.state, JSON.stringify(m2)).to.equal('agree');
      expect(late.logs.filter((l) => l.includes('did not answer'))).to.deep.equal([]);
    } finally {
      await late.twin.close();
    }
    // Never answered: asked for two seconds of cycles, then said once, and m2 left to the comparison.
    const never = await restartWith(Infinity);
    try {
      for (let i = 0; i < 110; i++) {
        never.real.cycle(0);
        await never.twin.settled();
      }
      expect(never.logs.filter((l) => l.includes('did not answer'))).to.deep.equal([
        'shadow: the new twin has no torque_enable of m2: the servos did not answer',
      ]);
      const asked = never.real.asked.length;
      for (let i = 0; i < 5; i++) never.real.cycle(0);
      await never.twin.settled();
      expect(never.real.asked, 'no longer asked').to.have.length(asked);
    } finally {
      await never.twin.close();
    }
  });
});

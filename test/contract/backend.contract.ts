/**
 * The Backend contract (src/core/backend.ts): what src/robot/robot.ts relies on, checked the same way on every
 * backend. Values cross the bus in raw register counts.
 *
 * Written to be safe on a real robot: the only position ever written is the one the motor reports, torque is enabled
 * only while goal = present position, and every setting changed is restored.
 */
import type { SimulationControls } from '../../src/sim/controls.ts';
import { expect } from 'chai';
import type { Backend } from '../../src/core/backend.ts';
import { RobotError } from '../../src/core/errors.ts';
import type { BusRegister, ModelSpec, RawValue } from '../../src/dynamixel/registers.ts';

/** Builds a backend that is not opened yet, or undefined when it cannot run here (the suite is then pending). */
export type MakeBackend = () => Promise<Backend | undefined>;

interface RegisterRule {
  /** Which models have it. */
  readonly on: (spec: ModelSpec) => boolean;
  /** Checks one value read from the bus. */
  readonly check: (v: RawValue, spec: ModelSpec) => boolean;
}

const all = () => true;
const int = (v: RawValue, lo: number, hi: number) =>
  typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi;
const ints = (v: RawValue, n: number, lo: number, hi: number) =>
  Array.isArray(v) && v.length === n && v.every((x) => int(x, lo, hi));

/** Every register src/robot/robot.ts reads, with the models that have it and its raw range. */
const READ: Readonly<Partial<Record<BusRegister, RegisterRule>>> = {
  present_position: { on: all, check: (v, s) => int(v, 0, s.positionSteps - 1) },
  present_speed: { on: all, check: (v) => int(v, 0, 2047) },
  present_load: { on: all, check: (v) => int(v, 0, 2047) },
  present_voltage: { on: all, check: (v) => int(v, 1, 255) },
  present_temperature: { on: all, check: (v) => int(v, 0, 255) },
  present_current: { on: (s) => s.name === 'MX-64', check: (v) => int(v, 0, 4095) },
  torque_enable: { on: all, check: (v) => int(v, 0, 1) },
  goal_position: { on: all, check: (v, s) => int(v, 0, s.positionSteps - 1) },
  moving_speed: { on: all, check: (v) => int(v, 0, 2047) },
  torque_limit: { on: all, check: (v) => int(v, 0, 1023) },
  pid: { on: (s) => s.control === 'pid', check: (v) => ints(v, 3, 0, 254) },
  compliance_margin: { on: (s) => s.control === 'compliance', check: (v) => ints(v, 2, 0, 255) },
  compliance_slope: { on: (s) => s.control === 'compliance', check: (v) => ints(v, 2, 0, 254) },
  led: { on: (s) => s.name === 'XL-320', check: (v) => int(v, 0, 7) },
};

/** Values the servo must refuse (its Range error), per register. */
const OUT_OF_RANGE: readonly [BusRegister, (s: ModelSpec) => boolean, (s: ModelSpec) => RawValue[]][] = [
  ['goal_position', all, (s) => [s.positionSteps, -1, 1.5, 100000]],
  ['moving_speed', all, () => [2048, -1]],
  ['torque_limit', all, () => [1024, -5, 0.5]],
  ['torque_enable', all, () => [2, -1]],
  [
    'pid',
    (s) => s.control === 'pid',
    () => [
      [0, 0, 255],
      [-1, 0, 32],
      [0, 32],
    ],
  ],
  ['compliance_margin', (s) => s.control === 'compliance', () => [[256, 1], [1]]],
  ['led', (s) => s.name === 'XL-320', () => [8, -1]],
  ['control_mode', (s) => s.name === 'XL-320', () => [3, -1]],
];

function rejectsWith(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.fail('expected a rejection'),
    (err: unknown) => err,
  );
}

export function backendContract(name: string, makeBackend: MakeBackend): void {
  describe(`Backend contract: ${name}`, function () {
    this.timeout(30000);
    let backend: Backend;
    let ids: number[];
    const specOf = (id: number) => backend.models.get(id)!;
    const having = (on: (s: ModelSpec) => boolean) => ids.filter((id) => on(specOf(id)));

    before(async function () {
      const b = await makeBackend();
      if (!b) this.skip();
      backend = b;
      await backend.open();
      ids = [...backend.models.keys()];
    });
    after(async () => {
      await backend?.close();
    });

    /** An id no motor answers to. */
    const unknownId = () => [253, 252, 251, 250, 200].find((id) => !backend.models.has(id))!;

    async function read(reg: BusRegister, which: readonly number[] = ids): Promise<Map<number, RawValue>> {
      const values = await backend.bus.read(which, reg);
      expect(
        [...values.keys()].sort((a, b) => a - b),
        reg,
      ).to.deep.equal([...which].sort((a, b) => a - b));
      return values;
    }

    it('open() and close() are idempotent', async () => {
      const b = (await makeBackend())!;
      await b.open();
      await b.open();
      const values = await b.bus.read([...b.models.keys()], 'present_position');
      expect(values.size).to.equal(b.models.size);
      await b.close();
      await b.close();
    });

    it('knows the model of every motor on the bus', () => {
      expect(ids.length).to.be.greaterThan(0);
      for (const id of ids) {
        expect(int(id, 0, 252), `id ${id}`).to.equal(true);
        expect(['AX-12', 'MX-28', 'MX-64', 'XL-320']).to.include(specOf(id).name);
      }
      expect(backend.kind).to.be.oneOf(['sim', 'real']);
    });

    it('reads every register the robot uses, for every motor that has it, in raw units', async () => {
      for (const [reg, rule] of Object.entries(READ) as [BusRegister, RegisterRule][]) {
        const which = having(rule.on);
        if (!which.length) continue;
        const values = await read(reg, which);
        for (const id of which) {
          const v = values.get(id)!;
          expect(rule.check(v, specOf(id)), `${reg} of ${id}: ${JSON.stringify(v)}`).to.equal(true);
        }
      }
    });

    it('a read of one motor at a time answers the same shape', async () => {
      for (const id of ids) expect((await read('present_position', [id])).size).to.equal(1);
    });

    it('writes then reads back goal_position, moving_speed, torque_limit and torque_enable', async () => {
      const present = await read('present_position');
      await backend.bus.write('goal_position', present);
      expect(await read('goal_position')).to.deep.equal(present);

      const speeds = await read('moving_speed');
      const speed = new Map(ids.map((id, i) => [id, 100 + i]));
      await backend.bus.write('moving_speed', speed);
      expect(await read('moving_speed')).to.deep.equal(speed);
      await backend.bus.write('moving_speed', speeds);

      const limits = await read('torque_limit');
      const limit = new Map(ids.map((id) => [id, 512]));
      await backend.bus.write('torque_limit', limit);
      expect(await read('torque_limit')).to.deep.equal(limit);
      await backend.bus.write('torque_limit', limits);
      expect(await read('torque_limit')).to.deep.equal(limits);

      const enabled = await read('torque_enable');
      for (const te of [1, 0]) {
        const values = new Map(ids.map((id) => [id, te]));
        await backend.bus.write('torque_enable', values);
        expect(await read('torque_enable')).to.deep.equal(values);
      }
      await backend.bus.write('torque_enable', enabled);
    });

    it('writes then reads back pid (PID models), compliance margin/slope (AX), led and control_mode (XL-320)', async () => {
      const cases: [BusRegister, (s: ModelSpec) => boolean, RawValue][] = [
        ['pid', (s) => s.control === 'pid', [0, 4, 40]],
        ['compliance_margin', (s) => s.control === 'compliance', [2, 3]],
        ['compliance_slope', (s) => s.control === 'compliance', [64, 64]],
        ['led', (s) => s.name === 'XL-320', 2],
        ['control_mode', (s) => s.name === 'XL-320', 1],
      ];
      for (const [reg, on, v] of cases) {
        const which = having(on);
        if (!which.length) continue;
        const before = await read(reg, which);
        const values = new Map(which.map((id) => [id, v]));
        await backend.bus.write(reg, values);
        expect(await read(reg, which), reg).to.deep.equal(values);
        await backend.bus.write(reg, before);
        expect(await read(reg, which), reg).to.deep.equal(before);
      }
    });

    it('refuses out-of-range writes and keeps the value it had', async () => {
      for (const [reg, on, bad] of OUT_OF_RANGE) {
        for (const id of having(on)) {
          const before = (await read(reg, [id])).get(id);
          for (const v of bad(specOf(id))) {
            const err = await rejectsWith(backend.bus.write(reg, new Map([[id, v]])));
            expect(err, `${reg} = ${JSON.stringify(v)} on ${id}`).to.be.instanceOf(Error);
            expect((await read(reg, [id])).get(id), `${reg} of ${id}`).to.deep.equal(before);
          }
        }
      }
    });

    it('a read naming an unknown id rejects with a hardware error', async () => {
      const err = await rejectsWith(backend.bus.read([ids[0]!, unknownId()], 'present_position'));
      expect(err).to.be.instanceOf(RobotError);
      expect((err as RobotError).code).to.equal('hardware');
      expect((err as RobotError).message).to.include(String(unknownId()));
    });

    it('a write naming an unknown id rejects with a hardware error and writes nothing', async () => {
      const before = await read('torque_limit');
      const values = new Map([
        [ids[0]!, 100],
        [unknownId(), 100],
      ]);
      const err = await rejectsWith(backend.bus.write('torque_limit', values));
      expect(err).to.be.instanceOf(RobotError);
      expect((err as RobotError).code).to.equal('hardware');
      expect(await read('torque_limit')).to.deep.equal(before);
    });

    it('its clock advances (and a sleep on it resolves)', async () => {
      const t0 = backend.clock.now();
      const sleeping = backend.clock.sleep(0.05);
      // A twin on a manual clock moves only when advanced (the sim backend carries its controls).
      const sim = (backend as { simulation?: SimulationControls }).simulation;
      if (sim?.speed === 'manual') await sim.advance(0.1);
      await sleeping;
      expect(backend.clock.now()).to.be.at.least(t0 + 0.05 - 1e-9);
    });
  });
}

/**
 * Every /motors endpoint (docs/reference/rest-api.md 4.2 with the docs/reference/contract.md 1-2 rules) on the three robots, over inject() on a
 * sim whose clock moves only when the test advances it.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { degToPosition, positionToDeg } from '../../src/dynamixel/registers.ts';
import type { LightMyRequestResponse } from 'fastify';
import { json, setValue, simServer, standStill, untilAnswered, value, type TestServer } from '../helpers.ts';
import {
  GOAL_SPEED_TRAVEL,
  LED_COLOURS,
  MAX_SPEED,
  NOMINAL_VOLTS,
  ROBOTS,
  SETTLE_MAX_S,
  WRITABLE,
  fact,
  isErrorBody,
  maxAngle,
  minAngle,
  onePerModel,
  registersOf,
  type MotorFact,
} from './facts.ts';
import { expectArrival } from './arrival.ts';

function expectError(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
  const body = json(res);
  expect(isErrorBody(body), res.body).to.equal(true);
  return body;
}

function ok(res: LightMyRequestResponse): Record<string, unknown> {
  expect(res.statusCode, res.body).to.equal(200);
  expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
  return json(res);
}

const regUrl = (motor: string, reg: string) => `/motors/${motor}/registers/${reg}/value.json`;

async function stiff(s: TestServer, motors: readonly string[]): Promise<void> {
  for (const name of motors) ok(await setValue(s, name, 'compliant', false));
  await s.advance(0.1);
}

/** Lets the server run everything it can without sim time moving. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** Tracks whether a request has answered yet. */
function track(request: Promise<LightMyRequestResponse>) {
  const state: { answer?: LightMyRequestResponse } = {};
  void request.then((r) => (state.answer = r));
  return state;
}

const isInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v);

/** The type (and where it is fixed, the value) of every register, docs/reference/contract.md 2 and docs/reference/pypot.md 4.2. */
function checkRegisterValue(reg: string, v: unknown, f: MotorFact, what: string): void {
  const num = () => expect(v, what).to.be.a('number').and.satisfy(Number.isFinite);
  switch (reg) {
    case 'registers':
      expect(v, what).to.deep.equal(registersOf(f.model));
      break;
    case 'compliant':
    case 'safe_compliant':
      expect(v, what).to.be.a('boolean');
      break;
    case 'angle_limit':
      expect(v, what).to.deep.equal([f.lower, f.upper]);
      break;
    case 'lower_limit':
      expect(v, what).to.equal(f.lower);
      break;
    case 'upper_limit':
      expect(v, what).to.equal(f.upper);
      break;
    case 'id':
      expect(v, what).to.equal(f.id);
      break;
    case 'name':
      expect(v, what).to.equal(f.name);
      break;
    case 'model':
      expect(v, what).to.equal(f.model);
      break;
    case 'present_position':
    case 'goal_position':
      num();
      expect(v as number, what).to.be.within(minAngle(f) - 3, maxAngle(f) + 3);
      break;
    case 'present_load':
      num();
      expect(v as number, what).to.be.within(-100, 100);
      break;
    case 'torque_limit':
      num();
      expect(v as number, what).to.be.within(0, 100);
      break;
    case 'moving_speed':
      num();
      expect(v as number, what).to.be.within(0, MAX_SPEED[f.model]);
      break;
    case 'present_voltage':
      num();
      expect(v as number, what).to.be.closeTo(NOMINAL_VOLTS[f.model], 1);
      break;
    case 'present_temperature':
      num();
      expect(v as number, what).to.be.within(15, 45);
      break;
    case 'goal_speed':
    case 'present_speed':
    case 'present_current':
    case 'control_mode':
      num();
      break;
    case 'pid':
      expect(v, what).to.be.an('array').with.lengthOf(3);
      for (const g of v as unknown[]) expect(g, what).to.be.a('number').and.at.least(0);
      break;
    case 'compliance_margin':
    case 'compliance_slope':
      expect(v, what).to.be.an('array').with.lengthOf(2);
      for (const g of v as unknown[]) expect(isInt(g), what).to.equal(true);
      break;
    case 'led':
      expect(LED_COLOURS, what).to.include(v);
      break;
    default:
      expect.fail(`register ${reg} is not in docs/reference/contract.md 2`);
  }
}

for (const robot of ROBOTS) {
  describe(`/motors on the ${robot.name}`, function () {
    this.timeout(30000);
    const names = robot.motors.map((f) => f.name);
    const models = onePerModel(robot);

    describe('reading (no state change)', () => {
      let s: TestServer;
      before(async () => {
        s = await simServer(robot.name);
        await s.advance(0.3); // a few control ticks: the slow registers have been read
      });
      after(() => s.close());

      it('lists the motors in configuration order', async () => {
        expect(ok(await s.get('/motors/list.json'))).to.deep.equal({ motors: names });
      });

      it('lists the aliases in file order', async () => {
        expect(ok(await s.get('/motors/aliases/list.json'))).to.deep.equal({
          aliases: Object.keys(robot.aliases),
        });
      });

      it('expands every alias (nested ones too) to motor names in order', async () => {
        for (const [alias, motors] of Object.entries(robot.aliases)) {
          expect(ok(await s.get(`/motors/${alias}/list.json`)), alias).to.deep.equal({ [alias]: motors });
        }
      });

      it('answers 404 for an unknown alias and for a motor name used as an alias', async () => {
        expectError(await s.get('/motors/no_such_alias/list.json'), 404);
        expectError(await s.get(`/motors/${names[0]}/list.json`), 404);
        // Names an object has by inheritance are not aliases either.
        for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
          expectError(await s.get(`/motors/${name}/list.json`), 404);
          expectError(await s.get(`/motors/${name}/registers/list.json`), 404);
          expectError(await s.get(regUrl(names[0]!, name)), 404);
          expectError(
            await s.post('/motors/goto.json', { motors: [name], positions: [0], duration: 1 }),
            404,
          );
        }
      });

      it("lists each motor's registers in CONTRACT order for its model", async () => {
        for (const f of robot.motors) {
          expect(ok(await s.get(`/motors/${f.name}/registers/list.json`)), f.name).to.deep.equal({
            registers: registersOf(f.model),
          });
        }
        expectError(await s.get('/motors/no_such_motor/registers/list.json'), 404);
      });

      it('reads every register of every motor with the right type', async () => {
        for (const f of robot.motors) {
          for (const reg of registersOf(f.model)) {
            const body = ok(await s.get(regUrl(f.name, reg)));
            expect(Object.keys(body), `${f.name}.${reg}`).to.deep.equal([reg]);
            checkRegisterValue(reg, body[reg], f, `${f.name}.${reg}`);
          }
        }
      });

      it('gives the limits in the user frame (docs/reference/robots.md 1.1, 2.1, 3.1)', async () => {
        for (const f of robot.motors) {
          expect(await value(s, f.name, 'angle_limit'), f.name).to.deep.equal([f.lower, f.upper]);
          expect(await value(s, f.name, 'lower_limit'), f.name).to.equal(f.lower);
          expect(await value(s, f.name, 'upper_limit'), f.name).to.equal(f.upper);
        }
      });

      it('reads safe_compliant as whether the motor is compliant', async () => {
        for (const f of robot.motors) {
          expect(await value(s, f.name, 'safe_compliant')).to.equal(await value(s, f.name, 'compliant'));
        }
      });

      it('answers 404 for an unknown motor, an unknown register, and a register the model lacks', async () => {
        expectError(await s.get(regUrl('no_such_motor', 'present_position')), 404);
        expectError(await s.get(regUrl(names[0]!, 'no_such_register')), 404);
        for (const f of models) {
          const lacking = ['pid', 'led', 'control_mode', 'compliance_margin', 'present_current'].filter(
            (r) => !registersOf(f.model).includes(r),
          );
          for (const reg of lacking) expectError(await s.get(regUrl(f.name, reg)), 404);
        }
      });

      it('/motors/registers/<r>/list.json maps every motor that has the register, in order', async () => {
        const all = ok(await s.get('/motors/registers/present_position/list.json'));
        expect(Object.keys(all)).to.deep.equal(['present_position']);
        const map = all.present_position as Record<string, unknown>;
        expect(Object.keys(map)).to.deep.equal(names);
        for (const f of robot.motors) checkRegisterValue('present_position', map[f.name], f, f.name);

        const limits = ok(await s.get('/motors/registers/angle_limit/list.json')).angle_limit;
        expect(limits).to.deep.equal(
          Object.fromEntries(robot.motors.map((f) => [f.name, [f.lower, f.upper]])),
        );

        for (const reg of ['pid', 'led', 'compliance_margin', 'present_current']) {
          const having = robot.motors.filter((f) => registersOf(f.model).includes(reg)).map((f) => f.name);
          const res = await s.get(`/motors/registers/${reg}/list.json`);
          if (!having.length) expectError(res, 404);
          else expect(Object.keys(ok(res)[reg] as object), reg).to.deep.equal(having);
        }
        expectError(await s.get('/motors/registers/no_such_register/list.json'), 404);
      });

      if (robot.name === 'torso') {
        it('pid on the Torso maps only the 11 MX motors', async () => {
          const pid = ok(await s.get('/motors/registers/pid/list.json')).pid as Record<string, unknown>;
          expect(Object.keys(pid)).to.deep.equal(names.filter((n) => !n.startsWith('head_')));
          expect(Object.keys(pid)).to.have.lengthOf(11);
        });
      }

      it('/robot.json has every register but safe_compliant as keys, matching value.json', async () => {
        const body = ok(await s.get('/robot.json'));
        expect(body.primitives).to.be.an('array');
        const motors = body.motors as Record<string, unknown>[];
        expect(motors.map((m) => m.name)).to.deep.equal(names);
        for (const f of robot.motors) {
          const entry = motors.find((m) => m.name === f.name)!;
          expect(Object.keys(entry), f.name).to.have.members(
            registersOf(f.model).filter((r) => r !== 'safe_compliant'),
          );
          for (const [reg, v] of Object.entries(entry)) {
            checkRegisterValue(reg, v, f, `robot.json ${f.name}.${reg}`);
            expect(v, `${f.name}.${reg}`).to.deep.equal(await value(s, f.name, reg));
          }
        }
      });
    });

    describe('register writes', () => {
      let s: TestServer;
      beforeEach(async () => {
        s = await simServer(robot.name);
      });
      afterEach(() => s.close());

      it('compliant takes booleans and the CONTRACT spellings, answering the boolean now set', async () => {
        const m = names[0]!;
        const spellings: [unknown, boolean][] = [
          [false, false],
          [true, true],
          ['false', false],
          ['True', true],
          ['False', false],
          ['TRUE', true],
          ['0', false],
          ['1', true],
          [0, false],
          [1, true],
        ];
        for (const [v, expected] of spellings) {
          expect(ok(await setValue(s, m, 'compliant', JSON.stringify(v))), JSON.stringify(v)).to.deep.equal({
            compliant: expected,
          });
          expect(await value(s, m, 'compliant')).to.equal(expected);
        }
      });

      it('compliant refuses anything else with 400 and changes nothing', async () => {
        const m = names[0]!;
        for (const v of ['yes', 'on', 2, -1, 0.5, null, [], {}, [true], '']) {
          expectError(await setValue(s, m, 'compliant', JSON.stringify(v)), 400);
        }
        expectError(await s.post(regUrl(m, 'compliant')), 400); // no body at all
        expect(await value(s, m, 'compliant')).to.equal(true);
      });

      it('goal_position takes numbers and numeric strings; anything else is 400', async () => {
        for (const f of models) {
          const mid = (f.lower + f.upper) / 2;
          expect(ok(await setValue(s, f.name, 'goal_position', mid))).to.deep.equal({ goal_position: mid });
          expect(ok(await setValue(s, f.name, 'goal_position', '"12.5"'))).to.deep.equal({
            goal_position: 12.5,
          });
          for (const bad of ['"abc"', 'true', 'null', '[1]', '{}', '""', '"12deg"']) {
            expectError(await setValue(s, f.name, 'goal_position', bad), 400);
          }
          expect(await value(s, f.name, 'goal_position')).to.equal(12.5);
        }
      });

      it('goal_position is clamped into the angle limits and the answer shows it', async () => {
        for (const f of robot.motors) {
          expect(ok(await setValue(s, f.name, 'goal_position', maxAngle(f) + 40))).to.deep.equal({
            goal_position: maxAngle(f),
          });
          expect(await value(s, f.name, 'goal_position')).to.equal(maxAngle(f));
          expect(ok(await setValue(s, f.name, 'goal_position', minAngle(f) - 40))).to.deep.equal({
            goal_position: minAngle(f),
          });
        }
      });

      it('torque_limit is clamped to 0..100 and type-checked', async () => {
        const m = names[0]!;
        expect(ok(await setValue(s, m, 'torque_limit', 55))).to.deep.equal({ torque_limit: 55 });
        expect(ok(await setValue(s, m, 'torque_limit', '"30"'))).to.deep.equal({ torque_limit: 30 });
        // The servo holds 0.1 % steps (1023 counts): 33.333 % is 341 counts, read back as 33.3 %.
        expect(ok(await setValue(s, m, 'torque_limit', 33.333))).to.deep.equal({ torque_limit: 33.3 });
        expect(await value(s, m, 'torque_limit')).to.equal(33.3);
        expect(ok(await setValue(s, m, 'torque_limit', 150))).to.deep.equal({ torque_limit: 100 });
        expect(await value(s, m, 'torque_limit')).to.equal(100);
        expect(ok(await setValue(s, m, 'torque_limit', -5))).to.deep.equal({ torque_limit: 0 });
        expect(await value(s, m, 'torque_limit')).to.equal(0);
        for (const bad of ['"strong"', 'false', '[50]', 'null']) {
          expectError(await setValue(s, m, 'torque_limit', bad), 400);
        }
        expect(await value(s, m, 'torque_limit')).to.equal(0);
      });

      it('moving_speed takes deg/s up to the model maximum', async () => {
        for (const f of models) {
          expect(ok(await setValue(s, f.name, 'moving_speed', 100))).to.deep.equal({ moving_speed: 100 });
          expect(ok(await setValue(s, f.name, 'moving_speed', '"50"'))).to.deep.equal({ moving_speed: 50 });
          expect(ok(await setValue(s, f.name, 'moving_speed', 5000))).to.deep.equal({
            moving_speed: MAX_SPEED[f.model],
          });
          expectError(await setValue(s, f.name, 'moving_speed', '"fast"'), 400);
          expect(await value(s, f.name, 'moving_speed')).to.equal(MAX_SPEED[f.model]);
        }
      });

      it('every read-only register answers 403 with the error body and keeps its value', async () => {
        for (const f of models) {
          for (const reg of registersOf(f.model).filter((r) => !WRITABLE.includes(r))) {
            const before = await value(s, f.name, reg);
            const body = expectError(await setValue(s, f.name, reg, reg === 'name' ? '"x"' : 12), 403);
            expect(body.error).to.include(reg);
            // 403 whatever the body: the register is read-only before the value is looked at.
            expectError(await s.post(regUrl(f.name, reg)), 403);
            if (!reg.startsWith('present_')) expect(await value(s, f.name, reg)).to.deep.equal(before);
          }
        }
      });

      it('writes to an unknown motor or register are 404', async () => {
        expectError(await setValue(s, 'no_such_motor', 'goal_position', 10), 404);
        expectError(await setValue(s, names[0]!, 'no_such_register', 10), 404);
        for (const f of models) {
          for (const reg of ['pid', 'led', 'control_mode', 'compliance_margin', 'compliance_slope']) {
            if (!registersOf(f.model).includes(reg))
              expectError(await setValue(s, f.name, reg, reg === 'led' ? '"red"' : '[1, 1]'), 404);
          }
        }
      });

      it('turning compliant to stiff copies present_position into goal_position: no jump', async () => {
        const m = robot.pair[0];
        const f = fact(robot, m);
        await s.advance(0.2);
        const far = (await value(s, m, 'present_position')) as number;
        const target = Math.abs(maxAngle(f) - far) > Math.abs(minAngle(f) - far) ? maxAngle(f) : minAngle(f);
        // A compliant motor keeps a written goal but does not move.
        ok(await setValue(s, m, 'goal_position', target));
        await s.advance(0.5);
        const present = (await value(s, m, 'present_position')) as number;
        expect(Math.abs(present - far)).to.be.below(2);
        expect(await value(s, m, 'goal_position')).to.equal(target);
        ok(await setValue(s, m, 'compliant', false));
        expect(await value(s, m, 'goal_position')).to.equal(await value(s, m, 'present_position'));
        await s.advance(1);
        expect(Math.abs(((await value(s, m, 'present_position')) as number) - present)).to.be.below(1);
      });

      it('goal_speed turns towards the end of the range at that speed; 0 holds (docs/reference/pypot.md 4.2)', async () => {
        const m = robot.pair[0];
        const f = fact(robot, m);
        await standStill(s); // a limp arm would lie on the table, and the base would drag it
        await stiff(s, [m]);
        const p0 = (await value(s, m, 'present_position')) as number;
        expect(ok(await setValue(s, m, 'goal_speed', 30))).to.deep.equal({ goal_speed: 30 });
        expect(await value(s, m, 'goal_position')).to.equal(
          Math.min(maxAngle(f), GOAL_SPEED_TRAVEL[f.model]),
        );
        expect(await value(s, m, 'moving_speed')).to.equal(30);
        expect(await value(s, m, 'goal_speed')).to.equal(30);
        await s.advance(1);
        const p1 = (await value(s, m, 'present_position')) as number;
        expect(p1 - p0).to.be.within(22, 38);

        expect(ok(await setValue(s, m, 'goal_speed', '"-20"'))).to.deep.equal({ goal_speed: -20 });
        expect(await value(s, m, 'goal_position')).to.equal(
          Math.max(minAngle(f), -GOAL_SPEED_TRAVEL[f.model]),
        );
        expect(await value(s, m, 'moving_speed')).to.equal(20);
        await s.advance(1);
        const p2 = (await value(s, m, 'present_position')) as number;
        expect(p1 - p2).to.be.within(10, 28);

        expect(ok(await setValue(s, m, 'goal_speed', 0))).to.deep.equal({ goal_speed: 0 });
        const held = (await value(s, m, 'goal_position')) as number;
        expect(Math.abs(held - ((await value(s, m, 'present_position')) as number))).to.be.below(0.01);
        await s.advance(0.5);
        expect(Math.abs(((await value(s, m, 'present_position')) as number) - held)).to.be.below(1.5);

        // Tiny speeds are raised to 0.7 deg/s, the smallest that does not round to register 0 ("maximum").
        expect(ok(await setValue(s, m, 'goal_speed', 0.2))).to.deep.equal({ goal_speed: 0.7 });
        expect(await value(s, m, 'moving_speed')).to.equal(0.7);
        expectError(await setValue(s, m, 'goal_speed', '"slow"'), 400);
      });

      it('safe_compliant true makes the motor compliant; false makes it stiff where it is', async () => {
        const m = robot.pair[0];
        await stiff(s, [m]);
        for (const [v, expected] of [
          [true, true],
          ['false', false],
          ['True', true],
          [0, false],
        ] as const) {
          expect(ok(await setValue(s, m, 'safe_compliant', JSON.stringify(v))), String(v)).to.deep.equal({
            safe_compliant: expected,
          });
          expect(await value(s, m, 'safe_compliant')).to.equal(expected);
          expect(await value(s, m, 'compliant')).to.equal(expected);
        }
        expect(await value(s, m, 'goal_position')).to.equal(await value(s, m, 'present_position'));
        expectError(await setValue(s, m, 'safe_compliant', '"maybe"'), 400);
      });

      it('safe_compliant outside the angle limits holds the motor stiff inside them first', async () => {
        const f = fact(robot, robot.framed);
        const m = s.robot.motor(f.name);
        const bus = s.backend.bus;
        const busRead = bus.read.bind(bus);
        // The physics keeps joints inside their limits, so the bus is made to report the motor 10 degrees outside.
        let outside: number | undefined = degToPosition(m.spec, m.toRaw(maxAngle(f) + 10));
        sinon.stub(bus, 'read').callsFake(async (ids, reg) => {
          const values = await busRead(ids, reg);
          if (reg === 'present_position' && outside !== undefined && values.has(m.id))
            values.set(m.id, outside);
          return values;
        });
        const torque = async () => (await busRead([m.id], 'torque_enable')).get(m.id);
        // Inside its limits first: the twin has no stops at the angle limits (they are firmware limits), so a limp
        // joint may rest past them.
        await standStill(s);
        try {
          await s.advance(0.1);
          expect(ok(await setValue(s, f.name, 'safe_compliant', true))).to.deep.equal({
            safe_compliant: true,
          });
          await s.advance(0.1);
          expect(await torque(), 'held stiff while outside').to.equal(1);
          const goal = m.toUser(
            positionToDeg(m.spec, (await busRead([m.id], 'goal_position')).get(m.id) as number),
          );
          expect(goal).to.be.within(minAngle(f), maxAngle(f));
          outside = undefined;
          // The joint is swinging towards the hold point: let go once it is inside by the margin.
          for (let i = 0; i < 10 && (await torque()) === 1; i++) await s.advance(0.1);
          expect(await torque(), 'compliant once inside').to.equal(0);
          expect(await value(s, f.name, 'safe_compliant')).to.equal(true);
        } finally {
          sinon.restore();
        }
      });

      for (const f of models.filter((x) => x.model !== 'AX-12')) {
        it(`pid (${f.model}) is quantised as the servo holds it and type-checked`, async () => {
          expect(ok(await setValue(s, f.name, 'pid', [1, 1, 1]))).to.deep.equal({ pid: [1, 0.9765625, 1] });
          expect(await value(s, f.name, 'pid')).to.deep.equal([1, 0.9765625, 1]);
          expect(ok(await setValue(s, f.name, 'pid', [4.1, 0, 0]))).to.deep.equal({ pid: [4, 0, 0] });
          expect(ok(await setValue(s, f.name, 'pid', ['8', '0', '0']))).to.deep.equal({ pid: [8, 0, 0] });
          // Kp 100 needs raw P 800: the register holds 254 at most.
          expect(ok(await setValue(s, f.name, 'pid', [100, 0, 0]))).to.deep.equal({ pid: [31.75, 0, 0] });
          for (const bad of ['[1, 2]', '[1, 2, 3, 4]', '"abc"', '[-1, 0, 0]', '["a", 0, 0]', '5', 'null']) {
            expectError(await setValue(s, f.name, 'pid', bad), 400);
          }
          expect(await value(s, f.name, 'pid')).to.deep.equal([31.75, 0, 0]);
        });
      }

      for (const f of models.filter((x) => x.model === 'XL-320')) {
        it('led takes the colour names; anything else is 400', async () => {
          for (const c of LED_COLOURS) {
            expect(ok(await setValue(s, f.name, 'led', JSON.stringify(c)))).to.deep.equal({ led: c });
            expect(await value(s, f.name, 'led')).to.equal(c);
          }
          expect(ok(await setValue(s, f.name, 'led', '"Green"'))).to.deep.equal({ led: 'green' });
          for (const bad of ['"purple"', '3', 'true', '""', '["red"]']) {
            expectError(await setValue(s, f.name, 'led', bad), 400);
          }
          expect(await value(s, f.name, 'led')).to.equal('green');
        });

        it('control_mode takes joint (2) and wheel (1)', async () => {
          expect(ok(await setValue(s, f.name, 'control_mode', 1))).to.deep.equal({ control_mode: 1 });
          expect(ok(await setValue(s, f.name, 'control_mode', '"joint"'))).to.deep.equal({ control_mode: 2 });
          expectError(await setValue(s, f.name, 'control_mode', 3), 400);
          expect(await value(s, f.name, 'control_mode')).to.equal(2);
        });
      }

      for (const f of models.filter((x) => x.model === 'AX-12')) {
        it('compliance_margin and compliance_slope take two integers (AX-12)', async () => {
          expect(await value(s, f.name, 'compliance_margin')).to.deep.equal([1, 1]);
          expect(await value(s, f.name, 'compliance_slope')).to.deep.equal([32, 32]);
          expect(ok(await setValue(s, f.name, 'compliance_margin', [2, 3]))).to.deep.equal({
            compliance_margin: [2, 3],
          });
          expect(ok(await setValue(s, f.name, 'compliance_slope', ['64', 64]))).to.deep.equal({
            compliance_slope: [64, 64],
          });
          for (const reg of ['compliance_margin', 'compliance_slope']) {
            for (const bad of ['[1]', '[1.5, 1]', '[-1, 1]', '[256, 1]', '"a"', 'true']) {
              expectError(await setValue(s, f.name, reg, bad), 400);
            }
          }
          expect(await value(s, f.name, 'compliance_margin')).to.deep.equal([2, 3]);
          expect(await value(s, f.name, 'compliance_slope')).to.deep.equal([64, 64]);
        });
      }

      it('a bare-value endpoint takes the form value=<v> too', async () => {
        const form = { 'content-type': 'application/x-www-form-urlencoded' };
        const m = names[0]!;
        expect(ok(await s.post(regUrl(m, 'goal_position'), 'value=12', form))).to.deep.equal({
          goal_position: 12,
        });
        expect(ok(await s.post(regUrl(m, 'compliant'), 'value=false', form))).to.deep.equal({
          compliant: false,
        });
        expect(ok(await s.post(regUrl(m, 'compliant'), 'value=True', form))).to.deep.equal({
          compliant: true,
        });
      });
    });

    describe('goto', () => {
      let s: TestServer;
      beforeEach(async () => {
        s = await simServer(robot.name);
        await standStill(s);
      });
      afterEach(() => s.close());
      const [a, b] = robot.pair;
      const framed = fact(robot, robot.framed);
      const present = async (m: string) => (await value(s, m, 'present_position')) as number;

      it('single goto answers {motors, duration, waiting} at once without wait, and moves', async () => {
        await stiff(s, [a]);
        const res = ok(await s.post(`/motors/${a}/goto.json`, { position: 20, duration: 1 }));
        expect(res).to.deep.equal({ motors: { [a]: 20 }, duration: 1, waiting: false });
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(true);
        await s.advance(1.5);
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(false);
        expect(Math.abs(((await value(s, a, 'present_position')) as number) - 20)).to.be.below(
          robot.gotoTolerance,
        );
      });

      it('goto targets are clamped into the limits and the answer echoes them', async () => {
        await stiff(s, [framed.name]);
        const hi = ok(await s.post(`/motors/${framed.name}/goto.json`, { position: 400, duration: 0.5 }));
        expect(hi.motors).to.deep.equal({ [framed.name]: maxAngle(framed) });
        const lo = ok(
          await s.post('/motors/goto.json', { motors: [framed.name], positions: [-400], duration: '0.5' }),
        );
        expect(lo).to.deep.equal({
          motors: { [framed.name]: minAngle(framed) },
          duration: 0.5,
          waiting: false,
        });
        await s.advance(1);
        expect(await value(s, framed.name, 'goal_position')).to.equal(minAngle(framed));
      });

      it('a numeric string duration is read as a number; the position may be a numeric string', async () => {
        await stiff(s, [a]);
        expect(ok(await s.post(`/motors/${a}/goto.json`, { position: '10', duration: '1.5' }))).to.deep.equal(
          {
            motors: { [a]: 10 },
            duration: 1.5,
            waiting: false,
          },
        );
      });

      for (const wait of [true, 'true', 'True', 1, '1']) {
        it(`wait ${JSON.stringify(wait)} answers only after the motion, in sim time`, async () => {
          await stiff(s, [a]);
          const t0 = s.backend.clock.now();
          const req = s.post(`/motors/${a}/goto.json`, { position: -15, duration: 0.8, wait });
          const t = track(req);
          await settle();
          expect(t.answer, 'answered before any sim time passed').to.equal(undefined);
          const res = await untilAnswered(s, req, 5, 0.02);
          await expectArrival(
            ok(res),
            { motors: { [a]: -15 }, duration: 0.8, waiting: true, cancelled: false },
            robot,
            present,
          );
          // After the motion, and its motor at rest (at most SETTLE_MAX_S more).
          expect(s.backend.clock.now() - t0).to.be.within(0.8, 0.9 + SETTLE_MAX_S);
          expect(Math.abs(((await value(s, a, 'present_position')) as number) + 15)).to.be.below(
            robot.gotoTolerance,
          );
        });
      }

      it('a waited goto says whether it arrived: reached when free, not when its torque limit is 0', async () => {
        await stiff(s, [a]);
        const free = ok(
          await untilAnswered(
            s,
            s.post(`/motors/${a}/goto.json`, { position: 20, duration: 0.8, wait: true }),
          ),
        );
        await expectArrival(
          free,
          { motors: { [a]: 20 }, duration: 0.8, waiting: true, cancelled: false },
          robot,
        );
        expect(free.reached, JSON.stringify(free)).to.equal(true);
        // No torque: the joint stays where it is, 40 degrees short, and the answer says so.
        ok(await setValue(s, a, 'torque_limit', 0));
        const held = ok(
          await untilAnswered(
            s,
            s.post(`/motors/${a}/goto.json`, { position: -20, duration: 0.8, wait: true }),
          ),
        );
        const body = { motors: { [a]: -20 }, duration: 0.8, waiting: true, cancelled: false };
        await expectArrival(held, body, robot, present);
        expect(held.reached).to.equal(false);
        expect((held.error as Record<string, number>)[a]).to.be.closeTo(40, robot.gotoTolerance);
      });

      it('any other wait value does not wait', async () => {
        await stiff(s, [a]);
        for (const wait of [false, 'false', 'TRUE', 'yes', 0, '0', 2, null, '', 'wait', [true]]) {
          const t = track(s.post(`/motors/${a}/goto.json`, { position: 5, duration: 10, wait }));
          await settle();
          expect(t.answer, JSON.stringify(wait)).to.not.equal(undefined);
          expect(ok(t.answer!).waiting, JSON.stringify(wait)).to.equal(false);
        }
        const multi = track(
          s.post('/motors/goto.json', { motors: [a], positions: [5], duration: 10, wait: 'no' }),
        );
        await settle();
        expect(ok(multi.answer!).waiting).to.equal(false);
      });

      it('single goto: a bad duration or position is 400 and nothing moves', async () => {
        await stiff(s, [a]);
        const goal = await value(s, a, 'goal_position');
        const bodies: unknown[] = [
          { position: 10, duration: 0 },
          { position: 10, duration: -1 },
          { position: 10 },
          { position: 10, duration: null },
          { position: 10, duration: 'NaN' },
          { position: 10, duration: 'Infinity' },
          { position: 10, duration: 'soon' },
          { position: 10, duration: [1] },
          { duration: 1 },
          { position: 'left', duration: 1 },
          { position: null, duration: 1 },
          [10, 1],
          42,
          '"goto"',
        ];
        for (const body of bodies) {
          expectError(
            await s.post(`/motors/${a}/goto.json`, typeof body === 'string' ? body : JSON.stringify(body)),
            400,
          );
        }
        expectError(await s.post(`/motors/${a}/goto.json`, '{"position": 10, "duration": 1', {}), 400);
        const form = { 'content-type': 'application/x-www-form-urlencoded' };
        expectError(await s.post(`/motors/${a}/goto.json`, 'position=10&duration=NaN', form), 400);
        await s.advance(0.3);
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(false);
        expect(await value(s, a, 'goal_position')).to.equal(goal);
      });

      it('single goto: unknown motor 404; compliant motor 409 and its goal is kept', async () => {
        expectError(await s.post('/motors/no_such_motor/goto.json', { position: 1, duration: 1 }), 404);
        ok(await setValue(s, a, 'compliant', true));
        const goal = await value(s, a, 'goal_position');
        const body = expectError(await s.post(`/motors/${a}/goto.json`, { position: 10, duration: 1 }), 409);
        expect(body.tip).to.include('compliant');
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(false);
        expect(await value(s, a, 'goal_position')).to.equal(goal);
      });

      it('multi goto moves every listed motor and answers in the order given', async () => {
        await stiff(s, [a, b]);
        const res = ok(
          await s.post('/motors/goto.json', { motors: [b, a], positions: [12, -12], duration: 1 }),
        );
        expect(res).to.deep.equal({ motors: { [b]: 12, [a]: -12 }, duration: 1, waiting: false });
        expect(Object.keys(res.motors as object)).to.deep.equal([b, a]);
        await s.advance(1.5);
        expect(Math.abs(((await value(s, a, 'present_position')) as number) + 12)).to.be.below(
          robot.gotoTolerance,
        );
        expect(Math.abs(((await value(s, b, 'present_position')) as number) - 12)).to.be.below(
          robot.gotoTolerance,
        );
      });

      it('multi goto with wait answers when every motion has ended', async () => {
        await stiff(s, [a, b]);
        const t0 = s.backend.clock.now();
        const res = await untilAnswered(
          s,
          s.post('/motors/goto.json', { motors: [a, b], positions: [8, 9], duration: '0.6', wait: 'True' }),
          5,
          0.02,
        );
        await expectArrival(
          ok(res),
          { motors: { [a]: 8, [b]: 9 }, duration: 0.6, waiting: true, cancelled: false },
          robot,
          present,
        );
        expect(s.backend.clock.now() - t0).to.be.within(0.6, 0.7 + SETTLE_MAX_S);
      });

      it('multi goto: malformed bodies are 400 and nothing moves', async () => {
        await stiff(s, [a, b]);
        const goals = [await value(s, a, 'goal_position'), await value(s, b, 'goal_position')];
        const bodies: unknown[] = [
          { motors: [a, b], positions: [1], duration: 1 },
          { motors: [a], positions: [1, 2], duration: 1 },
          { motors: a, positions: [1], duration: 1 },
          { motors: { [a]: 1 }, positions: [1], duration: 1 },
          { positions: [1], duration: 1 },
          { motors: [a], positions: 1, duration: 1 },
          { motors: [a], duration: 1 },
          { motors: [], positions: [], duration: 1 },
          { motors: [a, a], positions: [1, 2], duration: 1 },
          { motors: [a, 7], positions: [1, 2], duration: 1 },
          { motors: [a, b], positions: [1, 'x'], duration: 1 },
          { motors: [a, b], positions: [1, 2], duration: 0 },
          { motors: [a, b], positions: [1, 2], duration: -2 },
          { motors: [a, b], positions: [1, 2] },
          { motors: [a, b], positions: [1, 2], duration: 'NaN' },
          [a, b],
        ];
        for (const body of bodies) {
          expectError(await s.post('/motors/goto.json', body), 400);
        }
        await s.advance(0.5);
        for (const m of [a, b]) expect(s.robot.isMoving(s.robot.motor(m))).to.equal(false);
        expect([await value(s, a, 'goal_position'), await value(s, b, 'goal_position')]).to.deep.equal(goals);
      });

      it('multi goto with one unknown motor is 404 and moves NOTHING', async () => {
        await stiff(s, names);
        const goals = await Promise.all(names.map((n) => value(s, n, 'goal_position')));
        const body = expectError(
          await s.post('/motors/goto.json', {
            motors: [a, b, 'no_such_motor'],
            positions: [30, 30, 30],
            duration: 0.5,
          }),
          404,
        );
        expect(body.error).to.include('no_such_motor');
        await s.advance(0.6);
        for (const m of s.robot.motors) expect(s.robot.isMoving(m), m.name).to.equal(false);
        expect(await Promise.all(names.map((n) => value(s, n, 'goal_position')))).to.deep.equal(goals);
      });

      it('multi goto with one compliant motor is 409 and moves nothing', async () => {
        await stiff(s, [a]);
        ok(await setValue(s, b, 'compliant', true));
        const goal = await value(s, a, 'goal_position');
        expectError(
          await s.post('/motors/goto.json', { motors: [a, b], positions: [20, 20], duration: 0.5 }),
          409,
        );
        await s.advance(0.6);
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(false);
        expect(await value(s, a, 'goal_position')).to.equal(goal);
      });

      it('a newer goto cancels the older one; the older waiting request answers then', async () => {
        await stiff(s, [a]);
        const t0 = s.backend.clock.now();
        const older = track(s.post(`/motors/${a}/goto.json`, { position: 40, duration: 3, wait: true }));
        await s.advance(0.5);
        expect(older.answer).to.equal(undefined);
        const newer = ok(await s.post(`/motors/${a}/goto.json`, { position: -10, duration: 0.5 }));
        expect(newer.motors).to.deep.equal({ [a]: -10 });
        await s.advance(0.05);
        await settle();
        expect(older.answer, 'the cancelled request answers').to.not.equal(undefined);
        // Cancelled: it answers at once, far from its target, and says so.
        await expectArrival(
          ok(older.answer!),
          { motors: { [a]: 40 }, duration: 3, waiting: true, cancelled: true },
          robot,
        );
        expect(ok(older.answer!).reached).to.equal(false);
        expect(s.backend.clock.now() - t0).to.be.below(1);
        await s.advance(1);
        expect(Math.abs(((await value(s, a, 'present_position')) as number) + 10)).to.be.below(
          robot.gotoTolerance,
        );
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(false);
      });

      it('a multi goto waiting on two motors answers when its last motion ends, one being cancelled', async () => {
        await stiff(s, [a, b]);
        const t0 = s.backend.clock.now();
        const older = track(
          s.post('/motors/goto.json', { motors: [a, b], positions: [20, 20], duration: 1, wait: 1 }),
        );
        await s.advance(0.2);
        ok(await s.post(`/motors/${b}/goto.json`, { position: 0, duration: 3 }));
        await s.advance(0.3);
        expect(older.answer, 'a is still moving').to.equal(undefined);
        for (let i = 0; i < 100 && !older.answer; i++) await s.advance(0.02);
        await settle();
        await expectArrival(
          ok(older.answer!),
          { motors: { [a]: 20, [b]: 20 }, duration: 1, waiting: true, cancelled: true },
          robot,
        );
        expect(s.backend.clock.now() - t0).to.be.within(1, 1.1);
        expect(s.robot.isMoving(s.robot.motor(b))).to.equal(true);
      });

      it('a goal_position write cancels the motion in progress', async () => {
        await stiff(s, [a]);
        const older = track(s.post(`/motors/${a}/goto.json`, { position: 40, duration: 2, wait: true }));
        await s.advance(0.3);
        ok(await setValue(s, a, 'goal_position', 5));
        await s.advance(0.05);
        await settle();
        expect(older.answer).to.not.equal(undefined);
        expect(s.robot.isMoving(s.robot.motor(a))).to.equal(false);
        await s.advance(1);
        expect(await value(s, a, 'goal_position')).to.equal(5);
        expect(Math.abs(((await value(s, a, 'present_position')) as number) - 5)).to.be.below(
          robot.gotoTolerance,
        );
      });

      it('the motion is minimum-jerk from the present position: slow start, fast middle', async () => {
        await stiff(s, [a]);
        const p0 = (await value(s, a, 'present_position')) as number;
        ok(await s.post(`/motors/${a}/goto.json`, { position: p0 + 40, duration: 2 }));
        await s.advance(0.2);
        const early = ((await value(s, a, 'goal_position')) as number) - p0;
        await s.advance(0.8);
        const half = ((await value(s, a, 'goal_position')) as number) - p0;
        // s(0.1) = 0.00856, s(0.5) = 0.5 of the 40 degrees.
        expect(early).to.be.within(0, 1.5);
        expect(half).to.be.within(18, 22);
      });
    });
  });
}

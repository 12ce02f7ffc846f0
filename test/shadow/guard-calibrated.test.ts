/**
 * The guard loaded with a calibration predicts when an arm meets the table within 10 ms (issue 45), on the Ergo Jr
 * and the Torso. The "real" robot is the bus emulator's physics with servos drawn at random (seed 2: friction,
 * armature, gain and the horns' offsets not the twin's); the calibration is what `npx tsx bench/calibration.ts <robot>
 * 2 all <out>` fitted on that emulator (fixtures/<robot>-seed-2.calibration.json). A twin with the calibration follows the robot as shadow
 * mode's does; the guard predicts each move from the robot's measured pose and loads and the twin's firmware state,
 * then the same move is driven into the table on the robot (what ?force=true does) and its first pressing contact
 * timed at the physics step. At the manual clock: no wall time in the figures.
 */
import path from 'node:path';
import { expect } from 'chai';
import { drawTrueParams } from '../../src/calibration/truth.ts';
import { type Calibration, loadCalibration, servoParamsOf } from '../../src/config/calibration.ts';
import { type RobotConfig, loadRobotConfig } from '../../src/config/robot-config.ts';
import {
  degToPosition,
  gainsToRawPid,
  loadToPercent,
  modelSpec,
  positionToDeg,
} from '../../src/dynamixel/registers.ts';
import { Motor } from '../../src/robot/motor.ts';
import { type MovePath, gotoPath } from '../../src/robot/trajectory.ts';
import { MoveGuard } from '../../src/shadow/guard.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { newPressingContact, pairKey } from '../../src/sim/contacts.ts';
import type { UrdfRobot } from '../../src/urdf/types.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { ERGO_JR_INTO_TABLE, TORSO_INTO_TABLE } from './held.ts';

const TICK = 1 / 50;

type IntoTable = readonly (readonly [string, Readonly<Record<string, number>>, number])[];
const ROBOTS: readonly {
  robot: string;
  moves: IntoTable;
  lands: (links: string[]) => boolean;
  /** How much later (s), at least, the guard's worst prediction is without the servos' hidden state. */
  hiddenStateWorth: number;
}[] = [
  {
    robot: 'ergo-jr',
    moves: ERGO_JR_INTO_TABLE.map(([name, to, s]) => [
      name,
      Object.fromEntries(to.map((deg, k) => [`m${k + 1}`, deg])),
      s,
    ]),
    lands: (links) => links.join() === 'table,tip',
    // The XL-320s' loads pin where gravity and the gearbox hold the arm: without them, 44-78 ms late.
    hiddenStateWorth: 0.03,
  },
  {
    robot: 'torso',
    moves: TORSO_INTO_TABLE,
    lands: (links) => /^(l|r)_forearm,table$/.test(links.join()),
    // With decisions 0090-0091's fit every move comes within 2 ms (0085's within 6, the one before it 12 ms late).
    // Its MX-28s, their offsets and gains known to a few tenths, hold where the fit's twin holds them: the hidden
    // state changes no prediction by a step (with 0085's fit, one by 4 ms), so only "never closer" is asked.
    hiddenStateWorth: 0,
  },
];

for (const { robot: name, moves, lands, hiddenStateWorth } of ROBOTS)
  describe(`the guard with a calibration, against the emulated robot: ${name}`, function () {
    this.timeout(60000);
    let config: RobotConfig;
    let urdf: UrdfRobot;
    let motors: Motor[];
    let truth: Calibration;
    let fitted: Calibration;

    before(async () => {
      config = await loadRobotConfig(name);
      urdf = await loadUrdf(config.urdfPath);
      motors = config.motors.map((m) => new Motor(m, modelSpec(m.model)));
      truth = drawTrueParams(config, 2);
      fitted = await loadCalibration(
        path.join(import.meta.dirname, 'fixtures', `${name}-seed-2.calibration.json`),
        config,
      );
    });

    /** A robot stiff and upright with the start-up gains, after `settle` s. */
    async function upright(cal: Calibration | undefined, settle = 2): Promise<SimBackend> {
      const sim = new SimBackend({ config, urdf, speed: 'manual', servoParams: cal && servoParamsOf(cal) });
      await sim.open();
      const ids = motors.map((m) => m.id);
      const pid = motors.filter((m) => m.spec.control === 'pid').map((m) => m.id);
      if (config.startup.pid)
        await sim.bus.write('pid', new Map(pid.map((id) => [id, gainsToRawPid(config.startup.pid!)])));
      await sim.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
      await sim.bus.write(
        'goal_position',
        new Map(motors.map((m) => [m.id, degToPosition(m.spec, m.toRaw(0))])),
      );
      await sim.advance(settle);
      return sim;
    }

    /** What the bus loop reads of the robot: raw degrees and load percentages by id. */
    async function measured(robot: SimBackend) {
      const ids = motors.map((m) => m.id);
      const [pos, load] = [
        await robot.bus.read(ids, 'present_position'),
        await robot.bus.read(ids, 'present_load'),
      ];
      return {
        pose: new Map(motors.map((m) => [m.id, positionToDeg(m.spec, pos.get(m.id) as number)])),
        loads: new Map(ids.map((id) => [id, loadToPercent(load.get(id) as number)])),
      };
    }

    /** The first new pressing contact's time (s) when `move` runs on `robot`: goals at each tick, checked each step. */
    async function contactTime(robot: SimBackend, move: MovePath, rawPose: ReadonlyMap<number, number>) {
      await robot.advance(robot.dt);
      const t0 = robot.clock.now();
      const before = new Set(robot.simulation.contacts().map((c) => pairKey(c.a, c.b)));
      const from = new Map(motors.map((m) => [m, m.toUser(rawPose.get(m.id)!)]));
      for (let tick = 0; tick * TICK < move.duration + 0.2; tick++) {
        const goals = new Map<number, number>();
        for (const [m, user] of move.goalsAt(Math.min(tick * TICK, move.duration), from))
          goals.set(m.id, degToPosition(m.spec, m.toRaw(user)));
        await robot.bus.write('goal_position', goals);
        for (let k = 0; k < Math.round(TICK / robot.dt); k++) {
          await robot.advance(robot.dt);
          const hit = newPressingContact(robot.simulation.contacts(), before);
          if (hit) return { time: robot.clock.now() - t0, links: [hit.a, hit.b].sort() };
        }
      }
      return undefined;
    }

    /** Each move's predicted and real contact times, the guard and its twin loading `cal`. */
    async function predictAndDrive(cal: Calibration | undefined, hidden = true) {
      const out: { move: string; predicted: number; real: number; links: string[]; foreseen: string[] }[] =
        [];
      for (const [move, to, duration] of moves) {
        const robot = await upright(truth);
        const twin = await upright(cal);
        const { pose, loads } = await measured(robot);
        const guard = new MoveGuard({
          config,
          urdf,
          motors,
          rate: 1 / TICK,
          log: () => {},
          servoParams: cal && servoParamsOf(cal),
          state: {
            registers: twin.bus,
            pose: () => pose,
            ...(hidden ? { loads: () => loads, firmware: () => twin.firmwareStates() } : {}),
          },
        });
        const trajectory = gotoPath(
          new Map(motors.filter((m) => to[m.name] !== undefined).map((m) => [m, to[m.name]!])),
          duration,
        );
        const { contact } = await guard.predict(trajectory);
        const real = await contactTime(robot, trajectory, pose);
        await guard.close();
        await Promise.all([robot.close(), twin.close()]);
        expect(contact, `${move}: the guard predicts a contact`).to.not.equal(undefined);
        expect(real, `${move}: the robot meets the table`).to.not.equal(undefined);
        const foreseen = [...contact!.links].sort();
        out.push({ move, predicted: contact!.time, real: real!.time, links: real!.links, foreseen });
      }
      return out;
    }

    it('calibrated: every contact predicted within 10 ms of when the robot meets the table', async () => {
      for (const r of await predictAndDrive(fitted)) {
        expect(lands(r.links), `${r.move}: ${r.links.join(' and ')} met`).to.equal(true);
        expect(r.foreseen, `${r.move}: the links foreseen`).to.deep.equal(r.links);
        const error = Math.abs(r.predicted - r.real);
        expect(error, `${r.move}: ${JSON.stringify(r)}`).to.be.at.most(0.01 + 1e-9);
      }
    });

    it("without the I terms the loads pin and the twin's firmware state, the calibrated guard is never closer", async () => {
      const errors = async (hidden: boolean) =>
        (await predictAndDrive(fitted, hidden)).map((r) => Math.abs(r.predicted - r.real));
      const [held, bare] = [await errors(true), await errors(false)];
      const said = JSON.stringify({ held, bare });
      bare.forEach((e, k) => expect(e, said).to.be.at.least(held[k]! - 1e-9));
      expect(Math.max(...bare) - Math.max(...held), said).to.be.at.least(hiddenStateWorth - 1e-9);
    });

    it('on the datasheets instead, the same moves are predicted tens of ms off, or another link lands', async () => {
      const runs = await predictAndDrive(undefined);
      const errors = runs.map((r) => r.predicted - r.real);
      const otherLink = runs.some((r) => r.foreseen.join() !== r.links.join());
      expect(otherLink || Math.max(...errors.map(Math.abs)) > 0.03, JSON.stringify(runs)).to.equal(true);
    });
  });

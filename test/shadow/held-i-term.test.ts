/**
 * A still servo's I term is hidden state its load shows (decision 0093): the twin's engine, given the loads of the real
 * servos that stand still and agree (TwinCycleInput.heldLoads), sets a still twin servo's I term from its real one's
 * when their loads are more than 5 % apart and its goal has stood 0.5 s, a contact of the twin pressing across the
 * joint or not (decision 0095); otherwise it leaves it to integrate. Two engines fed the same cycles, one with the
 * loads, tell what the loads did.
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { degToPosition, loadToPercent, modelSpec, positionToDeg } from '../../src/dynamixel/registers.ts';
import { SimServo } from '../../src/sim/servo.ts';
import { readRegister } from '../../src/sim/servo-registers.ts';
import { LocalTwinEngine, type TwinCycleInput, type TwinCycleOutput } from '../../src/shadow/twin-engine.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

const DEG = Math.PI / 180;

/** Two twins of `robot` fed the same cycles, the second with `heldLoads` too: what the loads did is their difference. */
async function twinPair(robot: string) {
  const config = await loadRobotConfig(robot);
  const urdf = await loadUrdf(config.urdfPath);
  const models = new Map(config.motors.map((m) => [m.id, modelSpec(m.model)]));
  const open = async () => {
    const engine = new LocalTwinEngine({ config, urdf, models, stepS: 0.002, firmware: true });
    await engine.open(new Map());
    return engine;
  };
  const [plain, fed] = [await open(), await open()];
  const both = async (input: Omit<TwinCycleInput, 'epoch' | 'place'>, heldLoads?: Map<number, number>) => {
    const cycle = { epoch: 0, place: false, ...input };
    return [await plain.cycle(cycle), await fed.cycle({ ...cycle, heldLoads })] as const;
  };
  const close = () => Promise.all([plain.close(), fed.close()]);
  return { config, models, plain, both, close, ids: config.motors.map((m) => m.id) };
}

describe("the twin's held I terms, taken from the real servos' loads", function () {
  this.timeout(60000);

  it('a still servo whose load is 20 % from its real one takes its I term; within 5 %, or a goal just moved, not', async () => {
    const { config, plain, both, close, ids } = await twinPair('ergo-jr');
    const m4 = config.motors.find((m) => m.name === 'm4')!.id;
    const integral = (out: TwinCycleOutput) => out.firmware!.get(m4)!.integral;
    const idle = { writes: [], dt: 0.02 };
    try {
      // Stiff with the server's gains (I 4, P 32) where they stand, then a second of holding.
      const pos = await plain.read(ids, 'present_position');
      let [a, b] = await both({
        ...idle,
        writes: [
          ['torque_enable', new Map(ids.map((id) => [id, 1]))],
          ['pid', new Map(ids.map((id) => [id, [0, 4, 32]]))],
          ['goal_position', pos],
        ],
      });
      for (let k = 0; k < 50; k++) [a, b] = await both(idle);
      expect(integral(b)).to.equal(integral(a));
      const off = (by: number) => new Map([[m4, loadToPercent(a.load.get(m4) as number) + by]]);
      // A goal just moved (two counts): no hold yet, the loads are not taken for 0.5 s.
      const goal = (a.goal.get(m4) as number) + 2;
      [a, b] = await both({ ...idle, writes: [['goal_position', new Map([[m4, goal]])]] });
      for (let k = 0; k < 20; k++) [a, b] = await both({ ...idle, position: a.position }, off(20));
      expect(integral(b), 'the goal standing 0.4 s').to.equal(integral(a));
      for (let k = 0; k < 10; k++) [a, b] = await both(idle);
      // The real servo at the twin's angle, its load 3 % off: within the gate, left alone.
      [a, b] = await both({ ...idle, position: a.position }, off(3));
      expect(integral(b), 'within 5 %').to.equal(integral(a));
      // 20 % off: the twin's I term is the one that load says, and the twin's servo reads it.
      const before = loadToPercent(a.load.get(m4) as number);
      [a, b] = await both({ ...idle, position: a.position }, off(20));
      expect(integral(b), 'taken').to.not.equal(integral(a));
      [a, b] = await both(idle);
      // (A step later the joint has given a little to the new torque: most of the 20 %, not all.)
      const loaded = loadToPercent(b.load.get(m4) as number) - before;
      expect(loaded, 'the twin loaded as the robot').to.be.within(12, 24);
      expect(loadToPercent(a.load.get(m4) as number) - before, 'the other twin as it was').to.be.closeTo(
        0,
        2,
      );
    } finally {
      await close();
    }
  });

  it("across a joint a contact of the twin presses too: the Torso's forearm pressed on the table", async () => {
    const { config, models, plain, both, close, ids } = await twinPair('torso');
    const id = (name: string) => config.motors.find((m) => m.name === name)!.id;
    const idle = { writes: [], dt: 0.02 };
    try {
      const pos = await plain.read(ids, 'present_position');
      const stiff = [
        ['torque_enable', new Map(ids.map((i) => [i, 1]))],
        ['pid', new Map(ids.map((i) => [i, [0, 4, 32]]))],
        ['goal_position', pos],
      ] as const;
      await both({ ...idle, writes: stiff.map(([r, v]) => [r, v]) });
      // The left arm swung 55 degrees forward: its forearm presses on the table (test/shadow/thread.test.ts).
      const shoulder = id('l_shoulder_y');
      const spec = models.get(shoulder)!;
      const goal = degToPosition(spec, positionToDeg(spec, pos.get(shoulder) as number) + 55);
      let [a, b] = await both({ ...idle, writes: [['goal_position', new Map([[shoulder, goal]])]] });
      for (let k = 0; k < 100; k++) [a, b] = await both(idle);
      const elbow = id('l_elbow_y');
      expect(a.pressed).to.include(elbow);
      const before = loadToPercent(a.load.get(elbow) as number);
      [a, b] = await both({ ...idle, position: a.position }, new Map([[elbow, before + 20]]));
      expect(b.firmware!.get(elbow)!.integral, 'taken across the press').to.not.equal(
        a.firmware!.get(elbow)!.integral,
      );
      [a, b] = await both(idle);
      // The table holds the forearm: the new I term shows whole in the load, the other twin's as it was.
      expect(
        loadToPercent(b.load.get(elbow) as number) - before,
        'the twin loaded as the robot',
      ).to.be.within(12, 24);
      expect(loadToPercent(a.load.get(elbow) as number) - before, 'the other twin').to.be.closeTo(0, 2);
    } finally {
      await close();
    }
  });

  it("a held servo's I term comes back from its load at its own angle, whatever holds it there", () => {
    const spec = modelSpec('XL-320');
    const servo = (deg: number) => {
      const s = new SimServo({ id: 1, spec, angleLimit: [-150, 150] });
      s.placeAt(deg * DEG);
      s.pid = [0, 4, 32];
      s.torqueEnable = 1;
      s.goalPosition = degToPosition(spec, 3);
      return s;
    };
    // The real servo held at 0 degrees, 3 from its goal, by a stop pushing back as hard as its motor pushes (the
    // servo's law sees only its angle): its I term winds for a second.
    for (const push of [0, 0.05, -0.1]) {
      const real = servo(0);
      for (let k = 0; k < 500; k++) real.step(0.002, 0, 0, push);
      const load = loadToPercent(readRegister(real, 'present_load') as number);
      // The twin 2 degrees away, held there by something else: it takes the I term at the real servo's angle.
      const twin = servo(-2);
      twin.step(0.002, -2 * DEG, 0);
      twin.matchLoad(load, { angle: real.angle, speed: 0 });
      const [i, j] = [real.firmwareState().integral, twin.firmwareState().integral];
      expect(i, 'wound').to.be.above(0);
      // The load register's 0.1 % of stall is the only difference.
      expect(j, `push ${push}`).to.be.closeTo(i, Math.abs(i) * 0.03);
    }
  });
});

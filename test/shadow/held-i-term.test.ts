/**
 * A still servo's I term is hidden state its load shows (decision 0093): the twin's engine, given the loads of the real
 * servos that stand still and agree (TwinCycleInput.heldLoads), sets a still twin servo's I term from its real one's
 * when their loads are more than 5 % apart, its goal has stood 0.5 s and no contact of the twin presses across the
 * joint; otherwise it leaves it to integrate. Two
 * engines fed the same cycles, one with the loads, tell what the loads did.
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { degToPosition, loadToPercent, modelSpec, positionToDeg } from '../../src/dynamixel/registers.ts';
import { LocalTwinEngine, type TwinCycleInput, type TwinCycleOutput } from '../../src/shadow/twin-engine.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

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

  it("not across a joint a contact of the twin presses: the Torso's forearm pressed on the table", async () => {
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
      expect(a.pressed).to.include(id('l_elbow_y'));
      const pressedOff = new Map(
        a.pressed.map((i) => [i, loadToPercent(a.load.get(i) as number) + 20] as [number, number]),
      );
      const free = id('r_elbow_y');
      const heldLoads = new Map([...pressedOff, [free, loadToPercent(a.load.get(free) as number) + 20]]);
      [a, b] = await both({ ...idle, position: a.position }, heldLoads);
      for (const i of a.pressed)
        expect(b.firmware!.get(i)!.integral, `pressed ${i}`).to.equal(a.firmware!.get(i)!.integral);
      expect(b.firmware!.get(free)!.integral, 'the right elbow, free').to.not.equal(
        a.firmware!.get(free)!.integral,
      );
    } finally {
      await close();
    }
  });
});

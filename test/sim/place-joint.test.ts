/**
 * Placing one joint (Simulation.placeJoint, for shadow mode's twin catching up with a link that fell or was swung
 * ahead of its follow): that joint and the links beyond it turn, the rest of the world keeps its motion and its
 * servos their goals; setPose, the whole-world teleport, stops every joint.
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { positionToDeg, speedToDegS } from '../../src/dynamixel/registers.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

async function ergoJr(): Promise<SimBackend> {
  const config = await loadRobotConfig('ergo-jr');
  const urdf = await loadUrdf(config.urdfPath);
  const sim = new SimBackend({ config, urdf, speed: 'manual' });
  await sim.open();
  return sim;
}

const IDS = [1, 2, 3, 4, 5, 6];

describe('sim: one joint placed, the world left in its motion', function () {
  this.timeout(60000);
  let sim: SimBackend;
  afterEach(() => sim?.close());

  /** m1 stiff and turning towards a goal 90 degrees away, m5 limp, the others stiff where they are. */
  async function midTurn(): Promise<void> {
    sim = await ergoJr();
    await sim.bus.write('torque_enable', new Map(IDS.map((id) => [id, id === 5 ? 0 : 1])));
    const from = (await sim.bus.read([1], 'present_position')).get(1) as number;
    await sim.bus.write('goal_position', new Map([[1, from + Math.round(90 / 0.29)]]));
    await sim.advance(0.15);
  }
  const deg = async (id: number) =>
    positionToDeg(sim.models.get(id)!, (await sim.bus.read([id], 'present_position')).get(id) as number);
  const degS = async (id: number) =>
    speedToDegS(sim.models.get(id)!, (await sim.bus.read([id], 'present_speed')).get(id) as number);

  it('turns the joint and carries the links beyond it; the turning base keeps its speed and the goals stay', async () => {
    await midTurn();
    const m1Speed = Math.abs(await degS(1));
    expect(m1Speed, 'm1 turns before the placing (deg/s)').to.be.above(30);
    const m5 = await deg(5);
    const m6 = await deg(6);
    const goals = await sim.bus.read(IDS, 'goal_position');
    const tip = sim.simulation.linkPose('tip')!.position;
    sim.simulation.placeJoint(5, m5 + 20);

    expect(await deg(5), 'm5 where it was placed').to.be.closeTo(m5 + 20, 0.3);
    expect(await sim.bus.read(IDS, 'goal_position'), 'every goal kept').to.deep.equal(goals);
    const moved = Math.hypot(...sim.simulation.linkPose('tip')!.position.map((x, k) => x - tip[k]!));
    expect(moved, 'the tip carried with m5 (m)').to.be.above(0.005);
    await sim.advance(sim.dt);
    expect(await deg(6), 'm6 carried along, its own angle kept').to.be.closeTo(m6, 1);
    expect(Math.abs(await degS(1)), 'm1 still turning (deg/s)').to.be.above(0.7 * m1Speed);
  });

  it('setPose, by contrast, stops every joint of the world', async () => {
    await midTurn();
    const m1Speed = Math.abs(await degS(1));
    expect(m1Speed).to.be.above(30);
    sim.simulation.setPose(new Map([[5, (await deg(5)) + 20]]));
    await sim.advance(sim.dt);
    expect(Math.abs(await degS(1)), 'm1 all but stopped by the teleport (deg/s)').to.be.below(0.3 * m1Speed);
  });
});

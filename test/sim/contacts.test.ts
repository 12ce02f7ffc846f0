/** Contacts in the twin: colliders from the URDF, the table or floor, self-collision, and what contacts() reports. */
import { expect } from 'chai';
import { carried } from '../../src/calibration/touch.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { qrotate, qrpy, vadd } from '../../src/sim/quat.ts';
import { placeShape, shapeOf } from '../../src/sim/collision-shapes.ts';
import RAPIER from '@dimforge/rapier3d-simd-compat';
import { initRapier } from '../../src/sim/build-world.ts';
import { staleContactColliders } from '../../src/sim/contacts.ts';
import type { UrdfRobot } from '../../src/urdf/types.ts';
import { simServer, untilAnswered, json, type TestServer } from '../helpers.ts';
import { ERGO_JR } from '../http/facts.ts';

const DEG_S_STILL = 1;
/** The XL-320's dead band and sag at the end of a goto (test/http/facts.ts). */
const ERGO_GOTO_TOLERANCE = ERGO_JR.gotoTolerance;

/** Lowest corner (world z) of every link's collision boxes. */
function lowestPoints(s: TestServer, urdf: UrdfRobot): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, link] of urdf.links) {
    const pose = s.simulation!.linkPose(name)!;
    let low = Infinity;
    for (const shape of link.collisions) {
      // The shape's own points: a box's corners, a mesh's vertices (its hull's lowest point is one of them).
      const points: (readonly [number, number, number])[] = [];
      const g = shape.geometry;
      if (g.kind === 'box') {
        for (const sx of [-1, 1])
          for (const sy of [-1, 1])
            for (const sz of [-1, 1])
              points.push([(sx * g.size[0]) / 2, (sy * g.size[1]) / 2, (sz * g.size[2]) / 2]);
      } else if (g.kind === 'mesh') {
        for (let i = 0; i < g.triangles.length; i += 3)
          points.push([g.triangles[i]!, g.triangles[i + 1]!, g.triangles[i + 2]!]);
      }
      const inLink = qrpy(shape.rpy);
      for (const point of points) {
        const local = vadd(shape.xyz, qrotate(inLink, point));
        low = Math.min(low, vadd(pose.position, qrotate(pose.rotation, local))[2]);
      }
    }
    out.set(name, low);
  }
  return out;
}

/** The closest two links' collision shapes come where they are now (m; negative: overlapping). */
function gap(s: TestServer, urdf: UrdfRobot, a: string, b: string): number {
  const placed = (link: string) => {
    const pose = s.simulation!.linkPose(link)!;
    return urdf.links
      .get(link)!
      .collisions.map((shape) => placeShape({ p: pose.position, q: pose.rotation }, shapeOf(shape)));
  };
  let closest = Infinity;
  for (const x of placed(a))
    for (const y of placed(b)) {
      const hit = x.shape.contactShape(x.p, x.q, y.shape, y.p, y.q, 1);
      if (hit) closest = Math.min(closest, hit.distance);
    }
  return closest;
}

/** The links in contact with `other` (a link, or the table) at the last step. */
function touching(s: TestServer, other: string): string[] {
  return s
    .simulation!.contacts()
    .filter((c) => c.a === other || c.b === other)
    .map((c) => (c.a === other ? c.b : c.a));
}

async function positions(s: TestServer): Promise<Record<string, number>> {
  return json(await s.get('/motors/registers/present_position/list.json')).present_position as Record<
    string,
    number
  >;
}

describe('sim contacts', function () {
  // The issue asks for rest after 3 s. The Ergo Jr's arm comes down onto its m1 servo (its measured shapes) and is
  // still from 1.6 s; with boxes, its m3 folded on to -73 degrees, still from 3.5 s. The Humanoid, on its boxes,
  // was still from 2.5 s (its trunk folded onto the spine); on its printed parts its trunk stops on their joint stops.
  const settle: Record<string, number> = { 'ergo-jr': 3, torso: 3, humanoid: 3 };
  for (const robot of ['ergo-jr', 'torso', 'humanoid']) {
    it(`a limp ${robot} comes to rest on itself and the ${robot === 'humanoid' ? 'floor' : 'table'}`, async () => {
      const s = await simServer(robot);
      try {
        const urdf = await loadUrdf(s.config.urdfPath);
        const table = s.config.world.table!;
        expect(table.kind).to.equal(robot === 'humanoid' ? 'floor' : 'table');
        await s.advance(settle[robot]!);
        const before = await positions(s);
        await s.advance(0.5);
        const after = await positions(s);
        for (const m of Object.keys(after))
          expect(Math.abs(after[m]! - before[m]!) / 0.5, `${m} still moving`).to.be.below(DEG_S_STILL);
        for (const c of s.simulation!.contacts()) expect(c.depth, `${c.a} in ${c.b}`).to.be.below(0.005);
        for (const [link, z] of lowestPoints(s, urdf))
          expect(z, `${link} below the ${table.kind}`).to.be.above(table.xyz[2] - 0.005);
      } finally {
        await s.close();
      }
    });
  }

  it('contacts name the links (or the table), with depth, impulse and a point', async () => {
    const s = await simServer('ergo-jr');
    try {
      // Stiff, upright, then the arm folded back over the robot with its head bent down presses the lamp onto its own
      // base (folded from the start pose at once, the lamp sweeps into the table first).
      for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])
        await s.post(`/motors/${m}/registers/compliant/value.json`, 'false');
      await s.post('/motors/goto.json', { motors: ['m2', 'm3', 'm5'], positions: [0, 0, 0], duration: 1 });
      await s.advance(1.5);
      await s.post('/motors/goto.json', { motors: ['m2', 'm3', 'm5'], positions: [20, 90, 90], duration: 1 });
      await s.advance(2);
      const urdf = await loadUrdf(s.config.urdfPath);
      const names = new Set([...urdf.links.keys(), 'table']);
      const contacts = s.simulation!.contacts();
      expect(contacts.map((c) => [c.a, c.b].sort().join(' / '))).to.include('base_link / tip');
      for (const c of contacts) {
        expect(names.has(c.a) && names.has(c.b), `${c.a} / ${c.b}`).to.equal(true);
        expect(c.a).to.not.equal(c.b);
        expect(c.point).to.have.length(3);
        expect(c.depth).to.be.at.least(0);
        expect(c.impulse).to.be.at.least(0);
      }
    } finally {
      await s.close();
    }
  });

  it("the Ergo Jr's lamp, hung straight down from the upright arm, stops on the m1 servo (its measured shapes)", async () => {
    const s = await simServer('ergo-jr');
    try {
      for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])
        await s.post(`/motors/${m}/registers/compliant/value.json`, 'false');
      await s.post('/motors/goto.json', { motors: ['m2', 'm3', 'm5'], positions: [0, 10, 0], duration: 1 });
      await s.advance(1.5);
      await s.post('/motors/goto.json', { motors: ['m5'], positions: [90], duration: 1 });
      await s.advance(2);
      // The lamp is 70 mm across; hung from the upright arm its rim reaches the m1 servo's horn 75 degrees down
      // (the shapes alone). The 24 mm box it replaced passed the servo and hung at 89.6 degrees. Rapier's contact
      // holds the rim a fraction of a millimetre off the horn while the weak XL-320 presses.
      const m5 = (await positions(s)).m5!;
      const urdf = await loadUrdf(s.config.urdfPath);
      expect(gap(s, urdf, 'tip', 'base_link'), `m5 at ${m5}`).to.be.below(0.001);
      expect(m5).to.be.below(90 - ERGO_GOTO_TOLERANCE);
    } finally {
      await s.close();
    }
  });

  it("the Ergo Jr's safe_power_up takes the idle posture (m2 at -110) without its arm meeting its base", async () => {
    const s = await simServer('ergo-jr');
    try {
      expect(json(await s.get('/primitives/safe_power_up/start.json')).error).to.equal(undefined);
      await s.advance(8);
      const at = await positions(s);
      for (const [m, goal] of Object.entries({ m1: 0, m2: -110, m3: 65, m4: 0, m5: 34, m6: 20 }))
        expect(Math.abs(at[m]! - goal), `${m} at ${at[m]}`).to.be.below(ERGO_GOTO_TOLERANCE);
      const pairs = s.simulation!.contacts().map((c) => [c.a, c.b].sort().join(' / '));
      expect(pairs).to.not.include('base_link / section_1');
    } finally {
      await s.close();
    }
  });

  it('an IK goto into the table is stopped by the table', async () => {
    const s = await simServer('ergo-jr');
    try {
      for (const m of s.robot.motors)
        await s.post(`/motors/${m.name}/registers/compliant/value.json`, 'false');
      await s.advance(0.2);
      const res = await untilAnswered(
        s,
        // In reach, 6 cm under the table top (a target out of reach is refused before anything moves).
        s.post('/ik/chain/goto.json', { xyz: '0.1,0,-0.05', duration: 1.5, wait: true }),
      );
      expect(res.statusCode).to.equal(200);
      await s.advance(0.5);
      const urdf = await loadUrdf(s.config.urdfPath);
      const tableZ = s.config.world.table!.xyz[2];
      for (const [link, z] of lowestPoints(s, urdf)) expect(z, link).to.be.above(tableZ - 0.005);
      const onTable = s.simulation!.contacts().filter((c) => c.a === 'table' || c.b === 'table');
      expect(onTable.length).to.be.greaterThan(0);
      expect(onTable.reduce((sum, c) => sum + c.impulse, 0)).to.be.greaterThan(0);
    } finally {
      await s.close();
    }
  });

  it('a motor goto that brings the forearm down onto the table: it rests on the table, nothing goes through', async () => {
    const s = await simServer('torso');
    try {
      // The left arm swung down and forward towards the table it stands on.
      for (const m of ['l_shoulder_y', 'l_shoulder_x', 'l_elbow_y', 'l_arm_z'])
        await s.post(`/motors/${m}/registers/compliant/value.json`, 'false');
      await s.advance(0.2);
      await untilAnswered(
        s,
        s.post('/motors/goto.json', {
          motors: ['l_shoulder_y', 'l_elbow_y'],
          positions: [-90, 0],
          duration: 1,
          wait: true,
        }),
      );
      await s.advance(1);
      const urdf = await loadUrdf(s.config.urdfPath);
      const tableZ = s.config.world.table!.xyz[2];
      for (const [link, z] of lowestPoints(s, urdf)) expect(z, link).to.be.above(tableZ - 0.005);
      expect(touching(s, 'table')).to.include('l_forearm');
    } finally {
      await s.close();
    }
  });

  it('a stiff Torso pressing its forearm on the table stays still: every motor reads present_speed 0', async () => {
    const s = await simServer('torso');
    try {
      await s.post('/sim/motors/compliant.json', { compliant: false });
      await s.advance(0.2);
      // Standing on the table, nothing presses across a joint: the base's own contact is beneath every joint.
      expect([...s.simulation!.pressedJoints()]).to.deep.equal([]);
      // The arm swung forward and down past the table: the forearm presses on it, and through the arm on the bust.
      const shoulder = (await positions(s)).l_shoulder_y!;
      await untilAnswered(
        s,
        s.post('/motors/goto.json', {
          motors: ['l_shoulder_y'],
          positions: [shoulder + 40],
          duration: 0.5,
          wait: true,
        }),
      );
      await s.advance(2);
      expect(touching(s, 'table')).to.include('l_forearm');
      // The press acts across every joint that carries the forearm, and across none of the others.
      const urdf = await loadUrdf(s.config.urdfPath);
      const carrying = s.config.motors
        .filter((m) => carried(urdf, m.name).includes('l_forearm'))
        .map((m) => m.name);
      expect(carrying).to.include.members(['abs_z', 'bust_y', 'bust_x', 'l_shoulder_y', 'l_elbow_y']);
      expect([...s.simulation!.pressedJoints()].sort()).to.deep.equal(carrying.sort());
      // Before the gearbox held as a constraint, the bust's friction flipped every step against the push it could not
      // see: bust_x read -27 deg/s, bust_y +10, on a robot that was not moving.
      for (let k = 0; k < 10; k++) {
        await s.advance(0.05);
        const speeds = json(await s.get('/motors/registers/present_speed/list.json')).present_speed as Record<
          string,
          number
        >;
        for (const [motor, speed] of Object.entries(speeds))
          expect(Math.abs(speed), motor).to.be.below(DEG_S_STILL);
      }
      // The contacts are looked over every 25 steps for manifolds left behind: the forearm's, a real one, stays.
      for (let k = 0; k < 40; k++) {
        await s.advance(0.005);
        expect(touching(s, 'table')).to.include('l_forearm');
      }
      const resting = s.simulation!.stats().restingSteps;
      await s.advance(0.5);
      expect(s.simulation!.stats().restingSteps, 'the world rests').to.be.above(resting);
    } finally {
      await s.close();
    }
  });

  it("the Torso's arm brought in toward its hip: the joints across that gap are near, not pressed", async () => {
    const s = await simServer('torso');
    try {
      await s.post('/sim/motors/compliant.json', { compliant: false });
      const gap = 0.01;
      const bring = async (x: number) => {
        await untilAnswered(
          s,
          s.post('/motors/goto.json', {
            motors: ['r_shoulder_x'],
            positions: [x],
            duration: 0.5,
            wait: true,
          }),
        );
        await s.advance(1);
      };
      const asked = ['r_shoulder_x', 'r_elbow_y', 'l_shoulder_x', 'head_z'];
      // Hanging at its side the arm is clear of the body by more than the gap; its own joints' links (joined, and
      // overlapping by design) never count.
      await bring(0);
      expect([...s.simulation!.jointsNear(asked, gap)]).to.deep.equal([]);
      // Brought in 8 degrees: within 10 mm of the hip, not touching it, and only the joints asked about are named.
      await bring(8);
      expect(touching(s, 'base').filter((l) => l.startsWith('r_'))).to.deep.equal([]);
      expect([...s.simulation!.pressedJoints()]).to.not.include('r_shoulder_x');
      expect([...s.simulation!.jointsNear(asked, gap)].sort()).to.deep.equal(['r_elbow_y', 'r_shoulder_x']);
      expect([...s.simulation!.jointsNear(['l_shoulder_x'], gap)]).to.deep.equal([]);
      expect([...s.simulation!.jointsNear(asked, 0.001)], 'within a millimetre').to.deep.equal([]);
    } finally {
      await s.close();
    }
  });

  it('a pair that pushed in the last step with its shapes now apart is a contact left behind: its link is named', async () => {
    await initRapier();
    const world = new RAPIER.World({ x: 0, y: 0, z: -9.81 });
    try {
      world.timestep = 0.002;
      const table = world.createCollider(RAPIER.ColliderDesc.cuboid(0.5, 0.5, 0.01));
      const body = world.createRigidBody(
        RAPIER.RigidBodyDesc.dynamic().setTranslation(0, 0, 0.035).setCanSleep(false),
      );
      const forearm = world.createCollider(RAPIER.ColliderDesc.cuboid(0.05, 0.02, 0.02), body);
      const names = new Map([
        [table.handle, 'table'],
        [forearm.handle, 'forearm'],
      ]);
      const isLink = (name: string) => name !== 'table';
      for (let k = 0; k < 200; k++) world.step();
      // Resting on the table: it pushes, and its shapes touch.
      let impulse = 0;
      world.contactPair(table, forearm, (m) => {
        for (let k = 0; k < m.numContacts(); k++) impulse += m.contactImpulse(k);
      });
      expect(impulse).to.be.above(0);
      expect(staleContactColliders(world, names, isLink)).to.deep.equal([]);
      // Lifted 5 mm, the last step's push still on (its points follow the shapes): pushing across a gap.
      const at = body.translation();
      body.setTranslation({ x: at.x, y: at.y, z: at.z + 0.005 }, true);
      world.propagateModifiedBodyPositionsToColliders();
      const named = () => staleContactColliders(world, names, isLink).map((c) => c.handle);
      expect(named()).to.deep.equal([forearm.handle]);
      // Slid off the table's edge at its height, its points still beneath it (as a slide Rapier does not look at
      // again leaves them): the link's collider, never the table's.
      body.setTranslation({ x: at.x + 0.6, y: at.y, z: at.z }, true);
      world.propagateModifiedBodyPositionsToColliders();
      expect(named()).to.deep.equal([forearm.handle]);
      expect(staleContactColliders(world, names, () => false)).to.deep.equal([]);
      // Moving, a pair may push across the gap it is closing: left as Rapier makes it.
      body.setLinvel({ x: 0, y: 0, z: -0.5 }, true);
      expect(named()).to.deep.equal([]);
    } finally {
      world.free();
    }
  });

  it("a hand brought to the face stops on the Torso's head, the real part's size", async () => {
    const s = await simServer('torso');
    try {
      await s.post('/sim/motors/compliant.json', { compliant: false });
      await s.advance(0.2);
      // The forearm folded up in front of the face: its goal pose puts it 58 mm into the head.
      await untilAnswered(
        s,
        s.post('/motors/goto.json', {
          motors: ['l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y'],
          positions: [-90, 0, -45, -50],
          duration: 2,
          wait: true,
        }),
      );
      let deepest = 0;
      for (let t = 0; t < 1; t += 0.02) {
        await s.advance(0.02);
        for (const c of s.simulation!.contacts())
          if ([c.a, c.b].includes('head')) deepest = Math.max(deepest, c.depth);
      }
      expect(touching(s, 'head')).to.include('l_forearm');
      expect(deepest).to.be.below(0.005);
      // The elbow stops well short of its goal (with the 22 mm head box of before, 5 degrees short).
      const elbow = (await positions(s)).l_elbow_y!;
      expect(elbow + 50).to.be.above(10);
    } finally {
      await s.close();
    }
  });
});

/**
 * The Torso's, the Ergo Jr's and the Humanoid's generated collision shapes: the 26-sided polytopes measured from Poppy's
 * own meshes (urdf/fit-collisions.ts, urdf/collision-fit.json; the Humanoid's in pieces, urdf/pieces.ts), written as STL
 * by urdf/generate.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import RAPIER from '@dimforge/rapier3d-simd-compat';
import { loadUrdf } from '../../src/urdf/parse.ts';
import type { UrdfRobot } from '../../src/urdf/types.ts';
import { PhysicsWorld } from '../../src/sim/world.ts';
import { initRapier, jointStopsOf } from '../../src/sim/build-world.ts';
import { linkPoses } from '../../src/sim/link-poses.ts';
import { pairsTwoJointsApart, placeShape, shapeOf } from '../../src/sim/collision-shapes.ts';
import { DOP_DIRECTIONS } from '../../urdf/polytope.ts';
import { volumeOf } from '../../urdf/pieces.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { userToJoint } from '../../src/core/frames.ts';

const URDF_DIR = path.resolve(import.meta.dirname, '../../urdf');
const ROBOTS = (
  JSON.parse(readFileSync(path.join(URDF_DIR, 'collision-fit.json'), 'utf8')) as {
    robots: Record<string, Record<string, number[] | number[][]>>;
  }
).robots;
const FIT = ROBOTS.torso as Record<string, number[]>;

function trianglesOf(robot: UrdfRobot, link: string, piece = 0): Float32Array {
  const g = robot.links.get(link)!.collisions[piece]!.geometry;
  if (g.kind !== 'mesh') throw new Error(`${link}: a ${g.kind}, not a mesh`);
  return g.triangles;
}

/** How far the mesh reaches along each polytope direction, mm. */
function reachOf(t: Float32Array): number[] {
  return DOP_DIRECTIONS.map((n) => {
    let far = -Infinity;
    for (let k = 0; k < t.length; k += 3) far = Math.max(far, n[0] * t[k]! + n[1] * t[k + 1]! + n[2] * t[k + 2]!);
    return far * 1000;
  });
}

describe('urdf/generate: the Torso collides as its measured Poppy collision meshes', () => {
  let robot: UrdfRobot;
  before(async () => {
    await initRapier();
    robot = await loadUrdf(path.join(URDF_DIR, 'torso.urdf'));
  });

  it('measures every link but the spine, each a closed polytope facing out', () => {
    expect(Object.keys(FIT).sort()).to.deep.equal([...robot.links.keys()].filter((l) => l !== 'spine').sort());
    expect(robot.links.get('spine')!.collisions[0]!.geometry.kind).to.equal('box');
    for (const link of Object.keys(FIT)) {
      const t = trianglesOf(robot, link);
      // A closed, outward surface has a positive volume, at most its bounding box's.
      const volume = volumeOf(t);
      const extent = (axis: number) => {
        let lo = Infinity;
        let hi = -Infinity;
        for (let k = axis; k < t.length; k += 3) [lo, hi] = [Math.min(lo, t[k]!), Math.max(hi, t[k]!)];
        return hi - lo;
      };
      expect(volume, link).to.be.above(0).and.at.most(extent(0) * extent(1) * extent(2));
    }
  });

  it('reaches as far as the measurements, never further; only the chest is cut back, clear of the spine box', () => {
    for (const [link, measured] of Object.entries(FIT)) {
      const reach = reachOf(trianglesOf(robot, link));
      // STL stores single floats: a few thousandths of a millimetre.
      reach.forEach((r, i) => expect(r, `${link} direction ${i}`).to.be.at.most(measured[i]! + 0.005));
      const short = Math.max(...reach.map((r, i) => measured[i]! - r));
      if (link === 'chest') expect(short, link).to.be.above(20);
      // A plane that does not bound the polytope (its corner cut off by its neighbours) reaches a little less.
      else expect(short, link).to.be.below(0.1);
    }
    // The real head is 134 mm wide: the box it replaces was 22 mm.
    const head = reachOf(trianglesOf(robot, 'head'));
    const along = (v: readonly number[]) => DOP_DIRECTIONS.findIndex((d) => d.every((x, k) => x === v[k]));
    expect(head[along([1, 0, 0])]! + head[along([-1, 0, 0])]!).to.be.closeTo(134, 1);
  });

  it("the chest clears the spine's box by 1 mm over the bust's angle limits and meets it beyond; only the head and chest overlap (they never collide)", async () => {
    const gap = (angles: Map<string, number>) => {
      const poses = linkPoses(robot, angles);
      const placed = (link: string) => placeShape(poses.get(link)!, shapeOf(robot.links.get(link)!.collisions[0]!));
      const chest = placed('chest');
      const spine = placed('spine');
      expect(spine.shape).to.be.instanceOf(RAPIER.Cuboid);
      const hit = chest.shape.contactShape(chest.p, chest.q, spine.shape, spine.p, spine.q, 1);
      return hit!.distance;
    };
    const [bustY, bustX] = ['bust_y', 'bust_x'].map((name) => robot.joints.find((j) => j.name === name)!.limit!);
    let closest = Infinity;
    for (let i = 0; i <= 8; i++)
      for (let k = 0; k <= 8; k++) {
        const y = bustY!.lower + ((bustY!.upper - bustY!.lower) * i) / 8;
        const x = bustX!.lower + ((bustX!.upper - bustX!.lower) * k) / 8;
        closest = Math.min(closest, gap(new Map([['bust_y', y], ['bust_x', x]])));
      }
    expect(closest * 1000).to.be.within(0.9, 1.1);
    // 30 degrees past a limit the chest is on the spine: the box still stops a limp bust.
    const past = Math.min(
      gap(new Map([['bust_y', bustY!.lower - 0.5]])),
      gap(new Map([['bust_y', bustY!.upper + 0.5]])),
    );
    expect(past).to.be.at.most(0);
    const world = await PhysicsWorld.create(robot, { dt: 0.002, armature: new Map() });
    try {
      expect(world.designedOverlaps).to.deep.equal([['chest', 'head']]);
    } finally {
      world.free();
    }
  });
});

describe('urdf/generate: the Ergo Jr collides and looks as its measured parts', () => {
  const fit = ROBOTS['ergo-jr']!;
  /** Each link's pieces' reaches (mm): the base in two (disc and plate, then m1 with its holder). */
  const pieces = (link: string): number[][] => {
    const r = fit[link]!;
    return Array.isArray(r[0]) ? (r as number[][]) : [r as number[]];
  };
  const along = (v: readonly number[]) => DOP_DIRECTIONS.findIndex((d) => d.every((x, k) => x === v[k]));
  let robot: UrdfRobot;
  before(async () => {
    await initRapier();
    robot = await loadUrdf(path.join(URDF_DIR, 'ergo-jr.urdf'));
  });

  it('measures every link (the base in two pieces), each a closed polytope reaching as far as measured', () => {
    expect(Object.keys(fit).sort()).to.deep.equal([...robot.links.keys()].sort());
    expect(pieces('base_link')).to.have.length(2);
    for (const link of Object.keys(fit))
      pieces(link).forEach((measured, k) => {
        const t = trianglesOf(robot, link, k);
        expect(volumeOf(t), link).to.be.above(0);
        // Nothing is cut back (no generated box is left to clear): each plane is where it was measured.
        const reach = reachOf(t);
        reach.forEach((r, i) => expect(r, `${link} ${k} direction ${i}`).to.be.at.most(measured[i]! + 0.005));
        expect(Math.max(...reach.map((r, i) => measured[i]! - r)), link).to.be.below(0.1);
      });
    // The lamp is 70 mm across (its box was 24 mm); the disc the robot stands on is 150 mm across.
    const lamp = pieces('tip')[0]!;
    expect(lamp[along([1, 0, 0])]! + lamp[along([-1, 0, 0])]!).to.be.closeTo(70, 1);
    const disc = pieces('base_link')[0]!;
    expect(disc[along([1, 0, 0])]! + disc[along([-1, 0, 0])]!).to.be.closeTo(150, 1);
  });

  it("stands on the table by its disc, and no two links' shapes overlap at the zero and start poses", async () => {
    const config = JSON.parse(readFileSync(path.join(URDF_DIR, '../robots/ergo-jr.json'), 'utf8')) as {
      world: { table: { xyz: number[] } };
      motors: { name: string; orientation: string }[];
      startup: { pose: Record<string, number> };
    };
    const disc = pieces('base_link')[0]!;
    expect(-disc[along([0, 0, -1])]! / 1000).to.be.closeTo(config.world.table.xyz[2]!, 1e-4);
    const world = await PhysicsWorld.create(robot, { dt: 0.002, armature: new Map() });
    try {
      expect(world.designedOverlaps).to.deep.equal([]);
    } finally {
      world.free();
    }
    const start = new Map(
      config.motors.map((m) => [
        m.name,
        ((m.orientation === 'indirect' ? -1 : 1) * config.startup.pose[m.name]! * Math.PI) / 180,
      ]),
    );
    const adjacent = new Set(robot.joints.map((j) => [j.parent, j.child].sort().join('|')));
    const names = [...robot.links.keys()];
    for (const angles of [new Map<string, number>(), start]) {
      const poses = linkPoses(robot, angles);
      for (const a of names)
        for (const b of names) {
          if (a >= b || adjacent.has([a, b].sort().join('|'))) continue;
          for (const sa of robot.links.get(a)!.collisions)
            for (const sb of robot.links.get(b)!.collisions) {
              const x = placeShape(poses.get(a)!, shapeOf(sa));
              const y = placeShape(poses.get(b)!, shapeOf(sb));
              const hit = x.shape.contactShape(x.p, x.q, y.shape, y.p, y.q, 0.01);
              expect(hit?.distance ?? 1, `${a} / ${b}`).to.be.above(0);
            }
        }
    }
  });
});

describe('urdf/generate: the Humanoid collides and looks as its parts, in pieces', () => {
  const fit = ROBOTS.humanoid! as Record<string, number[][]>;
  let robot: UrdfRobot;
  before(async () => {
    await initRapier();
    robot = await loadUrdf(path.join(URDF_DIR, 'humanoid.urdf'));
  });

  it('measures every link, each piece a closed polytope reaching as far as measured', () => {
    expect(Object.keys(fit).sort()).to.deep.equal([...robot.links.keys()].sort());
    for (const [link, pieces] of Object.entries(fit)) {
      expect(robot.links.get(link)!.collisions, link).to.have.length(pieces.length);
      pieces.forEach((measured, k) => {
        const t = trianglesOf(robot, link, k);
        expect(volumeOf(t), `${link} ${k}`).to.be.above(0);
        const reach = reachOf(t);
        reach.forEach((r, i) => expect(r, `${link} ${k} direction ${i}`).to.be.at.most(measured[i]! + 0.005));
        // A thin piece's corner planes are cut off by their neighbours a little more.
        expect(Math.max(...reach.map((r, i) => measured[i]! - r)), `${link} ${k}`).to.be.below(0.2);
      });
    }
    // The pelvis around the hip servos, a thigh around its knee, a forearm slanted in its frame: more than one piece.
    for (const link of ['pelvis', 'l_thigh', 'r_thigh', 'l_forearm', 'r_forearm'])
      expect(fit[link]!.length, link).to.be.above(1);
  });

  it('links three joints apart or more clear each other at the zero and start poses (the forearms the thighs)', async () => {
    const config = await loadRobotConfig('humanoid');
    const start = new Map(
      config.motors.map((m) => {
        const raw = userToJoint(m, config.startup.pose[m.name] ?? 0);
        return [m.name, Math.min((m.angleLimit[1] * Math.PI) / 180, Math.max((m.angleLimit[0] * Math.PI) / 180, raw))];
      }),
    );
    const near = new Set(
      [...robot.joints.map((j) => [j.parent, j.child]), ...pairsTwoJointsApart(robot)].map((p) => p.sort().join('|')),
    );
    const names = [...robot.links.keys()];
    const closest = new Map<string, number>();
    for (const [label, angles] of [['zero', new Map<string, number>()], ['start', start]] as const) {
      const poses = linkPoses(robot, angles);
      for (const a of names)
        for (const b of names) {
          if (a >= b || near.has([a, b].sort().join('|'))) continue;
          let d = Infinity;
          for (const sa of robot.links.get(a)!.collisions)
            for (const sb of robot.links.get(b)!.collisions) {
              const x = placeShape(poses.get(a)!, shapeOf(sa));
              const y = placeShape(poses.get(b)!, shapeOf(sb));
              d = Math.min(d, x.shape.contactShape(x.p, x.q, y.shape, y.p, y.q, 0.01)?.distance ?? 0.01);
            }
          // 3 mm, less where the parts are closer (the thigh 2.6 mm from the pelvis): 1 mm less than the parts.
          expect(d * 1000, `${label}: ${a} / ${b}`).to.be.above(1.5);
          closest.set(`${label} ${a}/${b}`, d);
        }
    }
    // As one convex shape each, the forearm sat 11.6 mm in the thigh at the start pose (decision 0034).
    expect(closest.get('start l_forearm/l_thigh')! * 1000).to.be.above(2.9);
    expect(closest.get('start l_forearm/l_hip')! * 1000).to.be.above(2.9);
  });

  it('keeps links two joints apart out of contact by its config, not as overlaps found (chest and head meet)', async () => {
    const config = await loadRobotConfig('humanoid');
    expect(config.world.selfCollision).to.equal('beyond-two-joints');
    const world = await PhysicsWorld.create(robot, {
      dt: 0.002,
      armature: new Map(),
      selfCollision: config.world.selfCollision,
      jointStops: jointStopsOf(config, robot),
    });
    try {
      // Pairs two joints apart are kept apart by collision groups, not found as overlaps (chest and head meet at zero).
      expect(world.designedOverlaps).to.deep.equal([]);
    } finally {
      world.free();
    }
  });
});

/**
 * URDF collision meshes: read from STL beside the URDF, collided as their convex hulls, and links whose shapes
 * overlap at the zero pose (designed so) kept from colliding with each other; links two joints apart kept so and joint
 * stops where a robot config asks for them.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { writeStl } from '../../src/urdf/stl.ts';
import { PhysicsWorld } from '../../src/sim/world.ts';
import type { WorldOptions } from '../../src/sim/build-world.ts';
import { qrotate, vadd } from '../../src/sim/quat.ts';

/** The 12 triangles of a box of the given size around a centre. */
function boxTriangles(size: readonly number[], centre: readonly number[] = [0, 0, 0]): number[] {
  const corner = (i: number) => [0, 1, 2].map((k) => centre[k]! + (((i >> k) & 1) - 0.5) * size[k]!);
  const quads = [
    [0, 2, 3, 1],
    [4, 5, 7, 6],
    [0, 1, 5, 4],
    [2, 6, 7, 3],
    [0, 4, 6, 2],
    [1, 3, 7, 5],
  ];
  return quads.flatMap(([a, b, c, d]) => [a!, b!, c!, a!, c!, d!].flatMap(corner));
}

const INERTIAL =
  '<inertial><origin xyz="0 0.1 0"/><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-4"/></inertial>';

describe('sim: collision meshes', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'urdf-mesh-'));
    mkdirSync(path.join(dir, 'robots'));
    mkdirSync(path.join(dir, 'meshes'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A URDF in robots/ whose meshes sit in ../meshes, named the ROS way (package://<package>/meshes/...). */
  async function load(body: string, meshes: Record<string, number[]>) {
    for (const [name, triangles] of Object.entries(meshes))
      writeFileSync(path.join(dir, 'meshes', name), writeStl(triangles));
    const file = path.join(dir, 'robots', 'r.urdf');
    writeFileSync(file, `<?xml version="1.0"?>\n<robot name="r">${body}</robot>`);
    return loadUrdf(file);
  }

  it('reads a package:// collision mesh beside the URDF, scaled, and names a missing one', async () => {
    const robot = await load(
      `<link name="base"><collision><geometry><mesh filename="package://r_description/meshes/m.stl" scale="0.001 0.001 0.001"/></geometry></collision>
       <visual><geometry><mesh filename="package://r_description/meshes/look.STL"/></geometry></visual>
       <visual><geometry><mesh filename="package://r_description/meshes/look.dae"/></geometry></visual></link>`,
      { 'm.stl': boxTriangles([20, 40, 60]), 'look.STL': boxTriangles([0.01, 0.01, 0.01]) },
    );
    const [shape] = robot.links.get('base')!.collisions;
    expect(shape!.geometry.kind).to.equal('mesh');
    const triangles = (shape!.geometry as { triangles: Float32Array }).triangles;
    expect(triangles.length).to.equal(12 * 9);
    expect(Math.max(...triangles.filter((_, i) => i % 3 === 2))).to.be.closeTo(0.03, 1e-9);
    // A visual STL is read to be drawn; a visual in another format (no file here) is left out, not an error.
    const visuals = robot.links.get('base')!.visuals;
    expect(visuals.map((v) => v.geometry.kind)).to.deep.equal(['mesh']);
    expect((visuals[0]!.geometry as { triangles: Float32Array }).triangles.length).to.equal(12 * 9);

    let error: Error | undefined;
    await load(
      '<link name="base"><collision><geometry><mesh filename="package://p/meshes/gone.stl"/></geometry></collision></link>',
      {},
    ).catch((e: Error) => (error = e));
    expect(error?.message).to.match(
      /link "base" collision #1: mesh "package:\/\/p\/meshes\/gone.stl": not found/,
    );
    const visualError = await load(
      '<link name="base"><visual><geometry><mesh filename="../meshes/gone.stl"/></geometry></visual></link>',
      {},
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(visualError?.message).to.match(
      /link "base" visual #1: mesh "..\/meshes\/gone.stl": not found \(looked at .*meshes\/gone.stl\)/,
    );
  });

  it('a limp arm whose only collision shape is a mesh lands on the table instead of swinging through it', async () => {
    const robot = await load(
      `<link name="base"/>
       <link name="arm">${INERTIAL}<collision><geometry><mesh filename="../meshes/arm.stl"/></geometry></collision></link>
       <joint name="j" type="continuous"><origin xyz="0 0 0.2"/><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/></joint>`,
      { 'arm.stl': boxTriangles([0.02, 0.2, 0.02], [0, 0.1, 0]) },
    );
    const table = {
      xyz: [0, 0.1, 0.1] as [number, number, number],
      size: [0.6, 0.6, 0.02] as [number, number, number],
      kind: 'table' as const,
    };
    const world = await PhysicsWorld.create(robot, { dt: 0.002, armature: new Map(), table });
    try {
      for (let k = 0; k < 1500; k++) world.step();
      // Hanging freely the arm's end would reach z = 0; the table top is at 0.1.
      const pose = world.linkPose('arm')!;
      const corners = boxTriangles([0.02, 0.2, 0.02], [0, 0.1, 0]);
      let lowest = Infinity;
      for (let i = 0; i < corners.length; i += 3)
        lowest = Math.min(
          lowest,
          vadd(pose.position, qrotate(pose.rotation, [corners[i]!, corners[i + 1]!, corners[i + 2]!]))[2],
        );
      expect(lowest).to.be.within(0.1 - 0.005, 0.1 + 0.01);
      // It stopped about 27 degrees down, where a free arm would hang at 90 and swing on.
      expect(Math.abs(world.angle(0)) * (180 / Math.PI)).to.be.within(20, 35);
      expect(Math.abs(world.velocity(0))).to.be.below(0.01);
      expect(world.contacts().map((c) => [c.a, c.b].sort().join('/'))).to.include('arm/table');
    } finally {
      world.free();
    }
  });

  /** base -> a -> b -> c, joints about z; a's box at x 0.05, c's box `cLocal` in c's frame (c sits at x 0.2). */
  async function chain(cLocal: number, opts: Partial<WorldOptions> = {}) {
    const joint = (name: string, parent: string, childLink: string, x: number) =>
      `<joint name="${name}" type="continuous"><origin xyz="${x} 0 0"/><parent link="${parent}"/><child link="${childLink}"/><axis xyz="0 0 1"/></joint>`;
    const robot = await load(
      `<link name="base"/>
       <link name="a">${INERTIAL}<collision><geometry><mesh filename="../meshes/a.stl"/></geometry></collision></link>
       <link name="b">${INERTIAL}</link>
       <link name="c">${INERTIAL}<collision><geometry><mesh filename="../meshes/c.stl"/></geometry></collision></link>
       ${joint('j1', 'base', 'a', 0)}${joint('j2', 'a', 'b', 0.1)}${joint('j3', 'b', 'c', 0.1)}`,
      {
        'a.stl': boxTriangles([0.04, 0.04, 0.04], [0.05, 0, 0]),
        'c.stl': boxTriangles([0.04, 0.04, 0.04], [cLocal, 0, 0]),
      },
    );
    return PhysicsWorld.create(robot, { dt: 0.002, armature: new Map(), ...opts });
  }
  const touching = (world: PhysicsWorld) =>
    world.contacts().some((c) => [c.a, c.b].sort().join('/') === 'a/c');

  it('links whose meshes overlap at the zero pose never collide with each other', async () => {
    const world = await chain(-0.15); // c's box on a's at the zero pose
    try {
      expect(world.designedOverlaps).to.deep.equal([['a', 'c']]);
      for (let k = 0; k < 20; k++) world.step();
      expect(touching(world)).to.equal(false);
    } finally {
      world.free();
    }
  });

  it('links apart at the zero pose collide when a pose brings them together', async () => {
    const world = await chain(-0.05); // c's box at x 0.15 at the zero pose, on a's once j2 turns half a turn
    try {
      expect(world.designedOverlaps).to.deep.equal([]);
      world.step();
      expect(touching(world)).to.equal(false);
      world.setAngles(new Map([['j2', Math.PI]]));
      world.step();
      expect(touching(world)).to.equal(true);
    } finally {
      world.free();
    }
  });

  it('links two joints apart never touch where the robot collides only links three joints apart or more', async () => {
    const world = await chain(-0.05, { selfCollision: 'beyond-two-joints' });
    try {
      world.setAngles(new Map([['j2', Math.PI]]));
      world.step();
      // The same pose as above, where a and c touch when every two links not sharing a joint collide.
      expect(touching(world)).to.equal(false);
      expect(world.designedOverlaps).to.deep.equal([]);
    } finally {
      world.free();
    }
    const overlapping = await chain(-0.15, { selfCollision: 'beyond-two-joints' });
    try {
      // Overlapping at the zero pose but never colliding anyway: not a designed overlap.
      expect(overlapping.designedOverlaps).to.deep.equal([]);
    } finally {
      overlapping.free();
    }
  });

  it('a joint stop holds a joint pushed past it, on the side it names', async () => {
    const stop = (30 * Math.PI) / 180;
    for (const [stops, past] of [
      [new Map([['j1', [null, stop] as const]]), false],
      [new Map([['j1', [-stop, null] as const]]), true],
    ] as const) {
      const world = await chain(-0.05, { jointStops: stops });
      try {
        const j1 = world.jointIndex('j1');
        world.setExternalTorque(j1, 0.05);
        for (let k = 0; k < 500; k++) world.step();
        if (past) expect(world.angle(j1)).to.be.above(stop + 0.2);
        else expect(world.angle(j1)).to.be.within(stop - 0.01, stop + 0.01);
      } finally {
        world.free();
      }
    }
  });
});

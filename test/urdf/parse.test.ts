import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import path from 'node:path';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { loadUrdf, parseUrdf } from '../../src/urdf/parse.ts';
import type { UrdfRobot } from '../../src/urdf/types.ts';

const URDF_DIR = path.resolve(import.meta.dirname, '../../urdf');
const COLLISION_FIT = JSON.parse(readFileSync(path.join(URDF_DIR, 'collision-fit.json'), 'utf8')) as {
  robots: Record<string, Record<string, number[] | number[][]>>;
};
const DEG = Math.PI / 180;

function totalMass(robot: UrdfRobot): number {
  return [...robot.links.values()].reduce((sum, l) => sum + (l.inertial?.mass ?? 0), 0);
}

/** A small valid URDF; `joints` replaces the joint section. */
function urdf(joints: string, links = ['a', 'b', 'c']): string {
  return `<?xml version="1.0"?>
<robot name="t">
  ${links.map((l) => `<link name="${l}"/>`).join('\n  ')}
  ${joints}
</robot>`;
}

const J_AB = '<joint name="j1" type="continuous"><parent link="a"/><child link="b"/></joint>';
const J_BC = '<joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint>';

describe('urdf/parse: our robot files', () => {
  const cases = [
    { file: 'ergo-jr.urdf', config: 'ergo-jr', name: 'PoppyErgoJr', root: 'base_link', joints: 6, links: 7, mass: 0.1792 },
    { file: 'torso.urdf', config: 'torso', name: 'PoppyTorso', root: 'base', joints: 13, links: 14, mass: 1.6295 },
    { file: 'humanoid.urdf', config: 'humanoid', name: 'PoppyHumanoid', root: 'pelvis', joints: 25, links: 26, mass: 2.6075 },
  ] as const;

  for (const c of cases) {
    describe(c.file, () => {
      let robot: UrdfRobot;
      before(async () => {
        robot = await loadUrdf(path.join(URDF_DIR, c.file));
      });

      it('has the expected name, root, joint and link counts', () => {
        expect(robot.name).to.equal(c.name);
        expect(robot.root).to.equal(c.root);
        expect(robot.joints).to.have.length(c.joints);
        expect(robot.links.size).to.equal(c.links);
      });

      it('has the documented total mass', () => {
        expect(totalMass(robot)).to.be.closeTo(c.mass, 1e-3);
      });

      it('has one revolute joint per motor, limited to the raw angle limits of the robot config', async () => {
        const cfg = await loadRobotConfig(c.config);
        expect(robot.joints.map((j) => j.name).sort()).to.deep.equal(cfg.motors.map((m) => m.name).sort());
        const perModel: Record<string, [number, number]> = {
          'XL-320': [0.39, 11.9],
          'MX-28': [3.1, 7.0],
          'MX-64': [7.3, 8.2],
          'AX-12': [1.8, 10.0],
        };
        for (const j of robot.joints) {
          const m = cfg.motors.find((x) => x.name === j.name)!;
          expect(j.type, j.name).to.equal('revolute');
          expect(j.limit!.lower, j.name).to.be.closeTo(m.angleLimit[0] * DEG, 1e-12);
          expect(j.limit!.upper, j.name).to.be.closeTo(m.angleLimit[1] * DEG, 1e-12);
          expect([j.limit!.effort, j.limit!.velocity], j.name).to.deep.equal(perModel[m.model]);
          expect(Math.hypot(...j.axis), j.name).to.be.closeTo(1, 1e-12);
        }
      });

      it('gives every link an inertial, coloured visuals and collision shapes: a box, or the same measured meshes', () => {
        const fit = COLLISION_FIT.robots[c.config] ?? {};
        for (const link of robot.links.values()) {
          expect(link.inertial, link.name).to.not.equal(undefined);
          const reach = fit[link.name];
          // A link measured in pieces (the Ergo Jr's base) has one list of reaches, one visual and one shape per piece.
          const pieces = reach === undefined ? 1 : Array.isArray(reach[0]) ? reach.length : 1;
          expect(link.visuals, link.name).to.have.length(pieces);
          expect(link.collisions, link.name).to.have.length(pieces);
          for (const v of link.visuals) expect(v.rgba, link.name).to.have.length(4);
          const v = link.visuals[0]!;
          const c = link.collisions[0]!.geometry;
          const vg = v.geometry;
          if (reach !== undefined) {
            // The real part's size, seen as it collides (test/urdf/generated-collisions.test.ts).
            link.visuals.forEach((shape, k) => {
              expect(shape.geometry.kind, link.name).to.equal('mesh');
              expect(link.collisions[k]!.geometry).to.deep.equal(shape.geometry);
            });
            continue;
          }
          expect(vg.kind).to.equal('box');
          if (vg.kind === 'box') for (const s of vg.size) expect(s).to.be.within(0.015, 0.35);
          // The collision box leaves out the link's own joint (urdf/generate.ts): it fits inside the visual box.
          expect(c.kind, link.name).to.equal('box');
          if (c.kind === 'box' && vg.kind === 'box')
            c.size.forEach((size, k) => expect(size, link.name).to.be.at.most(vg.size[k]! + 1e-9));
        }
      });
    });
  }

  it('keeps the Ergo Jr kinematics and colours of docs/reference/robots.md 1.3', async () => {
    const robot = await loadUrdf(path.join(URDF_DIR, 'ergo-jr.urdf'));
    const m6 = robot.joints.find((j) => j.name === 'm6')!;
    expect(m6.parent).to.equal('section_4');
    expect(m6.child).to.equal('tip');
    expect(m6.xyz).to.deep.equal([0, 0.054, 0]);
    expect(m6.rpy).to.deep.equal([1.5707963267949, 1.5707963267949, 0]);
    expect(m6.axis).to.deep.equal([0, -1, 0]);
    expect(robot.links.get('long_U')!.visuals[0]!.rgba).to.deep.equal([1, 1, 1, 1]);
    expect(robot.links.get('base_link')!.visuals[0]!.rgba![0]).to.be.closeTo(0.7529, 1e-4);
  });

  it('writes the Torso so that joint = raw (r_shoulder_x axis flipped, head_y origin turned by 45 deg)', async () => {
    const robot = await loadUrdf(path.join(URDF_DIR, 'torso.urdf'));
    const rsx = robot.joints.find((j) => j.name === 'r_shoulder_x')!;
    expect(rsx.axis).to.deep.equal([0, 0, 1]);
    const headY = robot.joints.find((j) => j.name === 'head_y')!;
    expect(headY.rpy[0]).to.be.closeTo(-0.349065850398866 + 0.785398163397448, 1e-15);
    expect([headY.limit!.lower, headY.limit!.upper]).to.deep.equal([0, 50 * DEG]);
  });

  it('flips the Humanoid r_shoulder_x axis too and keeps its head_y origin', async () => {
    const robot = await loadUrdf(path.join(URDF_DIR, 'humanoid.urdf'));
    expect(robot.joints.find((j) => j.name === 'r_shoulder_x')!.axis).to.deep.equal([0, 0, 1]);
    expect(robot.joints.find((j) => j.name === 'head_y')!.rpy[0]).to.equal(-0.349065850398866);
  });
});

describe('urdf/parse: parseUrdf', () => {
  it('parses origins, axes, limits, inertials, shapes and materials', () => {
    const robot = parseUrdf(`<robot name="r">
      <material name="red"><color rgba="1 0 0 1"/></material>
      <link name="a">
        <inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/></inertial>
        <visual><origin xyz="0 0 0.5"/><geometry><box size="1 2 3"/></geometry><material name="red"/></visual>
        <visual><geometry><cylinder radius="0.1" length="0.4"/></geometry><material name="x"><color rgba="0 0 1 0.5"/></material></visual>
        <visual><geometry><mesh filename="package://a.stl"/></geometry></visual>
        <collision><geometry><sphere radius="0.25"/></geometry></collision>
      </link>
      <link name="b">
        <inertial><origin rpy="0 0 1.5707963267948966"/><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/></inertial>
      </link>
      <joint name="j" type="revolute">
        <origin xyz="1 2 3" rpy="0.1 -2E-1 .3"/><parent link="a"/><child link="b"/><axis xyz="0 0 -2"/>
        <limit lower="-1" upper="1.5" effort="3.1" velocity="7"/>
      </joint>
    </robot>`);
    expect(robot.name).to.equal('r');
    expect(robot.root).to.equal('a');
    const a = robot.links.get('a')!;
    expect(a.inertial).to.deep.equal({ mass: 2, com: [0.1, 0, 0], inertia: [1, 0, 0, 2, 0, 3] });
    expect(a.visuals).to.have.length(2);
    expect(a.visuals[0]).to.deep.equal({ xyz: [0, 0, 0.5], rpy: [0, 0, 0], geometry: { kind: 'box', size: [1, 2, 3] }, rgba: [1, 0, 0, 1] });
    expect(a.visuals[1]!.geometry).to.deep.equal({ kind: 'cylinder', radius: 0.1, length: 0.4 });
    expect(a.visuals[1]!.rgba).to.deep.equal([0, 0, 1, 0.5]);
    expect(a.collisions).to.deep.equal([{ xyz: [0, 0, 0], rpy: [0, 0, 0], geometry: { kind: 'sphere', radius: 0.25 } }]);
    // An inertial frame turned by 90 deg about z swaps ixx and iyy.
    const ib = robot.links.get('b')!.inertial!.inertia;
    expect(ib[0]).to.be.closeTo(2, 1e-12);
    expect(ib[3]).to.be.closeTo(1, 1e-12);
    expect(ib[5]).to.be.closeTo(3, 1e-12);
    const j = robot.joints[0]!;
    expect(j).to.deep.include({ name: 'j', type: 'revolute', parent: 'a', child: 'b', xyz: [1, 2, 3], rpy: [0.1, -0.2, 0.3], axis: [0, 0, -1] });
    expect(j.limit).to.deep.equal({ lower: -1, upper: 1.5, effort: 3.1, velocity: 7 });
  });

  it('defaults a missing origin to zero and a missing axis to x', () => {
    const robot = parseUrdf(urdf(`${J_AB}${J_BC}`));
    expect(robot.joints[0]).to.deep.include({ xyz: [0, 0, 0], rpy: [0, 0, 0], axis: [1, 0, 0] });
    expect(robot.joints[0]!.limit).to.equal(undefined);
  });

  const errors: [string, string, RegExp][] = [
    ['malformed XML', '<robot name="t"><link name="a"></robot>', /invalid XML/],
    ['no robot element', '<robut name="t"/>', /no <robot>/],
    ['a robot without a name', '<robot><link name="a"/></robot>', /no name/],
    ['no link', '<robot name="t"></robot>', /no <link>/],
    ['a link without a name', '<robot name="t"><link/></robot>', /link #1 has no name/],
    ['a duplicate link', urdf('', ['a', 'a']), /duplicate link "a"/],
    ['a joint without parent', urdf('<joint name="j1" type="fixed"><child link="b"/></joint>'), /joint "j1": missing <parent/],
    ['a joint without child', urdf('<joint name="j1" type="fixed"><parent link="a"/></joint>'), /joint "j1": missing <child/],
    ['an unknown parent link', urdf('<joint name="j1" type="fixed"><parent link="zz"/><child link="b"/></joint>'), /joint "j1": parent link "zz" does not exist/],
    ['an unknown child link', urdf('<joint name="j1" type="fixed"><parent link="a"/><child link="zz"/></joint>'), /joint "j1": child link "zz" does not exist/],
    ['a bad number', urdf(`<joint name="j1" type="fixed"><origin xyz="0 abc 0"/><parent link="a"/><child link="b"/></joint>${J_BC}`), /joint "j1" origin xyz: "abc" is not a number/],
    ['a wrong vector length', urdf(`<joint name="j1" type="fixed"><origin rpy="0 0"/><parent link="a"/><child link="b"/></joint>${J_BC}`), /joint "j1" origin rpy: expected 3 numbers/],
    ['a bad mass', '<robot name="t"><link name="a"><inertial><mass value="1kg"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link></robot>', /link "a" inertial mass value: "1kg" is not a number/],
    ['a missing inertia value', '<robot name="t"><link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"/></inertial></link></robot>', /link "a" inertial inertia: missing attribute "izz"/],
    ['an unsupported joint type', urdf(`<joint name="j1" type="floating"><parent link="a"/><child link="b"/></joint>${J_BC}`), /joint "j1": unsupported type "floating"/],
    ['a revolute joint without limit', urdf(`<joint name="j1" type="revolute"><parent link="a"/><child link="b"/></joint>${J_BC}`), /joint "j1": a revolute joint needs a <limit>/],
    ['an inverted limit', urdf(`<joint name="j1" type="revolute"><parent link="a"/><child link="b"/><limit lower="1" upper="0" effort="1" velocity="1"/></joint>${J_BC}`), /joint "j1": limit lower 1 is above upper 0/],
    ['a zero axis', urdf(`<joint name="j1" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/></joint>${J_BC}`), /joint "j1": axis is zero/],
    ['a duplicate joint', urdf('<joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint><joint name="j1" type="fixed"><parent link="b"/><child link="c"/></joint>'), /duplicate joint "j1"/],
    ['multiple roots', urdf(J_AB), /more than one root link.*"a", "c"/],
    ['a link with two parents', urdf(`${J_AB}<joint name="j2" type="fixed"><parent link="c"/><child link="b"/></joint>`), /link "b" is the child of two joints, "j1" and "j2"/],
    ['a cycle without root', urdf(`${J_BC}<joint name="j3" type="fixed"><parent link="c"/><child link="b"/></joint>`, ['b', 'c']), /joints "j\d", "j\d" form a cycle/],
    ['a cycle with one root', urdf(`${J_AB}<joint name="j3" type="fixed"><parent link="d"/><child link="c"/></joint><joint name="j4" type="fixed"><parent link="c"/><child link="d"/></joint>`, ['a', 'b', 'c', 'd']), /joints "j\d", "j\d" form a cycle/],
    ['a self-joint', urdf('<joint name="j1" type="fixed"><parent link="a"/><child link="a"/></joint>'), /joint "j1": parent and child are the same link "a"/],
  ];
  for (const [what, xml, message] of errors) {
    it(`rejects ${what}`, () => {
      expect(() => parseUrdf(xml)).to.throw(Error, message);
    });
  }

  it('loadUrdf names the file in its errors', async () => {
    let error: unknown;
    try {
      await loadUrdf(path.join(URDF_DIR, 'nope.urdf'));
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(Error);
    expect((error as Error).message).to.contain('nope.urdf');
  });
});

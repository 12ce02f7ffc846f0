import { expect } from 'chai';
import { ConfigError, RobotError } from '../../src/core/errors.ts';
import { KinematicChain } from '../../src/ik/chain.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { loadChain, loadRobot, randomPose } from './helpers.ts';

function expectVecClose(
  actual: readonly number[],
  expected: readonly number[],
  tol: number,
  label = '',
): void {
  expect(actual).to.have.length(expected.length);
  actual.forEach((v, i) =>
    expect(v, `${label}[${i}] of (${actual.map((x) => x.toFixed(4)).join(', ')})`).to.be.closeTo(
      expected[i]!,
      tol,
    ),
  );
}

/** docs/reference/robots.md 6 reference table: user degrees -> end position (m) and X axis of the end frame. */
const ERGO_REFERENCE: [string, number[], number[], number[]][] = [
  ['all 0', [0, 0, 0, 0, 0, 0], [0, -0.172, 0.1558], [0, 0, 1]],
  ['rest_posture', [0, -90, 35, 0, 55, -5], [0, -0.0604, 0.128], [0, 0.0872, 0.9962]],
  ['curious_posture', [0, -15, 40, 0, -35, -60], [0, -0.1257, 0.2046], [0, 0.9397, 0.342]],
  ['tetris_posture', [0, -90, 90, 0, -90, -90], [0, 0.076, 0.1558], [0, 0, -1]],
  ['idle posture', [0, -110, 65, 0, 34, 20], [0, -0.0735, 0.1034], [0, -0.1564, 0.9877]],
  ['m1 = 90', [90, 0, 0, 0, 0, 0], [-0.172, 0, 0.1558], [0, 0, 1]],
  ['m2 = 30', [0, 30, 0, 0, 0, 0], [0, -0.1985, 0.0565], [0, -0.5, 0.866]],
];

const TORSO_REFERENCE: [string, string, number[], number[]][] = [
  ['l_arm_chain', 'all 0', [0, 0, 0, 0, 0, 0, 0], [0.1088, -0.1763, 0.0715]],
  ['r_arm_chain', 'all 0', [0, 0, 0, 0, 0, 0, 0], [-0.1022, -0.1802, 0.0715]],
  ['l_arm_chain', 'l_elbow_y = -90', [0, 0, 0, 0, 0, 0, -90], [0.1055, 0.0036, 0.2515]],
  ['l_arm_chain', 'l_shoulder_x = 90', [0, 0, 0, 0, 90, 0, 0], [0.2567, -0.1736, 0.2195]],
  ['r_arm_chain', 'r_shoulder_x = -90', [0, 0, 0, 0, -90, 0, 0], [-0.2502, -0.1829, 0.2195]],
  ['r_arm_chain', 'r_shoulder_x = -45', [0, 0, 0, 0, -45, 0, 0], [-0.2068, -0.1821, 0.1148]],
  ['r_arm_chain', 'r_shoulder_x = 45', [0, 0, 0, 0, 45, 0, 0], [0.0024, -0.1783, 0.1148]],
];

describe('ik/chain: forward kinematics', () => {
  describe('Ergo Jr chain matches the docs/reference/robots.md 6 reference table', () => {
    for (const [label, user, position, xAxis] of ERGO_REFERENCE) {
      it(label, async () => {
        const chain = await loadChain('ergo-jr', 'chain');
        const pose = chain.forward(user);
        expectVecClose(pose.position, position, 1e-3, 'position');
        expectVecClose([pose.rotation[0], pose.rotation[3], pose.rotation[6]], xAxis, 0.01, 'X axis');
      });
    }
  });

  describe('Torso arm chains match the docs/reference/robots.md 6 / 10 reference values', () => {
    for (const [name, label, user, position] of TORSO_REFERENCE) {
      it(`${name} ${label}`, async () => {
        const chain = await loadChain('torso', name);
        expectVecClose(chain.forward(user).position, position, 1e-3, 'position');
      });
    }
  });

  it('returns an orthonormal row-major rotation', async () => {
    const chain = await loadChain('ergo-jr', 'chain');
    const r = chain.forward([10, -20, 30, -40, 50, -60]).rotation;
    const rows = [r.slice(0, 3), r.slice(3, 6), r.slice(6, 9)];
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 3; j++) {
        const dot = rows[i]!.reduce((s, v, k) => s + v * rows[j]![k]!, 0);
        expect(dot).to.be.closeTo(i === j ? 1 : 0, 1e-12);
      }
    }
  });

  it('mirrors the Torso arms: right = left with x negated, up to the abs_z yaw of 0.018 rad', async () => {
    const left = await loadChain('torso', 'l_arm_chain');
    const right = await loadChain('torso', 'r_arm_chain');
    const rand = mulberry32(3);
    for (let i = 0; i < 20; i++) {
      const l = [0, 0, 0, ...[0, 0, 0, 0].map(() => (rand() - 0.5) * 60)];
      // PuppetMaster's mirror rule (docs/reference/robots.md 2.4), user degrees: right = (+, -, -, +) x left for shoulder_y, shoulder_x, arm_z, elbow_y.
      const r = [0, 0, 0, l[3]!, -l[4]!, -l[5]!, l[6]!];
      const pl = left.forward(l).position;
      const pr = right.forward(r).position;
      expectVecClose([-pr[0], pr[1], pr[2]], pl, 0.012, `pose ${i}`);
    }
  });

  it('mirrors the Humanoid arms exactly (r_shoulder_x axis flipped like the Torso)', async () => {
    const { cfg, urdf } = await loadRobot('humanoid');
    const trunk = ['abs_y', 'abs_x', 'abs_z', 'bust_y', 'bust_x'];
    const arm = (s: 'l' | 'r') =>
      KinematicChain.fromUrdf(
        urdf,
        `${s}_arm`,
        {
          motors: [...trunk, `${s}_shoulder_y`, `${s}_shoulder_x`, `${s}_arm_z`, `${s}_elbow_y`],
          passive: trunk,
          endLink: `${s}_forearm`,
          tip: [0, 0.18, 0],
        },
        cfg.motors,
      );
    const left = arm('l');
    const right = arm('r');
    for (const [sy, sx, az, el] of [
      [0, 0, 0, 0],
      [0, 0, 0, -90],
      [30, 20, 10, -20],
      [-40, 60, -30, -100],
    ] as const) {
      const pl = left.forward([0, 0, 0, 0, 0, sy, sx, az, el]).position;
      const pr = right.forward([0, 0, 0, 0, 0, sy, -sx, -az, el]).position;
      expectVecClose([-pr[0], pr[1], pr[2]], pl, 1e-6);
    }
    // At user 0 the arms hang down (below the shoulders), they do not point up.
    expect(right.forward([0, 0, 0, 0, 0, 0, 0, 0, 0]).position[2]).to.be.below(0);
  });
});

describe('ik/chain: construction and angle frames', () => {
  it('exposes motors, passive flags and limits in both frames', async () => {
    const chain = await loadChain('torso', 'r_arm_chain');
    expect(chain.motors).to.deep.equal([
      'abs_z',
      'bust_y',
      'bust_x',
      'r_shoulder_y',
      'r_shoulder_x',
      'r_arm_z',
      'r_elbow_y',
    ]);
    expect(chain.passive).to.deep.equal([true, true, true, false, false, false, false]);
    expect(chain.dof).to.equal(7);
    expect(chain.lower[6]).to.equal(0);
    expect(chain.upper[6]).to.be.closeTo((147 * Math.PI) / 180, 1e-15);
    expect(chain.userLimits[6]).to.deep.equal([-57, 90]);
    expect(chain.userLimits[4]).to.deep.equal([-195, 20]);
  });

  it('converts user degrees to joint radians and back', async () => {
    const chain = await loadChain('ergo-jr', 'chain');
    const q = chain.toJoint([10, 20, 30, 40, 50, 60]);
    // m2, m3, m5, m6 are indirect: joint = -user.
    expectVecClose(
      q,
      [10, -20, -30, 40, -50, -60].map((d) => (d * Math.PI) / 180),
      1e-15,
    );
    expectVecClose(chain.toUser(q), [10, 20, 30, 40, 50, 60], 1e-12);
    const rand = mulberry32(9);
    const pose = randomPose(chain, rand);
    expectVecClose(chain.forwardJoint(chain.toJoint(pose)).position, chain.forward(pose).position, 0);
  });

  it('rejects a wrong arity or non-finite angles with bad_request', async () => {
    const chain = await loadChain('ergo-jr', 'chain');
    for (const bad of [
      [0, 0, 0],
      [0, 0, 0, 0, 0, 0, 0],
      [0, 0, NaN, 0, 0, 0],
      [0, 0, 0, Infinity, 0, 0],
    ]) {
      expect(() => chain.forward(bad))
        .to.throw(RobotError)
        .with.property('code', 'bad_request');
    }
  });

  it('rejects chain configs that do not match the URDF', async () => {
    const { cfg, urdf } = await loadRobot('ergo-jr');
    const base = cfg.chains.chain!;
    const build = (over: Partial<typeof base>) => () =>
      KinematicChain.fromUrdf(urdf, 'chain', { ...base, ...over }, cfg.motors);
    expect(build({ motors: ['m1', 'm3', 'm2', 'm4', 'm5', 'm6'] })).to.throw(ConfigError, /m1, m2, m3/);
    expect(build({ motors: ['m1', 'm2', 'm3', 'm4', 'm5'] })).to.throw(
      ConfigError,
      /not \[m1, m2, m3, m4, m5\]/,
    );
    expect(build({ endLink: 'nowhere' })).to.throw(ConfigError, /no link "nowhere"/);
    expect(build({ passive: ['m7'] })).to.throw(ConfigError, /"m7" is not a motor of the chain/);
    expect(() => KinematicChain.fromUrdf(urdf, 'chain', base, cfg.motors.slice(1))).to.throw(
      ConfigError,
      /unknown motor "m1"/,
    );
  });

  it('folds fixed joints into the chain', async () => {
    const { cfg, urdf } = await loadRobot('ergo-jr');
    const chain = KinematicChain.fromUrdf(urdf, 'chain', cfg.chains.chain!, cfg.motors);
    const pen = { name: 'pen', visuals: [], collisions: [] };
    const withFixed = {
      ...urdf,
      links: new Map([...urdf.links, ['pen', pen]]),
      joints: [
        ...urdf.joints,
        {
          name: 'pen_joint',
          type: 'fixed' as const,
          parent: 'tip',
          child: 'pen',
          xyz: [0, 0, -0.05] as const,
          rpy: [0, 0, Math.PI / 2] as const,
          axis: [1, 0, 0] as const,
        },
      ],
    };
    const penChain = KinematicChain.fromUrdf(
      withFixed,
      'chain',
      { ...cfg.chains.chain!, endLink: 'pen', tip: [0, 0, -0.02] },
      cfg.motors,
    );
    const pose = [10, -20, 30, -40, 50, -60];
    expectVecClose(penChain.forward(pose).position, chain.forward(pose).position, 1e-12);
  });
});

/** The reachability test of IK targets (src/ik/reach.ts): what the default profile refuses before anything moves. */
import { expect } from 'chai';
import { mulberry32 } from '../../src/core/prng.ts';
import { REACH_TOLERANCE_M, outOfReach, unreachableError } from '../../src/ik/reach.ts';
import { solve, type IkTarget } from '../../src/ik/solver.ts';
import { loadChain, randomPose } from './helpers.ts';

const CHAINS = [
  ['ergo-jr', 'chain'],
  ['torso', 'l_arm_chain'],
  ['torso', 'r_arm_chain'],
] as const;

const dist = (a: readonly number[], b: readonly number[]) =>
  Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!, a[2]! - b[2]!);

describe('ik/reach', function () {
  this.timeout(60000);

  it('never refuses a reachable position: 1000 random poses per chain, from random starts', async () => {
    for (const [robot, name] of CHAINS) {
      const chain = await loadChain(robot, name);
      const rand = mulberry32(44);
      for (let i = 0; i < 1000; i++) {
        const start = randomPose(chain, rand);
        const goal = randomPose(chain, rand).map((g, j) => (chain.passive[j] ? start[j]! : g));
        const target: IkTarget = { position: chain.forward(goal).position };
        const out = outOfReach(chain, target, solve(chain, target, start), start);
        expect(out, `${name} target ${i}: ${JSON.stringify(out)}`).to.equal(undefined);
      }
    }
  });

  it('judges the position only: a reachable point with an orientation the chain cannot hold there is in reach', async () => {
    const chain = await loadChain('ergo-jr', 'chain');
    const zero = chain.motors.map(() => 0);
    const position = chain.forward([0, -15, 40, 0, -35, -60]).position;
    // The end's X axis pointing straight down at a point in front of the chest: met as closely as the solver can.
    const target: IkTarget = { position, rot: [0, 0, -1] };
    const solution = solve(chain, target, zero);
    // The solver trades position for orientation here (11.9 mm and 13.6 degrees off): the position alone is in reach.
    expect(solution.positionError).to.be.above(REACH_TOLERANCE_M);
    expect(outOfReach(chain, target, solution, zero)).to.equal(undefined);
  });

  it('says how far a point out of reach is, and the nearest reachable point: exact along the way to it', async () => {
    for (const [robot, name] of CHAINS) {
      const chain = await loadChain(robot, name);
      const zero = chain.motors.map(() => 0);
      const far = [1, 1, 1];
      const out = outOfReach(chain, { position: far }, solve(chain, { position: far }, zero), zero)!;
      expect(out, name).to.not.equal(undefined);
      expect(out.distance).to.be.closeTo(dist(out.nearest, far), 1e-9);
      // The nearest point is reached by a pose within the limits (the solver's), and is in reach itself.
      const at = solve(chain, { position: out.nearest }, zero);
      expect(outOfReach(chain, { position: out.nearest }, at, zero), name).to.equal(undefined);
      // A point 5 mm past it towards the far target has the same nearest point: 5 mm out of reach.
      const step = out.nearest.map((n, k) => n + (0.005 * (far[k]! - n)) / out.distance);
      const near = outOfReach(chain, { position: step }, solve(chain, { position: step }, zero), zero);
      expect(near?.distance, name).to.be.closeTo(0.005, 1e-4);
      expect(dist(near!.nearest, out.nearest), name).to.be.below(1e-3);
    }
  });

  it('the refusal is a 422 naming the target, the distance in metres and the nearest point', () => {
    const err = unreachableError({ name: 'chain' } as Parameters<typeof unreachableError>[0], [1, 1, 1], {
      distance: 1.45612,
      nearest: [0.14338, 0.14341, 0.19213],
    });
    expect(err.code).to.equal('unreachable');
    expect(err.message).to.equal(
      'target 1,1,1 is out of reach of chain "chain": 1.4561 m from the nearest reachable point',
    );
    expect(err.tip).to.equal(
      'send a target within reach; the nearest reachable point is "0.1434,0.1434,0.1921"',
    );
    expect(err.details).to.include(`within ${REACH_TOLERANCE_M} m`);
  });
});

/**
 * The fast bench's moving workload (bench/server.ts keepMoving) is a path the real robots can take: every motor
 * stepping between the bench's goals, the solver runs every step and no two links of a robot touch; back at goal 0
 * the stiff Torso and Humanoid come to rest. Measured speeds of the twin mean something only on such a path
 * (docs/decisions/0034-humanoid-measured-shapes.md).
 */
import { expect } from 'chai';
import { keepMoving, MOVING_GOALS } from '../../bench/server.ts';
import { simServer } from '../helpers.ts';

/** The world's own bodies: what a link may touch while the robot moves. */
const WORLD = /^(table|floor|card:)/;

describe('sim: the fast bench moves the robots along a path the real ones can take', function () {
  this.timeout(60_000);
  for (const robot of ['ergo-jr', 'torso', 'humanoid']) {
    const rests = robot === 'ergo-jr' ? '' : '; at goal 0 it rests';
    it(`${robot}: no two links touch between goals ${MOVING_GOALS.join(' and ')}${rests}`, async () => {
      const s = await simServer(robot);
      try {
        const stop = keepMoving(s);
        const movingFrom = s.simulation!.stats();
        const touched = new Map<string, number>();
        // Four goal changes, each 0.4 s of sim time, looked at every 0.02 s.
        for (let t = 0; t < 1.6; t += 0.02) {
          await s.advance(0.02);
          for (const c of s.simulation!.contacts())
            if (!WORLD.test(c.a) && !WORLD.test(c.b)) {
              const pair = `${c.a}/${c.b}`;
              touched.set(pair, Math.max(touched.get(pair) ?? 0, c.depth));
            }
        }
        await stop();
        const movedTo = s.simulation!.stats();
        expect(movedTo.restingSteps - movingFrom.restingSteps, 'steps at rest while moving').to.equal(0);
        expect([...touched].map(([pair, depth]) => `${pair} ${(depth * 1000).toFixed(1)} mm`)).to.deep.equal(
          [],
        );
        // The stiff Ergo Jr at goal 0 grinds a count from its goal for as long as its gearbox holds (pypot's Ki on the
        // XL-320; test/sim/rest.test.ts): when it rests depends on the path, not on the shapes.
        if (!rests) return;
        for (const m of s.robot.motors) m.set('goalPosition', 0);
        await s.advance(30);
        const before = s.simulation!.stats();
        await s.advance(1);
        const after = s.simulation!.stats();
        expect(after.restingSteps - before.restingSteps, 'every step of the last second at rest').to.equal(
          after.steps - before.steps,
        );
      } finally {
        await s.close();
      }
    });
  }
});

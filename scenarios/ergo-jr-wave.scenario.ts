/**
 * A wave recorded on the Ergo Jr twin (scenarios/moves/ergo-jr-wave.record, made by moves/record-moves.ts):
 * every move check, then a check of our own: the wave ends where it started, so it can loop.
 * Deploy it: npm run deploy -- scenarios/moves/ergo-jr-wave.record --to http://<robot>:8080
 */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Ergo Jr wave',
  robot: 'ergo-jr',
  runsOn: 'any',
  async run(t) {
    const wave = await t.loadMove('moves/ergo-jr-wave.record');
    // On a server by URL (--url), the move replayed is the one installed as "ergo-jr-wave".
    await t.checkMove('wave', wave, { name: 'ergo-jr-wave' });
    await t.check('wave: ends where it starts', (c) => {
      const first = wave.frames[0]!.positions;
      const last = wave.frames[wave.frames.length - 1]!.positions;
      for (const m of wave.motors)
        c.expect(last.get(m)![0], `${m} end position`).toBeCloseTo(first.get(m)![0], 2, { unit: 'deg' });
    });
  },
});

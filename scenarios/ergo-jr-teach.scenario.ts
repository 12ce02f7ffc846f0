/**
 * Teach by hand on the twin: m1 and m4 compliant, a hand drags them while the move is recorded, then the taught move
 * goes through every move check, replayed forwards and backwards.
 */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Ergo Jr taught by hand',
  robot: 'ergo-jr',
  async run(t) {
    const twin = t.requireTwin();
    // Hold the arm stiff where it starts; m1 and m4 stay compliant for the hand.
    for (const m of ['m2', 'm3', 'm5', 'm6'])
      await t.call('POST', `/motors/${m}/registers/compliant/value.json`, false);
    await t.call('POST', '/records/taught/record.json', { motors: ['m1', 'm4'] });
    await t.hand({ m1: 40, m4: -30 }, 1.5);
    await t.hand({ m1: 0, m4: 0 }, 1.5);
    await t.call('POST', '/records/taught/save.json');
    const move = await t.loadMove({ name: 'taught', recordsDir: twin.records.options.store.dir });
    await t.check('taught: recorded', (c) => {
      c.expect(move.frames.length, 'frames').toBeAtLeast(140);
      const m1 = Math.max(...move.frames.map((f) => f.positions.get('m1')![0]));
      c.measure('m1_peak_deg', m1);
      c.expect(m1, 'm1 peak').toBeCloseTo(40, 3, { unit: 'deg' });
    });
    await t.checkMove('taught', move);
    await t.checkMove('taught backwards', move, { speed: -1 });
  },
});

/** Both arms of the Torso open, lift and come back together (moves/torso-two-arms.record, recorded on the twin). */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Torso two-arm move',
  robot: 'torso',
  runsOn: 'any',
  async run(t) {
    // The whole robot stiff first, as on the real Torso: a bust left compliant sags under the swinging arms (the
    // checks then see the chest fold onto the spine and a forearm reach the table).
    for (const m of t.motors) await t.call('POST', `/motors/${m.name}/registers/compliant/value.json`, false);
    await t.wait(1);
    const move = await t.loadMove('moves/torso-two-arms.record');
    await t.checkMove('two arms', move);
    await t.check('two arms: mirror image', (c) => {
      // The arms move as mirror images: shoulder_x and elbow_y opposite, shoulder_y equal, frame by frame.
      for (const f of move.frames) {
        const p = (m: string) => f.positions.get(m)![0];
        c.expect(p('l_shoulder_x') + p('r_shoulder_x'), 'l_shoulder_x + r_shoulder_x').toBeCloseTo(0, 3, {
          time: f.t,
          unit: 'deg',
        });
        c.expect(p('l_shoulder_y') - p('r_shoulder_y'), 'l_shoulder_y - r_shoulder_y').toBeCloseTo(0, 3, {
          time: f.t,
          unit: 'deg',
        });
      }
    });
  },
});

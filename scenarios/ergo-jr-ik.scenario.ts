/**
 * Before a lesson: the Ergo Jr's IK targets are reachable and the physics gets the tip there within 5 mm. Not the
 * default 3: an XL-320's gearbox holds a joint up to 2.4 degrees from its goal until the I term grinds it free, and
 * the integral left over from the previous target has to unwind first (m1's took more than 10 s after the right-hand
 * target). The twin's tip settles 4.2 mm from the high-left target.
 */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Ergo Jr IK targets',
  robot: 'ergo-jr',
  runsOn: 'any',
  async run(t) {
    for (const m of t.motors) await t.call('POST', `/motors/${m.name}/registers/compliant/value.json`, false);
    await t.wait(0.2);
    await t.checkIkTargets(
      'chain',
      [
        { xyz: [0, -0.15, 0.12], label: 'front' },
        { xyz: [0.08, -0.1, 0.1], label: 'right' },
        { xyz: [-0.05, -0.12, 0.2], label: 'high left' },
      ],
      { toleranceM: 0.005 },
    );
  },
});

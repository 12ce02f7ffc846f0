/** The Torso's two arm chains reach their targets in the physics, one after the other. */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Torso IK targets',
  robot: 'torso',
  runsOn: 'any',
  async run(t) {
    for (const m of t.motors) await t.call('POST', `/motors/${m.name}/registers/compliant/value.json`, false);
    await t.wait(0.2);
    await t.checkIkTargets('l_arm_chain', [
      { xyz: [0.15, -0.15, 0.1], duration: 2, label: 'left low' },
      { xyz: [0.2, -0.1, 0.2], duration: 2, label: 'left high' },
    ]);
    await t.checkIkTargets('r_arm_chain', [
      { xyz: [-0.15, -0.15, 0.1], duration: 2, label: 'right low' },
      { xyz: [-0.2, -0.1, 0.2], duration: 2, label: 'right high' },
    ]);
  },
});

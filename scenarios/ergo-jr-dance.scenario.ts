/** The Ergo Jr's dance primitive runs 4 s without an error and without hitting itself or the table. */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Ergo Jr dance primitive',
  robot: 'ergo-jr',
  runsOn: 'any',
  async run(t) {
    await t.checkPrimitive('dance', 4);
  },
});

/**
 * Shadow mode on robots as users hold them (issue 44), over the bus emulator in its own process with 5 % of the
 * replies dropped: half the joints limp and moved by the emulator's hand, or left to rest, the others on gotos, then a
 * built-in primitive that leaves some limp (test/shadow/held.ts); not one event. Wall time is inherent (a serial bus
 * in real time): one lap per robot here, about 30 s; `npm run bench -- shadow-held` runs ten minutes each, and
 * test/shadow/follow.test.ts runs the same on a sim clock (SHADOW_HOLD_S=600: ten minutes).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { type ShadowRig, startShadowRig } from './emulator-process.ts';
import { ERGO_JR_HELD, TORSO_HELD, soakHeld } from './held.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-held-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

for (const plan of [ERGO_JR_HELD, TORSO_HELD])
  describe(`shadow mode beside a half-limp ${plan.robot} on the bus emulator`, function () {
    this.timeout(120000);
    let rig: ShadowRig;
    before(async () => {
      rig = await startShadowRig({
        robot: plan.robot,
        faults: 'drop=0.05',
        recordsDir: path.join(tmp, plan.robot),
      });
    });
    after(() => rig?.close());

    it(`raises no event: ${Object.keys(plan.hand).join(', ')} limp and moved by a hand, the others on gotos, then ${plan.primitive.name}`, async () => {
      const soak = await soakHeld(rig, plan, 0);
      console.log(
        `      ${soak.laps} lap in ${soak.seconds.toFixed(0)} s; ${soak.events.length} events` +
          (soak.warnings.length ? `; ${soak.warnings.length} warnings: ${soak.warnings.join(' | ')}` : ''),
      );
      expect(soak.events, `${JSON.stringify(soak.events)}\n${soak.warnings.join('\n')}`).to.deep.equal([]);
    });
  });

/**
 * The Ergo Jr's camera finds a marker card held in front of it, and loses it once the card is put away
 * (the sim's cards: POST /sim/cards/<name>/show.json and hide.json; the detector: GET /sensors/code/<name>.json).
 */
import { defineScenario } from '../src/scenario/api.ts';

export default defineScenario({
  name: 'Ergo Jr sees a card',
  robot: 'ergo-jr',
  async run(t) {
    // Stiff at its start pose, so the camera does not slump away from a card held in front of it.
    for (const m of t.motors) await t.call('POST', `/motors/${m.name}/registers/compliant/value.json`, false);
    const cards = (await t.call('GET', '/sim/cards/list.json')).cards as { name: string }[];
    const card = cards[0]!.name;
    const found = async () => (await t.call('GET', `/sensors/code/${card}.json`)).found;
    await t.check(`card ${card}: not seen at rest`, async (c) => {
      await t.wait(1.5);
      c.expect(await found(), `${card} found`).toBe(false);
    });
    await t.check(`card ${card}: seen when shown`, async (c) => {
      c.expect((await t.cards.show(card, 0.3)).status, 'show.json status').toBe(200);
      await t.wait(1.5); // the detector looks once a second
      c.expect(await found(), `${card} found`).toBe(true);
    });
    await t.check(`card ${card}: lost when hidden`, async (c) => {
      c.expect((await t.cards.hide(card)).status, 'hide.json status').toBe(200);
      await t.wait(1.5);
      c.expect(await found(), `${card} found`).toBe(false);
    });
  },
});

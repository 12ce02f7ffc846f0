/**
 * The shadow twin's ghost in the web view, in a real browser (Debian's chromium): with `--backend=real --shadow`
 * (the Ergo Jr on the bus emulator over a pty, in its own process) the page draws the twin translucent over the
 * robot, at the twin's angles; a fault on a servo shows as a badge on its motor's row, a listed event and a tinted
 * ghost link, all gone once the fault ends; a box hides the ghost. On the sim backend (no shadow) there is none.
 * The real robot runs in wall time: waits are bounded waits for what the page shows (events, never sleeps).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { until } from '../helpers.ts';
import { type ShadowRig, startShadowRig } from '../shadow/emulator-process.ts';
import { openTwin, type Twin } from '../../src/scenario/twin.ts';
import type { RobotState } from '../../src/ui/protocol.ts';
import { type Browser, type Picture, changedShare, decodePng, launchChromium } from './browser.ts';

type Point = { x: number; y: number };
/** What the page exposes for scripts and tests (src/ui/browser/main.ts). */
interface PoppyView {
  lastState(): RobotState | undefined;
  renderedSeq(): number;
  framesDrawn(): number;
  linkScreenPosition(link: string): Point | null;
  linkNames(): string[];
  ghostVisible(): boolean;
  ghostJointAngle(motor: string): number | null;
  ghostLinkScreenPosition(link: string): Point | null;
  ghostLinkColour(link: string): string | null;
}
declare const window: { poppyView?: PoppyView };

const MOTORS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
/** The ghost's colours (src/ui/browser/ghost.ts): agreeing, and tinted for an event. */
const BLUE = '#60a5fa';
const RED = '#ef4444';
/** Bounded waits for what the page shows: the shadow tests see a fault raise its event in about 0.3-0.9 s. */
const WAIT = { timeout: 8000 };

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-ghost-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Opens the view in a fresh chromium, collecting console errors and uncaught exceptions. */
async function openView(url: string): Promise<{ browser: Browser; page: Page; consoleErrors: string[] }> {
  const browser = await launchChromium();
  const page = await browser.context.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  await page.goto(`${url}/ui/`);
  await page.waitForFunction(() => window.poppyView !== undefined);
  return { browser, page, consoleErrors };
}

/** A picture of the 3D view drawn after this call (what was asked before it is on it). */
async function canvasPicture(page: Page): Promise<Picture> {
  const drawn = await page.evaluate(() => window.poppyView!.framesDrawn());
  await page.waitForFunction((n) => window.poppyView!.framesDrawn() > n, drawn, WAIT);
  return decodePng(await page.locator('#view canvas').screenshot());
}

describe("the shadow twin's ghost in the web view (ergo-jr on the bus emulator)", function () {
  this.timeout(60000);
  let rig: ShadowRig;
  let browser: Browser;
  let page: Page;
  let consoleErrors: string[];

  /** The state the page drew last, with the ghost's angles as drawn for it (user degrees). */
  const drawn = () =>
    page.evaluate((motors) => {
      const v = window.poppyView!;
      return { state: v.lastState()!, ghost: motors.map((m) => v.ghostJointAngle(m)) };
    }, MOTORS);
  const badge = (motor: string) => page.locator(`#motors .badge.shadow[data-motor="${motor}"]`);
  const colour = (link: string) => page.evaluate((l) => window.poppyView!.ghostLinkColour(l), link);
  const fault = async (line: string) => expect(await rig.emulator.send(line), line).to.match(/^faults /);

  before(async function () {
    this.timeout(60000);
    rig = await startShadowRig({ recordsDir: path.join(tmp, 'records') });
    // Stiff, as the shadow tests: each joint holds, so the twin and the robot agree until a fault parts them.
    for (const m of MOTORS)
      expect((await rig.call('POST', `/motors/${m}/registers/compliant/value.json`, false)).status).to.equal(
        200,
      );
    await until('every motor agreeing with its twin', async () => {
      const { motors } = (await rig.call('GET', '/shadow/status.json')).body as {
        motors: { state: string }[];
      };
      return motors.every((m) => m.state === 'agree') ? true : undefined;
    });
    const port = (rig.server.app.server.address() as { port: number }).port;
    ({ browser, page, consoleErrors } = await openView(`http://127.0.0.1:${port}`));
    // A state with the shadow, drawn (the first request of the page's script bundles it: up to 30 s).
    await page.waitForFunction(() => {
      const v = window.poppyView!;
      const s = v.lastState();
      return !!s?.shadow && v.renderedSeq() === s.seq;
    });
  });

  after(async () => {
    await browser?.close();
    await rig?.close();
  });

  it("draws the ghost over the robot, at the twin's angles, in light blue", async () => {
    // The page's first request bundles its script (seconds of both cores here), during which the server's twin and
    // the emulator may fall behind and an event come and go: the test starts from a state where every motor agrees.
    const events = await page.waitForFunction(
      () => window.poppyView!.lastState()?.shadow?.state.every((s) => s === 'agree' || s === 'compliant'),
      undefined,
      { timeout: 15000 },
    );
    expect(await events.jsonValue()).to.equal(true);
    expect(await page.evaluate(() => window.poppyView!.ghostVisible())).to.equal(true);
    expect(await page.locator('#title').textContent()).to.equal('Poppy ergo-jr (real robot)');
    const { state, ghost } = await drawn();
    MOTORS.forEach((m, i) => {
      // Drawn at the twin's angle (read back from the ghost's link), which agrees with the robot's within the
      // comparator's band: each XL-320 stops anywhere within its 2.4-degree dead band of the goal, so the two may
      // differ by up to about 5 degrees while agreeing.
      expect(ghost[i], m).to.be.closeTo(state.shadow!.twin[i]!, 0.01);
      expect(ghost[i]!, m).to.be.closeTo(state.present[i]!, 5);
    });
    const links = await page.evaluate(() => window.poppyView!.linkNames());
    expect(links).to.include.members(['base_link', 'section_3', 'tip']);
    for (const link of links) {
      const [real, twin] = await page.evaluate(
        (l) => [window.poppyView!.linkScreenPosition(l), window.poppyView!.ghostLinkScreenPosition(l)],
        link,
      );
      expect(twin, link).to.not.equal(null);
      expect(Math.hypot(twin!.x - real!.x, twin!.y - real!.y), `${link} on screen, px`).to.be.below(12);
      expect(await colour(link), link).to.equal(BLUE);
    }
    expect(await badge('m4').isHidden()).to.equal(true);
    expect(await page.locator('#shadow-events').textContent()).to.match(/no event/);
  });

  it("offset on m4: its row shows the badge and the event, the ghost's m4 sits 10° from the robot's", async () => {
    await fault('offset=4:10');
    await badge('m4')
      .filter({ hasText: /^offset / })
      .waitFor(WAIT);
    const text = (await badge('m4').textContent())!;
    expect(Math.abs(Number(/^offset (-?\d+\.\d)°$/.exec(text)?.[1])), text).to.be.closeTo(10, 2.5);
    await page.locator('#shadow-events li[data-motor="m4"]', { hasText: 'm4 offset since' }).waitFor(WAIT);
    for (const m of ['m1', 'm2', 'm3', 'm5', 'm6']) expect(await badge(m).isHidden(), m).to.equal(true);

    const { state, ghost } = await drawn();
    expect(state.shadow!.state[3]).to.equal('offset');
    expect(Math.abs(ghost[3]! - state.present[3]!), 'm4: ghost - robot, degrees').to.be.closeTo(10, 2.5);
    for (const i of [0, 1, 2, 4, 5])
      expect(Math.abs(ghost[i]! - state.present[i]!), MOTORS[i]).to.be.below(3);
    // The links m4 moves are red, the others stay blue.
    expect(await colour('section_3')).to.equal(RED);
    expect(await colour('section_2')).to.equal(BLUE);
    expect(await colour('section_4')).to.equal(BLUE);
  });

  it('offset off: the badge and the event clear, the ghost is back on the robot, blue', async () => {
    await fault('offset=4:off');
    await badge('m4').waitFor({ state: 'hidden', ...WAIT });
    await page.locator('#shadow-events', { hasText: 'no event' }).waitFor(WAIT);
    const { state, ghost } = await drawn();
    expect(state.shadow!.state[3]).to.be.oneOf(['agree', 'compliant']);
    expect(Math.abs(ghost[3]! - state.present[3]!), 'm4: ghost - robot, degrees').to.be.below(5);
    expect(await colour('section_3')).to.equal(BLUE);
  });

  it('"Show the twin" hides the ghost, and shows it again', async () => {
    const links = await page.evaluate(() => window.poppyView!.linkNames());
    const positions = await Promise.all(
      links.map((l) => page.evaluate((link) => window.poppyView!.linkScreenPosition(link)!, l)),
    );
    const withGhost = await canvasPicture(page);
    await page.locator('#show-twin').uncheck();
    expect(await page.evaluate(() => window.poppyView!.ghostVisible())).to.equal(false);
    const without = await canvasPicture(page);
    // The ghost was drawn over the robot: hiding it changes the picture where the links are.
    let changed = 0;
    for (const p of positions) if (changedShare(withGhost, without, p.x, p.y, 4) > 0.3) changed++;
    expect(changed, `links whose colour the ghost changed (of ${links.length})`).to.be.at.least(
      links.length - 2,
    );
    // Far from the robot it changed nothing.
    expect(changedShare(withGhost, without, 20, 20, 10)).to.equal(0);

    await page.locator('#show-twin').check();
    expect(await page.evaluate(() => window.poppyView!.ghostVisible())).to.equal(true);
    const again = await canvasPicture(page);
    let back = 0;
    for (const p of positions) if (changedShare(again, without, p.x, p.y, 4) > 0.3) back++;
    expect(back, 'links under the ghost again').to.be.at.least(links.length - 2);
  });

  it('ran without a console error', () => {
    expect(consoleErrors).to.deep.equal([]);
  });
});

describe('no ghost in the web view without shadow mode (ergo-jr twin)', function () {
  this.timeout(30000);
  let twin: Twin;
  let browser: Browser;
  let page: Page;
  let consoleErrors: string[];

  before(async () => {
    twin = await openTwin('ergo-jr', { recordsDir: path.join(tmp, 'sim-records') });
    await twin.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (twin.app.server.address() as { port: number }).port;
    ({ browser, page, consoleErrors } = await openView(`http://127.0.0.1:${port}`));
    // The twin's time moves only when the test advances it: then the page draws the state of that tick.
    await twin.advance(0.1);
    await page.waitForFunction((tick) => {
      const v = window.poppyView!;
      const s = v.lastState();
      return !!s && s.tick >= tick && v.renderedSeq() === s.seq;
    }, twin.robot.ticks);
  });

  after(async () => {
    await browser?.close();
    await twin?.close();
  });

  it('draws the robot and no ghost; the shadow controls stay hidden; no console errors', async () => {
    const state = await page.evaluate(() => window.poppyView!.lastState()!);
    expect(state.shadow).to.equal(null);
    expect(await page.evaluate(() => window.poppyView!.linkScreenPosition('tip'))).to.not.equal(null);
    expect(await page.evaluate(() => window.poppyView!.ghostVisible())).to.equal(false);
    expect(await page.evaluate(() => window.poppyView!.ghostJointAngle('m1'))).to.equal(null);
    expect(await page.evaluate(() => window.poppyView!.ghostLinkScreenPosition('tip'))).to.equal(null);
    expect(await page.locator('#shadow').isHidden()).to.equal(true);
    expect(await page.locator('#motors .badge.shadow:visible').count()).to.equal(0);
    expect(consoleErrors).to.deep.equal([]);
  });
});

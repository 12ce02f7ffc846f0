/**
 * A classroom twin is named where students and the teacher look: its web view's heading and tab title (served in the
 * page and set again by its script), its index page, and its tile on the teacher's page. A real browser (chromium).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Classroom } from '../../src/classroom/classroom.ts';
import type { RobotDescription } from '../../src/ui/protocol.ts';
import { type Browser, launchChromium } from '../ui/browser.ts';

declare const window: { poppyView?: { description: RobotDescription } };
declare const document: { querySelectorAll(selector: string): { length: number } };

describe('classroom: each twin named in its view and on its tile', function () {
  this.timeout(60000);
  let tmp: string;
  let room: Classroom;
  let base: string;
  let browser: Browser;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'poppy-names-'));
    room = await Classroom.create({
      twins: ['ana', 'ben'].map((name) => ({ name, robot: 'ergo-jr', port: 0 })),
      speed: 'manual',
      recordsDir: tmp,
    });
    await room.listen('127.0.0.1', 0);
    base = `http://127.0.0.1:${(room.app.server.address() as { port: number }).port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await room?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it("serves the twin's view, its robot description and its index page with its name", async () => {
    const page = await (await fetch(`${base}/twins/ben/ui/`)).text();
    expect(page).to.contain('<title>ben (Poppy ergo-jr)</title>');
    expect(page).to.contain('<h1 id="title">ben: Poppy ergo-jr (twin)</h1>');
    const description = (await (await fetch(`${base}/twins/ben/ui/robot.json`)).json()) as RobotDescription;
    expect(description).to.include({ name: 'ben', robot: 'ergo-jr', backend: 'sim' });
    // On its own port too, where pypot clients and the Scratch extension talk to it.
    const own = room.twins.get('ana')!.server.app.server.address() as { port: number };
    const index = await (await fetch(`http://127.0.0.1:${own.port}/`)).text();
    expect(index).to.contain('<title>ana (Poppy ergo-jr)');
  });

  it("shows each twin's name on its tile; the tile's link opens a view titled with it", async () => {
    const page = await browser.context.newPage();
    try {
      await page.goto(`${base}/`);
      const tiles = page.locator('.twin h2 a');
      await page.waitForFunction(() => document.querySelectorAll('.twin h2 a').length === 2);
      expect(await tiles.allTextContents()).to.deep.equal(['ana', 'ben']);
      expect(await page.locator('.twin').nth(1).getAttribute('title')).to.equal('ben (Poppy ergo-jr)');
      await tiles.nth(1).click();
      await page.waitForFunction(() => window.poppyView !== undefined);
      expect(page.url()).to.equal(`${base}/twins/ben/ui/`);
      expect(await page.title()).to.equal('ben (Poppy ergo-jr)');
      expect(await page.locator('#title').textContent()).to.equal('ben: Poppy ergo-jr (twin)');
    } finally {
      await page.close();
    }
  });
});

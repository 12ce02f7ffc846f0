/**
 * Issue 47 in a real browser (Debian's chromium): a page of another origin (`http://localhost:<another port>/`, as any
 * site the user opens could be) tries to make m1 stiff, send it to 60 degrees and read the state back, and opens the
 * state stream. On the twin and on the real backend over the bus emulator's pseudo-terminal, the robot does not move,
 * the page reads nothing, and the server logs each refusal. The web view on the server's own origin still drives
 * the robot, also with a token given in the URL it was opened with.
 */
import { expect } from 'chai';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../src/core/logger.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { createRobotServer, type RobotServer } from '../../src/server.ts';
import { type Browser, launchChromium } from './browser.ts';
import { until } from '../helpers.ts';

const TOKEN = 'view-token-12345678';

/** The other site's page: the three requests of the report and a WebSocket, results left in `window.done`. */
function attackPage(target: string): string {
  return `<!doctype html><html><body><script>
(async () => {
  const base = ${JSON.stringify(target)};
  const out = {};
  const post = (url, body) =>
    fetch(base + url, { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body })
      .then((r) => 'sent: ' + r.type, (e) => 'error: ' + e);
  out.stiff = await post('/motors/m1/registers/compliant/value.json', 'false');
  out.goto = await post('/motors/m1/goto.json', JSON.stringify({ position: 60, duration: 0.5 }));
  out.read = await fetch(base + '/motors/m1/registers/present_position/value.json')
    .then((r) => r.text(), (e) => 'error: ' + e);
  out.ws = await new Promise((resolve) => {
    const ws = new WebSocket(base.replace('http', 'ws') + '/stream/state');
    ws.onmessage = (m) => resolve('message: ' + String(m.data).slice(0, 40));
    ws.onerror = () => resolve('error');
    setTimeout(() => resolve('timeout'), 5000);
  });
  window.done = out;
})();
</script></body></html>`;
}

function recordingLogger(lines: string[]): Logger {
  const keep = (l: string) => void lines.push(l);
  return { debug: keep, info: keep, warn: keep, error: keep };
}

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

interface Rig {
  server: RobotServer;
  lines: string[];
  close(): Promise<void>;
}

async function robotServer(backend: 'sim' | 'real', dir: string, tokens: string[] = []): Promise<Rig> {
  const lines: string[] = [];
  let emulator: RunningEmulator | undefined;
  if (backend === 'real') emulator = await startEmulator({ robot: 'ergo-jr' });
  const server = await createRobotServer({
    backend,
    robot: 'ergo-jr',
    logger: recordingLogger(lines),
    recordsDir: path.join(dir, backend),
    access: { tokens },
    ...(emulator ? { real: { serial: await emulator.addPort() } } : {}),
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  return {
    server,
    lines,
    async close() {
      await server.close();
      await emulator?.close();
    },
  };
}

async function m1(rig: Rig, token?: string): Promise<{ compliant: boolean; position: number }> {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const read = async (reg: string) =>
    (
      await rig.server.app.inject({ method: 'GET', url: `/motors/m1/registers/${reg}/value.json`, headers })
    ).json() as Record<string, unknown>;
  const answer = await read('compliant');
  if (typeof answer.compliant !== 'boolean')
    throw new Error(`m1's compliant read: ${JSON.stringify(answer)}`);
  return {
    compliant: answer.compliant,
    position: (await read('present_position')).present_position as number,
  };
}

describe('cross-origin pages in a real browser (issue 47)', function () {
  this.timeout(90000);
  let browser: Browser;
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'poppy-cross-origin-'));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  for (const backend of ['sim', 'real'] as const)
    it(`${backend}: the other page moves nothing and reads nothing; the web view still drives the robot`, async () => {
      const rig = await robotServer(backend, tmp);
      const port = (rig.server.app.server.address() as AddressInfo).port;
      const site = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(attackPage(`http://localhost:${port}`));
      });
      const sitePort = await listen(site);
      try {
        const before = await m1(rig);
        expect(before.compliant).to.equal(true);
        const page = await browser.context.newPage();
        await page.goto(`http://localhost:${sitePort}/`);
        await page.waitForFunction(
          () => (globalThis as unknown as { done?: unknown }).done !== undefined,
          null,
          {
            timeout: 20000,
          },
        );
        const done = (await page.evaluate(() => (globalThis as unknown as { done: unknown }).done)) as Record<
          string,
          string
        >;
        await page.close();
        // The page learns nothing: its reads fail CORS and its stream never opens.
        expect(done.read).to.match(/^error/);
        expect(done.ws).to.equal('error');
        // Let a motion that was (wrongly) sent show in the robot's position.
        await new Promise((r) => setTimeout(r, 800));
        const after = await m1(rig);
        expect(after.compliant).to.equal(true);
        expect(Math.abs(after.position - before.position)).to.be.below(3);
        const refusals = rig.lines.filter((l) => l.includes('refused (origin)'));
        expect(refusals.length, rig.lines.join('\n')).to.be.at.least(3);
        expect(refusals.join('\n')).to.include(`http://localhost:${sitePort}`);

        // The web view, opened from the server itself, drives the robot with the same kind of request.
        const view = await browser.context.newPage();
        await view.goto(`http://localhost:${port}/ui/`);
        const status = await view.evaluate(
          async () =>
            (
              await fetch('/motors/m1/registers/compliant/value.json', {
                method: 'POST',
                headers: { 'Content-Type': 'text/plain' },
                body: 'false',
              })
            ).status,
        );
        await view.close();
        expect(status).to.equal(200);
        // On the real backend the write reaches the servo at the bus loop's next cycle.
        await until('m1 stiff', async () => ((await m1(rig)).compliant ? undefined : true));
      } finally {
        site.close();
        await rig.close();
      }
    });

  it('sim with a token: the view opened from the URL carrying it drives the robot and streams', async () => {
    const rig = await robotServer('sim', tmp, [TOKEN]);
    const port = (rig.server.app.server.address() as AddressInfo).port;
    try {
      const page = await browser.context.newPage();
      expect((await page.goto(`http://localhost:${port}/ui/`))!.status()).to.equal(401);
      expect((await page.goto(`http://localhost:${port}/ui/?token=${TOKEN}`))!.status()).to.equal(200);
      const answers = await page.evaluate(async (origin) => {
        const write = await fetch('/motors/m1/registers/compliant/value.json', {
          method: 'POST',
          body: 'false',
        });
        const stream = await new Promise<string>((resolve) => {
          const ws = new WebSocket(origin.replace('http', 'ws') + '/stream/state');
          ws.onmessage = (m) => resolve(String(JSON.parse(String(m.data)).type));
          ws.onerror = () => resolve('error');
        });
        return { write: write.status, stream };
      }, `http://localhost:${port}`);
      await page.close();
      expect(answers).to.deep.equal({ write: 200, stream: 'hello' });
      await until('m1 stiff', async () => ((await m1(rig, TOKEN)).compliant ? undefined : true));
      expect(rig.lines.join('\n')).to.not.include(TOKEN);
    } finally {
      await rig.close();
    }
  });
});

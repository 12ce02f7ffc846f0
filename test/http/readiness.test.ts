/**
 * Ready means ready: until the custom primitives are loaded, /readyz and every route but /healthz answer 503 with a
 * tip; from the first answer on, the custom primitives are listed. docs/api.md, "Probes".
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createRobotServer, type RobotServer } from '../../src/server.ts';
import { Readiness } from '../../src/http/readiness.ts';

/** A custom primitive whose module finishes loading only once the file `release` exists (the test decides when). */
const HELD = (release: string) => `
import { existsSync } from 'node:fs';
await new Promise((resolve) => {
  const t = setInterval(() => { if (existsSync(${JSON.stringify(release)})) { clearInterval(t); resolve(undefined); } }, 5);
});
export default (ctx, lib) => new (class extends lib.Primitive { constructor() { super(ctx, 'held', { frequency: 10 }); } })();
`;

describe('readiness: /healthz, /readyz and the 503 gate while custom primitives load', function () {
  this.timeout(60000);
  let dir: string;
  let server: RobotServer | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'poppy-ready-'));
    await writeFile(path.join(dir, 'held.mts'), HELD(path.join(dir, 'release')));
  });
  after(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 503 with a tip but /healthz until the custom primitives are loaded, then lists them', async () => {
    server = await createRobotServer({
      backend: 'sim',
      robot: 'ergo-jr',
      speed: 'manual',
      primitivesDir: dir,
    });
    const get = (url: string) => server!.app.inject({ method: 'GET', url });

    expect(server.readiness.ready).to.equal(false);
    expect((await get('/healthz')).json()).to.deep.equal({ status: 'alive' });
    for (const url of ['/readyz', '/primitives/list.json', '/motors/list.json', '/robot.json']) {
      const res = await get(url);
      expect(res.statusCode, url).to.equal(503);
      expect(res.headers['retry-after'], url).to.equal('1');
      const body = res.json() as { error: string; tip: string; details: string };
      expect(body.error, url).to.equal('the server is starting: waiting for custom primitives');
      expect(body.tip, url).to.match(/GET \/readyz/);
    }
    expect(server.primitives.list().map((p) => p.name)).not.to.include('held');

    await writeFile(path.join(dir, 'release'), '');
    await server.readiness.whenReady();

    expect((await get('/readyz')).json()).to.deep.equal({ status: 'ready' });
    const list = await get('/primitives/list.json');
    expect(server.primitives.loadProblems).to.deep.equal([]);
    expect(list.statusCode).to.equal(200);
    expect((list.json() as { primitives: string[] }).primitives).to.include('held');
  });

  it('a part that fails still ends the wait (its failure is reported where it happens)', async () => {
    const readiness = new Readiness();
    let fail!: (e: Error) => void;
    readiness.wait('a', new Promise((_r, reject) => (fail = reject)));
    readiness.wait('b', Promise.resolve());
    await Promise.resolve();
    expect(readiness.waitingFor).to.deep.equal(['a']);
    fail(new Error('broken'));
    await readiness.whenReady();
    expect(readiness.ready).to.equal(true);
  });
});

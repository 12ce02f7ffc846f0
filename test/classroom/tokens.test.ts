/**
 * A classroom where each student drives only their twin (docs/security.md, "The classroom"): a twin's token opens
 * that twin on its own port and under `/twins/<name>/` on the main port, the teacher's opens everything, and a
 * student's token is refused on another twin, on the list and on the resets; the same in shards.
 */
import { expect } from 'chai';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { Classroom } from '../../src/classroom/classroom.ts';
import { readRoster } from '../../src/classroom/roster.ts';
import { ShardedClassroom } from '../../src/classroom/sharded.ts';
import { TOKEN_FILE, writeTokenFile } from '../../src/classroom/tokens.ts';

const TEACHER = 'teacher-0000-token';
const ANA = 'ana-token-aaaa';
const BEN = 'ben-token-bbbb';
const TWINS = [
  { name: 'ana', robot: 'ergo-jr', port: 0, token: ANA },
  { name: 'ben', robot: 'ergo-jr', port: 0, token: BEN },
];

const bearer = (token: string | undefined): Record<string, string> =>
  token ? { authorization: `Bearer ${token}` } : {};

/** The status of a WebSocket upgrade to `url` with `headers` (101 when it opens). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('open', () => {
      resolve(101);
      ws.close();
    });
    ws.once('error', (err) => {
      if (!String(err.message).includes('Unexpected server response')) reject(err);
    });
  });
}

/** Every way in, with each token: the statuses (a student on their twin 200; elsewhere 401). */
async function checkDoors(main: string, port: (name: string) => number): Promise<void> {
  const status = async (url: string, token?: string, method = 'GET') =>
    (await fetch(url, { method, headers: bearer(token) })).status;
  const twinPort = (name: string) => `http://127.0.0.1:${port(name)}`;
  for (const [token, expected] of [
    [undefined, 401],
    [ANA, 401],
    [TEACHER, 200],
  ] as const) {
    expect(await status(`${main}/twins/list.json`, token), `list with ${token}`).to.equal(expected);
    expect(await status(`${main}/metrics`, token), `metrics with ${token}`).to.equal(expected);
    expect(await status(`${main}/twins/reset.json`, token, 'POST'), `reset with ${token}`).to.equal(expected);
  }
  for (const [token, onAna, onBen] of [
    [undefined, 401, 401],
    [ANA, 200, 401],
    [BEN, 401, 200],
    [TEACHER, 200, 200],
  ] as const) {
    for (const [name, expected] of [
      ['ana', onAna],
      ['ben', onBen],
    ] as const) {
      const what = `${name} with ${token ?? 'no token'}`;
      expect(await status(`${main}/twins/${name}/motors/list.json`, token), `main port: ${what}`).to.equal(
        expected,
      );
      expect(await status(`${twinPort(name)}/motors/list.json`, token), `own port: ${what}`).to.equal(
        expected,
      );
      const ws = `/stream/state`;
      expect(
        await upgradeStatus(`${main.replace('http', 'ws')}/twins/${name}${ws}`, bearer(token)),
        `ws ${what}`,
      ).to.equal(expected === 200 ? 101 : 401);
      expect(
        await upgradeStatus(`${twinPort(name).replace('http', 'ws')}${ws}`, bearer(token)),
        `ws ${what}`,
      ).to.equal(expected === 200 ? 101 : 401);
    }
  }
  // The probes stay open.
  expect(await status(`${main}/healthz`)).to.equal(200);
  // A student who opens their URL gets a cookie kept under their twin's prefix.
  const opened = await fetch(`${main}/twins/ana/ui/?token=${ANA}`);
  expect(opened.status).to.equal(200);
  expect(opened.headers.get('set-cookie')).to.include('Path=/twins/ana').and.to.include('HttpOnly');
}

describe('classroom tokens: each student drives only their twin', function () {
  this.timeout(120000);
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'class-tokens-'));
  });
  after(() => rm(tmp, { recursive: true, force: true }));

  it('in one thread: every door, both ways in, REST and WebSocket', async () => {
    const room = await Classroom.create({
      twins: TWINS,
      speed: 'manual',
      recordsDir: path.join(tmp, 'one'),
      access: { tokens: [TEACHER] },
    });
    try {
      await room.listen('127.0.0.1', 0);
      const main = `http://127.0.0.1:${(room.app.server.address() as AddressInfo).port}`;
      const ports = new Map(room.list().map((t) => [t.name, t.port]));
      await checkDoors(main, (name) => ports.get(name)!);
    } finally {
      await room.close();
    }
  });

  it('in shards: the same doors', async () => {
    const room = await ShardedClassroom.create({
      twins: TWINS,
      speed: 1,
      workers: 2,
      recordsDir: path.join(tmp, 'shards'),
      access: { tokens: [TEACHER] },
    });
    try {
      await room.listen('127.0.0.1', 0);
      await room.loaded();
      const main = `http://127.0.0.1:${(room.app.server.address() as AddressInfo).port}`;
      const ports = new Map((await room.classList()).twins.map((t) => [t.name, t.port]));
      await checkDoors(main, (name) => ports.get(name)!);
    } finally {
      await room.close();
    }
  });

  it('the roster gives each twin a token (its own, or a new one) and refuses bad or shared ones', async () => {
    const counted = await readRoster('3', { robot: 'ergo-jr', port: 9000 });
    const tokens = counted.map((t) => t.token!);
    expect(new Set(tokens).size).to.equal(3);
    for (const t of tokens) expect(t).to.match(/^[A-Za-z0-9_-]{24}$/);
    const file = async (twins: unknown) => {
      const f = path.join(tmp, `roster-${Math.random().toString(36).slice(2)}.json`);
      await writeFile(f, JSON.stringify({ twins }));
      return readRoster(f, { robot: 'ergo-jr', port: 9000 }).then(
        (r) => r,
        (err: Error) => err.message,
      );
    };
    const kept = await file([
      { name: 'ana', robot: 'ergo-jr', token: ANA },
      { name: 'ben', robot: 'ergo-jr' },
    ]);
    expect(kept).to.not.be.a('string');
    expect((kept as { token?: string }[])[0]!.token).to.equal(ANA);
    expect((kept as { token?: string }[])[1]!.token)
      .to.be.a('string')
      .with.lengthOf(24);
    expect(await file([{ name: 'ana', robot: 'ergo-jr', token: 'short' }])).to.match(
      /twins\.0\.token.*at least 8/,
    );
    expect(await file([{ name: 'ana', robot: 'ergo-jr', token: 12345678 }])).to.match(/twins\.0\.token/);
    expect(
      await file([
        { name: 'ana', robot: 'ergo-jr', token: ANA },
        { name: 'ben', robot: 'ergo-jr', token: ANA },
      ]),
    ).to.match(/twins\.1\.token.*ana's token/);
  });

  it("writes the students' tokens and URLs to a file only the teacher reads", async () => {
    const dir = path.join(tmp, 'file');
    const written = await writeTokenFile(dir, {
      host: 'pc',
      port: 8080,
      teacher: TEACHER,
      twins: [{ name: 'ana', port: 8081, token: ANA }],
    });
    expect(written).to.equal(path.resolve(dir, TOKEN_FILE));
    expect((await stat(written)).mode & 0o777).to.equal(0o600);
    const content = JSON.parse(await readFile(written, 'utf8')) as {
      teacher: { url: string };
      twins: { name: string; url: string; own_port_url: string }[];
    };
    expect(content.teacher.url).to.equal(`http://pc:8080/?token=${TEACHER}`);
    expect(content.twins[0]).to.deep.include({
      name: 'ana',
      url: `http://pc:8080/twins/ana/ui/?token=${ANA}`,
      own_port_url: `http://pc:8081/ui/?token=${ANA}`,
    });
  });
});

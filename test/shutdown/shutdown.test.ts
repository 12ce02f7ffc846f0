/**
 * Shutdown and connection timeouts as a user meets them: a real server process, real sockets. SIGTERM while an idle
 * keep-alive socket, a half-sent body and a pending `wait` goto are all open must end the process within 2 s, answer
 * the wait with the JSON 503, and lose no saved move.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');
const URL_RE = /http:\/\/127\.0\.0\.1:(\d+)\//;

interface Server {
  child: ChildProcess;
  base: string;
  port: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

async function startServer(args: string[]): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<Awaited<Server['exited']>>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  let ended = false;
  void exited.then(() => (ended = true));
  const deadline = Date.now() + 20000;
  while (!URL_RE.test(stdout)) {
    if (ended) throw new Error(`the server stopped: ${stdout} ${stderr}`);
    if (Date.now() > deadline) throw new Error(`no start-up line: ${stdout}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const port = Number(URL_RE.exec(stdout)![1]);
  return { child, base: `http://127.0.0.1:${port}`, port, exited };
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Everything the server sends on `socket` until it closes it. */
function whenClosed(socket: net.Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8').on('data', (d: string) => (text += d));
  return new Promise((resolve) => socket.on('close', () => resolve(text)));
}

const post = (base: string, url: string, body: unknown) =>
  fetch(`${base}${url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('shutdown and timeouts (real processes)', function () {
  this.timeout(60000);
  let tmp: string;
  const started: ChildProcess[] = [];

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'poppy-shutdown-'));
  });
  afterEach(() => {
    for (const child of started.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });
  after(() => rm(tmp, { recursive: true, force: true }));

  it('SIGTERM with an idle socket, a half-sent body and a pending wait goto: 503 to the wait, exit within 2 s, saved moves kept', async () => {
    const server = await startServer(['--records-dir', tmp]);
    started.push(server.child);
    const { base } = server;
    // A saved move, and one still recording (unsaved recordings are lost at shutdown, as on pypot).
    expect((await post(base, '/records/kept/record.json', { motors: ['m1'] })).status).to.equal(200);
    expect((await post(base, '/records/kept/save.json', {})).status).to.equal(200);
    expect((await post(base, '/motors/m1/registers/compliant/value.json', false)).status).to.equal(200);

    const idle = await connect(server.port);
    idle.write(`GET /motors/list.json HTTP/1.1\r\nHost: localhost\r\n\r\n`); // then stays open (keep-alive)
    const idleClosed = whenClosed(idle);
    const half = await connect(server.port);
    half.write(
      `POST /motors/m2/goto.json HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"posi`,
    );
    const halfClosed = whenClosed(half);
    const waiting = post(base, '/motors/m1/goto.json', { position: 40, duration: 3600, wait: true });
    // The goto is under way before the signal: its motion shows in the goal position.
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${base}/motors/m1/registers/goal_position/value.json`);
      const goal = ((await res.json()) as { goal_position: number }).goal_position;
      if (goal !== 0 && Math.abs(goal) < 40) break;
      await new Promise((r) => setTimeout(r, 20));
    }

    const t0 = performance.now();
    server.child.kill('SIGTERM');
    const [exit, answer] = await Promise.all([server.exited, waiting]);
    const seconds = (performance.now() - t0) / 1000;
    expect(seconds, exit.stdout).to.be.below(2);
    expect(exit.signal).to.equal('SIGTERM');
    expect(exit.stderr).to.equal('');
    expect(answer.status).to.equal(503);
    expect(await answer.json()).to.deep.include({ error: 'server shutting down' });
    expect(await idleClosed).to.match(/^HTTP\/1\.1 200/);
    expect(await halfClosed).to.not.match(/ 500 /);
    const saved = await readFile(path.join(tmp, 'kept.record'), 'utf8');
    expect(JSON.parse(saved)).to.have.property('framerate');
  });

  it('a signal twice in a row (a process group under npm start) is one request: the server still closes cleanly', async () => {
    const server = await startServer(['--records-dir', tmp]);
    started.push(server.child);
    server.child.kill('SIGINT');
    server.child.kill('SIGINT');
    const exit = await server.exited;
    expect(exit.signal).to.equal('SIGINT');
    expect(exit.stdout).to.contain('closed');
    expect(exit.stdout).to.not.contain('exiting at once');
  });

  it('header and idle timeouts close silent sockets; a client that goes away releases its wait', async () => {
    const server = await startServer([
      '--records-dir',
      tmp,
      '--header-timeout',
      '0.5',
      '--request-timeout',
      '1',
      '--idle-timeout',
      '0.5',
      '--log-level',
      'debug',
    ]);
    started.push(server.child);
    // Headers never finished: the server answers 408 and closes.
    const slow = await connect(server.port);
    slow.write('GET /motors/list.json HTTP/1.1\r\nHost: localhost\r\n');
    const trickle = await connect(server.port);
    trickle.write('POST /motors/m1/goto.json HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n{');
    const idle = await connect(server.port);
    idle.write('GET /motors/list.json HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const [slowText, trickleText, idleText] = await Promise.all([
      whenClosed(slow),
      whenClosed(trickle),
      whenClosed(idle),
    ]);
    expect(slowText).to.match(/^HTTP\/1\.1 408/);
    expect(trickleText).to.match(/^HTTP\/1\.1 408/);
    expect(idleText).to.match(/^HTTP\/1\.1 200/);

    // A waiting client that goes away: the server stays responsive; the goto that replaced the first wait's goto
    // answers that wait with cancelled: true.
    expect((await post(server.base, '/motors/m1/registers/compliant/value.json', false)).status).to.equal(
      200,
    );
    const ctl = new AbortController();
    const gone = post(server.base, '/motors/m1/goto.json', { position: 30, duration: 3600, wait: true });
    void gone.catch(() => undefined);
    const left = fetch(`${server.base}/motors/m1/goto.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ position: 30, duration: 3600, wait: true }),
      signal: ctl.signal,
    }).catch(() => 'aborted');
    setTimeout(() => ctl.abort(), 200);
    expect(await left).to.equal('aborted');
    const list = await fetch(`${server.base}/motors/list.json`);
    expect(list.status).to.equal(200);
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit.stdout).to.match(/GET \/motors\/list\.json 200/);
    // The newer goto on m1 cut the first one short: its wait answered, honestly.
    const first = await gone;
    expect(first.status).to.equal(200);
    expect(await first.json()).to.deep.include({ cancelled: true, waiting: true });
  });
});

/**
 * The command line as a user runs it: a real `node --import tsx src/main.ts` process, and the built server
 * (bin/poppy-twin.js, what `npm start` and `npx poppy-twin` run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MAIN = path.join(ROOT, 'src/main.ts');
const SOURCES = ['--import', 'tsx', MAIN];
const BIN = [path.join(ROOT, 'bin/poppy-twin.js')];
const URL_RE = /(http:\/\/[^\s/]+)\//;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const children = new Set<ChildProcess>();

function launch(
  args: string[],
  entry = SOURCES,
): { child: ChildProcess; exited: Promise<Exit>; out: () => string; err: () => string } {
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<Exit>((resolve) =>
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { child, exited, out: () => stdout, err: () => stderr };
}

/** Runs to the end (for commands that must stop by themselves), killing it after `ms`. */
async function run(args: string[], ms = 15000): Promise<Exit> {
  const { child, exited } = launch(args);
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Starts a server and waits for its start-up line; returns the base URL. */
async function start(args: string[], entry = SOURCES) {
  const proc = launch(args, entry);
  const deadline = Date.now() + 30000;
  let done = false;
  void proc.exited.then(() => (done = true));
  while (!URL_RE.test(proc.out())) {
    if (done) throw new Error(`the server stopped: ${JSON.stringify(await proc.exited)}`);
    if (Date.now() > deadline) throw new Error(`no start-up line: ${proc.out()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const line = proc
    .out()
    .split('\n')
    .find((l) => URL_RE.test(l))!;
  return { ...proc, line, base: URL_RE.exec(line)![1]! };
}

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l.trim() !== '');
  expect(lines, `stderr: ${stderr}`).to.have.lengthOf(1);
  return lines[0]!;
}

describe('CLI (src/main.ts as a process)', function () {
  this.timeout(40000);
  let tmp: string;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'poppy-cli-'));
  });
  afterEach(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  after(() => rm(tmp, { recursive: true, force: true }));

  it('--help lists every flag and exits 0', async () => {
    const res = await run(['--help']);
    expect(res.code).to.equal(0);
    for (const flag of [
      '--backend',
      '--robot',
      '--port',
      '--host',
      '--records-dir',
      '--primitives-dir',
      '--seed',
      '--speed',
      '--cors-origins',
      '--compat',
      '--log-level',
      '--header-timeout',
      '--request-timeout',
      '--idle-timeout',
      '--workers',
      '--physics',
      '--help',
    ]) {
      expect(res.stdout, flag).to.include(flag);
    }
    for (const word of ['sim', 'real', 'ergo-jr', 'torso', 'humanoid', 'max', '8080', '127.0.0.1', 'pypot'])
      expect(res.stdout, word).to.include(word);
  });

  it('a bad flag or value stops with one clear line naming it, exit code non-zero', async function () {
    this.timeout(60000);
    const cases: [string[], RegExp][] = [
      [['--nope'], /--nope/],
      [['--speed=fast'], /--speed.*fast/],
      [['--speed=0'], /--speed/],
      [['--speed=-2'], /--speed/],
      [['--port=99999'], /--port.*99999/],
      [['--backend=usb'], /--backend.*usb/],
      [['--robot=robby'], /--robot.*robby/],
      [['--seed=1.5'], /--seed/],
      [['--compat=flask'], /--compat.*flask/],
      [['surplus'], /argument/],
      [['--classroom=2', '--workers=two'], /--workers.*two/],
      [['--workers=2'], /--workers applies to a classroom/],
      [['--physics=turbo'], /--physics.*turbo/],
      [['--token=short'], /--token.*at least 8/],
      [['--cors-origins=localhost:8000'], /--cors-origins.*not an origin/],
    ];
    // Ten processes start at once: on a loaded 2-core machine the last may need well over 15 s to get to its line.
    const results = await Promise.all(cases.map(([args]) => run([...args, '--port', '0'], 50000)));
    results.forEach((res, i) => {
      const [args, re] = cases[i]!;
      expect(res.code, args.join(' ')).to.not.equal(0);
      expect(res.code, args.join(' ')).to.not.equal(null);
      const line = oneLine(res.stderr);
      expect(line, args.join(' ')).to.match(/^error: /);
      expect(line, args.join(' ')).to.match(re);
      expect(res.stdout, args.join(' ')).to.not.match(URL_RE);
    });
    expect(oneLine(results[6]!.stderr)).to.include('ergo-jr');
  });

  it('a bad robot config file stops with one line naming the file and the field', async () => {
    const good = JSON.parse(await readFile(path.join(ROOT, 'robots/ergo-jr.json'), 'utf8')) as {
      urdf: string;
      motors: Record<string, unknown>[];
      aliases: Record<string, string[]>;
    };
    good.urdf = path.join(ROOT, 'robots', good.urdf);
    const variants: [string, (c: typeof good) => unknown, RegExp][] = [
      ['no-id', (c) => (delete c.motors[2]!.id, c), /motors\.2\.id/],
      ['dup-id', (c) => ((c.motors[1]!.id = c.motors[0]!.id), c), /motors\.1\.id.*duplicate/],
      ['bad-model', (c) => ((c.motors[0]!.model = 'XL-999'), c), /motors\.0\.model/],
      ['bad-alias', (c) => ((c.aliases.base = ['m1', 'm42']), c), /aliases\.base\.1.*m42/],
      ['bad-urdf', (c) => ((c.urdf = 'missing.urdf'), c), /urdf/],
    ];
    const files: string[] = [];
    for (const [name, edit] of variants) {
      const file = path.join(tmp, `${name}.json`);
      await writeFile(file, JSON.stringify(edit(structuredClone(good)), null, 2));
      files.push(file);
    }
    const broken = path.join(tmp, 'broken.json');
    await writeFile(broken, '{"name": "x",\n');
    const results = await Promise.all(
      [...files, broken].map((f) => run(['--robot', f, '--port', '0', '--records-dir', tmp])),
    );
    results.forEach((res, i) => {
      const what = i < variants.length ? variants[i]![0] : 'broken JSON';
      expect(res.code, what).to.be.a('number').and.not.equal(0);
      const line = oneLine(res.stderr);
      expect(line, what).to.include(i < files.length ? files[i]! : broken);
      if (i < variants.length) expect(line, what).to.match(variants[i]![2]);
      else expect(line, what).to.match(/JSON/);
    });
  });

  it('a config motor with no URDF joint of that name stops with one line naming it', async () => {
    const c = JSON.parse(await readFile(path.join(ROOT, 'robots/ergo-jr.json'), 'utf8')) as {
      urdf: string;
      motors: { name: string }[];
      aliases: Record<string, string[]>;
      chains: unknown;
      startup: { pose: Record<string, number> };
    };
    c.urdf = path.join(ROOT, 'robots', c.urdf);
    c.motors[0]!.name = 'm9';
    c.aliases.base![0] = 'm9';
    c.chains = {};
    delete c.startup.pose.m1;
    const file = path.join(tmp, 'no-joint.json');
    await writeFile(file, JSON.stringify(c));
    const res = await run(['--robot', file, '--port', '0', '--records-dir', tmp]);
    expect(res.code).to.not.equal(0);
    expect(oneLine(res.stderr)).to.match(/m9/);
  });

  it('--backend=real without a robot on the serial port stops with one line naming --serial', async () => {
    const res = await run(['--backend=real', '--serial=/dev/null/none', '--port', '0', '--records-dir', tmp]);
    expect(res.code).to.be.a('number').and.not.equal(0);
    expect(oneLine(res.stderr)).to.match(/--serial.*cannot open \/dev\/null\/none/);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`prints the URL at start-up, serves, and closes cleanly on ${signal} (then ends by that signal)`, async () => {
      const server = await start(['--port', '0', '--records-dir', tmp]);
      expect(server.line).to.match(/ergo-jr/);
      // One robot at real time: the lean physics code (docs/decisions/0035-lean-physics-code.md).
      expect(server.line).to.match(/speed 1, lean physics/);
      expect(server.base).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${server.base}/motors/list.json`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ motors: ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'] });
      // A process that runs one robot shows its own figures in /metrics: memory and the event loop's delay.
      const metrics = await (await fetch(`${server.base}/metrics`)).text();
      expect(metrics).to.match(/^process_resident_memory_bytes \d+/m);
      expect(metrics).to.match(/^nodejs_eventloop_lag_p99_seconds [\d.e-]+$/m);
      server.child.kill(signal);
      const exit = await server.exited;
      expect(exit.signal, exit.stderr).to.equal(signal);
      expect(exit.stderr).to.equal('');
      expect(exit.stdout).to.match(new RegExp(`${signal}: closing[^]*"closed"`));
    });
  }

  it('takes a robot config path, --speed max, --host and --cors-origins; a port in use is one clear line', async () => {
    const server = await start([
      '--robot',
      path.join(ROOT, 'robots/torso.json'),
      '--speed=max',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--records-dir',
      tmp,
      '--cors-origins',
      'http://a.example, http://b.example',
    ]);
    try {
      const cors = await fetch(`${server.base}/robot.json`, { headers: { origin: 'http://b.example' } });
      expect(cors.headers.get('access-control-allow-origin')).to.equal('http://b.example');
      const other = await fetch(`${server.base}/robot.json`, { headers: { origin: 'http://c.example' } });
      expect(other.headers.get('access-control-allow-origin')).to.equal(null);
      expect(server.line).to.match(/torso/);
      expect(server.line).to.match(/speed max, fast physics/);
      const motors = (await (await fetch(`${server.base}/motors/list.json`)).json()) as { motors: string[] };
      expect(motors.motors).to.have.lengthOf(13);
      const port = new URL(server.base).port;
      const clash = await run(['--port', port, '--records-dir', tmp]);
      expect(clash.code).to.be.a('number').and.not.equal(0);
      expect(oneLine(clash.stderr)).to.match(new RegExp(`${port}`));
    } finally {
      server.child.kill('SIGTERM');
      expect((await server.exited).signal).to.equal('SIGTERM');
    }
  });

  it('beyond the loopback without a token: generates one, prints it once in a URL, and asks for it', async () => {
    const server = await start(['--host', '0.0.0.0', '--port', '0', '--records-dir', tmp]);
    try {
      const deadline = Date.now() + 10000;
      while (!/\?token=/.test(server.out()) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25));
      const token = /\/ui\/\?token=([A-Za-z0-9_-]+)/.exec(server.out())?.[1];
      expect(token, server.out()).to.be.a('string').with.lengthOf(24);
      const local = `http://127.0.0.1:${new URL(server.base).port}`;
      expect((await fetch(`${local}/robot.json`)).status).to.equal(401);
      expect(
        (await fetch(`${local}/robot.json`, { headers: { authorization: `Bearer ${token}` } })).status,
      ).to.equal(200);
      expect((await fetch(`${local}/healthz`)).status).to.equal(200);
      // A wrong token that contains the right one: logged as refused, the URL's token hidden.
      const refused = await fetch(`${local}/robot.json?token=${token}x`);
      expect(refused.status).to.equal(401);
      await new Promise((r) => setTimeout(r, 200));
      expect(server.out().split(token!).length - 1, server.out()).to.equal(1);
      expect(server.out()).to.include('refused (token)');
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  it("--cors-origins='*' opens every origin and warns at start", async () => {
    const server = await start(['--port', '0', '--records-dir', tmp, '--cors-origins=*']);
    try {
      expect(server.out()).to.match(/--cors-origins='\*': any web page/);
      const res = await fetch(`${server.base}/robot.json`, { headers: { origin: 'http://c.example' } });
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  it('custom primitives are in the first answer: 503 with a tip (but /healthz) until they are loaded', async () => {
    const server = await start([
      '--port',
      '0',
      '--records-dir',
      tmp,
      '--primitives-dir',
      'examples/primitives',
    ]);
    try {
      expect((await fetch(`${server.base}/healthz`)).status).to.equal(200);
      const seen: number[] = [];
      for (;;) {
        const res = await fetch(`${server.base}/primitives/list.json`);
        seen.push(res.status);
        if (res.status === 503) {
          expect(((await res.json()) as { tip: string }).tip).to.match(/GET \/readyz/);
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        expect(res.status).to.equal(200);
        expect(((await res.json()) as { primitives: string[] }).primitives).to.include('sinus');
        break;
      }
      expect(new Set(seen.slice(0, -1))).to.satisfy((s: Set<number>) => s.size === 0 || s.has(503));
      expect((await fetch(`${server.base}/readyz`)).status).to.equal(200);
      // The start-up line comes once ready, with each part's time.
      while (!/ready in \d+ ms: .*custom primitives \d+ ms/.test(server.out()))
        await new Promise((r) => setTimeout(r, 20));
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  it('the bin runs the build (rebuilt first when src/ changed) and serves the same API', async () => {
    const now = new Date();
    await utimes(path.join(ROOT, 'src/core/phases.ts'), now, now);
    const first = await start(['--port', '0', '--records-dir', tmp], BIN);
    try {
      // Whatever made it stale first (this touch, or sources added since the last build), it says why and rebuilds.
      expect(first.err()).to.match(
        /^poppy-twin: built dist\/ \((src\/ changed|files were added)[^)]*\) in \d+ ms\n$/,
      );
      expect(first.line).to.match(/ergo-jr.*ready in \d+ ms: node \d+ ms, modules \d+ ms, config/);
      const res = await fetch(`${first.base}/motors/list.json`);
      expect(await res.json()).to.deep.equal({ motors: ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'] });
      // The web view's script is the one the build made beside the server (no bundling on a request).
      const app = await fetch(`${first.base}/ui/app.js`);
      expect(app.status).to.equal(200);
      expect(await app.text()).to.equal(await readFile(path.join(ROOT, 'dist/ui/app.js'), 'utf8'));
    } finally {
      first.child.kill('SIGTERM');
      expect((await first.exited).signal).to.equal('SIGTERM');
    }
    const again = await start(['--port', '0', '--records-dir', tmp], BIN);
    again.child.kill('SIGTERM');
    const exit = await again.exited;
    expect(exit.stderr, 'no rebuild when nothing changed').to.equal('');
  });
});

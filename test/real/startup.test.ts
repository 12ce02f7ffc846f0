/**
 * The two commands of docs/emulator.md for the real path, as a user runs them: `npm run emulator -- --robot=<r>` prints a
 * serial device, then `npm start -- --backend=real --robot=<r> --serial=<path>` serves the robot on it. Real
 * processes (`node --import tsx`, as the npm scripts run them), a real pseudo-terminal, HTTP from outside.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { startEmulator } from '../../src/emulator/emulator.ts';
import type { RealBackend } from '../../src/real/backend.ts';
import type { CycleReport } from '../../src/real/sync-loop.ts';
import { createRobotServer } from '../../src/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Proc {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
}

const procs = new Set<ChildProcess>();
afterEach(async () => {
  // SIGTERM first: an emulator closes its pty (or ends its socat relay) on the way out.
  await Promise.all(
    [...procs].map(async (c) => {
      const gone = new Promise((resolve) => c.once('close', resolve));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    }),
  );
  procs.clear();
});

function launch(script: string, args: string[], stdin: 'ignore' | 'pipe' = 'ignore'): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: [stdin, 'pipe', 'pipe'],
  });
  procs.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.on('close', (code, signal) => {
      procs.delete(child);
      resolve(code ?? signal);
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function waitFor(
  p: Proc,
  re: RegExp,
  what: string,
  ms = 20000,
  stream: 'stdout' | 'stderr' = 'stdout',
): Promise<RegExpExecArray> {
  const end = performance.now() + ms;
  for (;;) {
    const m = re.exec(stream === 'stdout' ? p.stdout() : p.stderr());
    if (m) return m;
    if (p.child.exitCode !== null || performance.now() > end)
      throw new Error(`no ${what}: exit ${p.child.exitCode}\n${p.stdout()}\n${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `npm run emulator -- <args>`: resolves with the device path it prints first. */
async function emulator(
  args: string[],
  stdin: 'ignore' | 'pipe' = 'ignore',
): Promise<{ proc: Proc; device: string }> {
  const proc = launch('src/emulator/main.ts', args, stdin);
  const m = await waitFor(proc, /^(\/\S+)\n/, 'device path');
  return { proc, device: m[1]! };
}

describe('the real path from the command line: emulator, then the server on its device', function () {
  this.timeout(60000);

  for (const robot of ['ergo-jr', 'torso']) {
    it(`${robot}: serves the robot on the printed device, then both stop cleanly on SIGTERM`, async () => {
      const emu = await emulator(['--robot', robot]);
      // The hint comes on stderr, a pipe of its own: it may arrive after the device path on stdout.
      await waitFor(emu.proc, /--serial=(\S+)/, 'the hint on stderr', 5000, 'stderr');
      expect(emu.proc.stderr()).to.include(`--serial=${emu.device}`);
      const server = launch('src/main.ts', [
        '--backend=real',
        `--robot=${robot}`,
        `--serial=${emu.device}`,
        '--port=0',
      ]);
      const url = (await waitFor(server, /listening on (http:\/\/\S+?)\/? /, 'listening line'))[1]!;
      const motors = (await (await fetch(`${url}/motors/list.json`)).json()) as { motors: string[] };
      expect(motors.motors.length).to.equal(robot === 'ergo-jr' ? 6 : 13);
      const health = (await (await fetch(`${url}/bus/health.json`)).json()) as {
        protocol: number;
        motors: { online: boolean }[];
      };
      expect(health.protocol).to.equal(robot === 'ergo-jr' ? 2 : 1);
      expect(health.motors.every((m) => m.online)).to.equal(true);
      const t0 = performance.now();
      server.child.kill('SIGTERM');
      // Closed, then ended by the signal it got, as Unix programs do (src/main.ts dieBy).
      expect(await server.exited).to.equal('SIGTERM');
      expect(performance.now() - t0).to.be.below(3000);
      emu.proc.child.kill('SIGTERM');
      expect(await emu.proc.exited).to.equal(0);
    });
  }

  it('a servo missing at start-up: exit code 2 and one line naming it; --allow-missing-motors serves the others', async () => {
    const emu = await emulator(['--robot', 'ergo-jr', '--faults', 'missing=3']);
    const refused = launch('src/main.ts', ['--backend=real', `--serial=${emu.device}`, '--port=0']);
    expect(await refused.exited).to.equal(2);
    const lines = refused.stderr().trim().split('\n');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^error: .*no answer from 1 of 6 motors .*m3 \(id 3\).*--allow-missing-motors/);
    const served = launch('src/main.ts', [
      '--backend=real',
      `--serial=${emu.device}`,
      '--port=0',
      '--allow-missing-motors',
    ]);
    const url = (await waitFor(served, /listening on (http:\/\/\S+?)\/? /, 'listening line'))[1]!;
    expect((await fetch(`${url}/motors/m3/registers/present_position/value.json`)).status).to.equal(503);
    expect((await fetch(`${url}/motors/m2/registers/present_position/value.json`)).status).to.equal(200);
    served.child.kill('SIGTERM');
    expect(await served.exited).to.equal('SIGTERM');
  });

  it('a device that is not there: exit code 2 and one line saying so', async () => {
    const refused = launch('src/main.ts', ['--backend=real', '--serial=/dev/ttyNOPE0', '--port=0']);
    expect(await refused.exited).to.equal(2);
    expect(refused.stderr().trim().split('\n')).to.have.length(1);
    expect(refused.stderr()).to.match(/cannot open \/dev\/ttyNOPE0/);
  });
});

describe('the bus process: the sync loop in a process of its own', function () {
  this.timeout(60000);

  it("keeps its 50 Hz schedule while the server's thread is blocked", async () => {
    const emu = await emulator(['--robot', 'ergo-jr']);
    const records = mkdtempSync(path.join(os.tmpdir(), 'poppy-bus-'));
    const server = await createRobotServer({
      backend: 'real',
      robot: 'ergo-jr',
      real: { serial: emu.device },
      loopHz: 50,
      recordsDir: records,
    });
    try {
      const cycles: CycleReport[] = [];
      (server.backend as RealBackend).onCycle((c) => cycles.push(c));
      await new Promise((r) => setTimeout(r, 500));
      const ticks = server.robot.ticks;
      // 400 ms of this thread busy (a heavy request, a GC, a slow primitive): no timer, no I/O, no robot tick here.
      const from = performance.timeOrigin + performance.now();
      while (performance.timeOrigin + performance.now() - from < 400);
      const to = performance.timeOrigin + performance.now();
      expect(server.robot.ticks, 'robot ticks while blocked').to.equal(ticks);
      // The reports of the cycles run meanwhile cross the IPC channel once this thread is free: wait for a later one.
      await until('a cycle started after the block', async () =>
        cycles.some((c) => c.startedAt > to) ? true : undefined,
      );
      const during = cycles.filter((c) => c.startedAt >= from && c.startedAt <= to);
      // 20 cycles are due in 400 ms; an in-process loop would have started none.
      expect(during.length, 'cycles started on the bus while the server was blocked').to.be.at.least(16);
      expect(
        during.every((c) => c.values.length >= 3),
        'each read the motors',
      ).to.equal(true);
      expect(server.robot.ticks, 'robot ticks once the thread is free').to.be.greaterThan(ticks);
    } finally {
      await server.close();
      rmSync(records, { recursive: true, force: true });
      emu.proc.child.kill('SIGTERM');
      await emu.proc.exited;
    }
  });

  it('leaves the servos limp when the server is killed (kill -9), and ends', async () => {
    const emu = await startEmulator({ robot: 'ergo-jr' });
    try {
      const server = launch('src/main.ts', ['--backend=real', `--serial=${emu.path}`, '--port=0']);
      const url = (await waitFor(server, /listening on (http:\/\/\S+?)\/? /, 'listening line'))[1]!;
      const torque = async () => (await emu.sim.bus.read([2], 'torque_enable')).get(2);
      const stiff = await fetch(`${url}/motors/m2/registers/compliant/value.json`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: 'false',
      });
      expect(stiff.status).to.equal(200);
      await until('torque on', async () => ((await torque()) === 1 ? true : undefined));
      server.child.kill('SIGKILL');
      expect(await server.exited).to.equal('SIGKILL');
      // The server had no chance to clean up: its bus process saw the channel close and let the servos go limp.
      await until('torque off after the kill', async () => ((await torque()) === 0 ? true : undefined)).catch(
        (err: Error) => {
          // The bus process writes on the server's stderr pipe, which outlives the server: say what it logged.
          throw new Error(`${err.message}; the log since: ${server.stderr().slice(-3000)}`);
        },
      );
      // ...then released the port: another server opens it (the lock is exclusive).
      const next = launch('src/main.ts', ['--backend=real', `--serial=${emu.path}`, '--port=0']);
      await waitFor(next, /listening on (http:\/\/\S+?)\/? /, 'listening line of a second server');
      next.child.kill('SIGTERM');
      expect(await next.exited).to.equal('SIGTERM');
    } finally {
      await emu.close();
    }
  });
});

describe('the emulator console (--console): faults changed while it runs', function () {
  this.timeout(60000);

  it('"missing=3" on its stdin takes m3 off the bus (503, the others answer); "clear" puts it back', async () => {
    const emu = await emulator(['--robot', 'ergo-jr', '--console'], 'pipe');
    const records = mkdtempSync(path.join(os.tmpdir(), 'poppy-console-'));
    const server = await createRobotServer({
      backend: 'real',
      robot: 'ergo-jr',
      real: { serial: emu.device },
      recordsDir: records,
    });
    try {
      await server.app.listen({ port: 0, host: '127.0.0.1' });
      const addr = server.app.server.address();
      const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const status = async (m: string) =>
        (await fetch(`${url}/motors/${m}/registers/present_position/value.json`)).status;
      expect(await status('m3')).to.equal(200);
      emu.proc.child.stdin!.write('missing=3\n');
      await waitFor(emu.proc, /faults .*missing=3/, 'the console acknowledging', 5000, 'stderr');
      await until('m3 to answer 503', async () => ((await status('m3')) === 503 ? true : undefined));
      expect(await status('m2')).to.equal(200);
      emu.proc.child.stdin!.write('nonsense=1\n');
      await waitFor(emu.proc, /error: unknown fault "nonsense"/, 'the console refusing', 5000, 'stderr');
      emu.proc.child.stdin!.write('clear\n');
      await until('m3 to answer again', async () => ((await status('m3')) === 200 ? true : undefined));
      emu.proc.child.stdin!.write('status\n');
      await waitFor(
        emu.proc,
        /faults drop=0,.*missing=none.*\d+ instructions/,
        'the status line',
        5000,
        'stderr',
      );
    } finally {
      await server.close();
      rmSync(records, { recursive: true, force: true });
    }
  });
});

/**
 * The README's two commands for the real path, as a user runs them: `npm run emulator -- --robot=<r>` prints a
 * serial device, then `npm start -- --backend=real --robot=<r> --serial=<path>` serves the robot on it. Real
 * processes (`node --import tsx`, as the npm scripts run them), a real pseudo-terminal, HTTP from outside.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Proc {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
}

const procs = new Set<ChildProcess>();
afterEach(() => {
  for (const c of procs) c.kill('SIGKILL');
  procs.clear();
});

function launch(script: string, args: string[]): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
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

async function waitFor(p: Proc, re: RegExp, what: string, ms = 20000): Promise<RegExpExecArray> {
  const end = performance.now() + ms;
  for (;;) {
    const m = re.exec(p.stdout());
    if (m) return m;
    if (p.child.exitCode !== null || performance.now() > end)
      throw new Error(`no ${what}: exit ${p.child.exitCode}\n${p.stdout()}\n${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `npm run emulator -- <args>`: resolves with the device path it prints first. */
async function emulator(args: string[]): Promise<{ proc: Proc; device: string }> {
  const proc = launch('src/emulator/main.ts', args);
  const m = await waitFor(proc, /^(\/\S+)\n/, 'device path');
  return { proc, device: m[1]! };
}

describe('the real path from the command line: emulator, then the server on its device', function () {
  this.timeout(60000);

  for (const robot of ['ergo-jr', 'torso']) {
    it(`${robot}: serves the robot on the printed device, then both stop cleanly on SIGTERM`, async () => {
      const emu = await emulator(['--robot', robot]);
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

/**
 * The command line the installed unit runs, run as systemd runs it: ExecStart's words from the rendered unit, the
 * environment file's variables, a working folder, stdout a pipe (the journal), a process group of its own (the unit's
 * cgroup); stopped as `systemctl stop` stops it, SIGTERM to every process. The robot is the bus emulator (this
 * process) on a pty; the records go to a temporary folder instead of /var/lib/poppy-twin/records, the only change.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { buildIfStale } from '../../scripts/build.js';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { envFileText } from '../../src/service/install.ts';
import { renderUnit } from '../../src/service/unit.ts';
import { alive, childrenOf } from '../real/processes.ts';
import { commandWords, envFileVars, unitValues } from './systemd-lines.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TEMPLATE = readFileSync(path.join(ROOT, 'deploy/systemd/poppy-twin.service'), 'utf8');
const TOKEN = 'unit-test-token-1234';

describe("the unit's ExecStart, run as systemd runs it (the emulator as the robot)", function () {
  this.timeout(90000);
  let emu: RunningEmulator;
  let state: string;
  let child: ChildProcess | undefined;

  before(async () => {
    // The unit runs dist/main.js as it is: the build of these sources, as `npx poppy-twin service install` leaves it.
    await buildIfStale();
    emu = await startEmulator({ robot: 'ergo-jr' });
    state = mkdtempSync(path.join(os.tmpdir(), 'poppy-exec-start-'));
  });
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    await emu.close();
    rmSync(state, { recursive: true, force: true });
  });

  it('serves the robot (JSON lines on stdout, the token of the env file), then SIGTERM stops it within 2 s', async () => {
    const records = path.join(state, 'records');
    const unit = renderUnit(TEMPLATE, {
      installDir: ROOT,
      node: process.execPath,
      user: 'poppy',
      recordsDir: records,
      flags: {
        robot: 'ergo-jr',
        serial: emu.path,
        host: '127.0.0.1',
        port: 0,
        onClose: 'compliant',
        shadow: true,
      },
    });
    const vars = { ...envFileVars(envFileText(TOKEN)), POPPY_TWIN_FLAGS: '--log-level=info' };
    const [cmd, ...args] = commandWords(unitValues(unit, 'ExecStart')[0]!, vars);
    expect(args).to.include(`--records-dir=${records}`).and.include('--shadow');
    // systemd's environment for a system service: PATH and the unit's variables, little else.
    child = spawn(cmd!, args, {
      cwd: state,
      env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', ...vars },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const server = child;
    let out = '';
    let err = '';
    server.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    server.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
      server.on('exit', (code, signal) => resolve(code ?? signal)),
    );
    const url = await until(
      'the listening line',
      async () => {
        if (server.exitCode !== null) throw new Error(`it exited: ${out}\n${err}`);
        return /listening on (http:\/\/\S+?)\/? /.exec(out)?.[1];
      },
      60000,
      50,
    );
    // Not a terminal: one JSON object per line, for the journal.
    for (const line of out.trim().split('\n')) expect(() => JSON.parse(line), line).to.not.throw();
    expect(out).to.not.include(TOKEN);
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${url}/robot.json`)).status, 'without the token').to.equal(401);
    expect((await fetch(`${url}/robot.json`, { headers: auth })).status).to.equal(200);
    const stiff = await fetch(`${url}/motors/m2/registers/compliant/value.json`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: 'false',
    });
    expect(stiff.status).to.equal(200);
    const torque = async () => (await emu.sim.bus.read([2], 'torque_enable')).get(2);
    await until('torque on', async () => ((await torque()) === 1 ? true : undefined));
    const [bus] = childrenOf(server.pid!);
    expect(bus, 'the bus process').to.be.a('number');

    const t0 = performance.now();
    process.kill(-server.pid!, 'SIGTERM');
    expect(await exited).to.equal('SIGTERM');
    await until('the bus process to end', async () => (alive(bus!) ? undefined : true), 5000, 10);
    const ms = Math.round(performance.now() - t0);
    console.log(`      stopped in ${ms} ms (server and bus process)`);
    expect(ms).to.be.below(2000);
    expect(await torque(), 'm2 limp (--on-close=compliant)').to.equal(0);
    expect(err, 'stderr').to.equal('');
  });
});

/**
 * The bus process and the signals a robot's server gets in the field: systemd stopping a unit sends SIGTERM to every
 * process of its cgroup (the bus process too), Ctrl-C sends SIGINT to the terminal's foreground process group, and
 * after a crash systemd sends SIGTERM to what is left of the unit. Whatever the order, the servos end as
 * `--on-close` says. Real processes in a process group of their own, a real pty, the servos' torque read from the
 * emulator (in this process).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { BUS_SIGNAL_GRACE_MS } from '../../src/real/bus-service.ts';
import { alive, childrenOf } from './processes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LISTENING = /listening on (http:\/\/\S+?)\/? /;

interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  /** What the server and its bus process wrote to stderr (the bus's last lines land there once the server is gone). */
  readonly err: () => string;
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
}

describe('the bus process under signals (systemd, Ctrl-C, a crash): the servos end as --on-close says', function () {
  this.timeout(60000);
  let emu: RunningEmulator;
  let records: string;
  const started = new Set<ChildProcess>();

  before(async () => {
    emu = await startEmulator({ robot: 'ergo-jr' });
    records = mkdtempSync(path.join(os.tmpdir(), 'poppy-bus-signals-'));
  });
  afterEach(async () => {
    for (const child of started) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    started.clear();
  });
  after(async () => {
    await emu.close();
    rmSync(records, { recursive: true, force: true });
  });

  const torque = async () => (await emu.sim.bus.read([2], 'torque_enable')).get(2);
  /**
   * m2's torque once the emulator has taken what the bus process sent before it ended: the emulator runs in this
   * process, and on a loaded machine its pty's last bytes may still wait here when the bus process is gone (its
   * read-backs then time out, and it ends after its last tries, its limp write sent).
   */
  const torqueSettles = async (server: Server, expected: number, what: string) => {
    let last: unknown;
    await until(what, async () => ((last = await torque()) === expected ? true : undefined), 1000, 10).catch(
      () => {},
    );
    expect(last, `${what}; the server's stderr:\n${server.err()}`).to.equal(expected);
  };

  /** A server on the emulator's pty in a process group of its own (as a unit's cgroup, or a terminal's job). */
  async function serve(extra: string[] = []): Promise<Server & { bus: number }> {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(ROOT, 'src/main.ts'),
        '--backend=real',
        `--serial=${emu.path}`,
        '--port=0',
        `--records-dir=${records}`,
        ...extra,
      ],
      {
        cwd: ROOT,
        env: { ...process.env, NODE_OPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    started.add(child);
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
      child.on('exit', (code, signal) => resolve(code ?? signal)),
    );
    const url = await until(
      'the listening line',
      async () => {
        if (child.exitCode !== null) throw new Error(`the server exited: ${out}\n${err}`);
        return LISTENING.exec(out)?.[1];
      },
      30000,
      50,
    );
    const [bus] = childrenOf(child.pid!);
    expect(bus, 'the bus process').to.be.a('number');
    // m2 stiff: its torque on, so that the end shows what was done to it.
    const res = await fetch(`${url}/motors/m2/registers/compliant/value.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'false',
    });
    expect(res.status).to.equal(200);
    await until('torque on', async () => ((await torque()) === 1 ? true : undefined));
    return { child, url, exited, bus: bus!, err: () => err };
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to the whole process group: limp servos, both processes gone within 2 s`, async () => {
      const server = await serve();
      const t0 = performance.now();
      process.kill(-server.child.pid!, signal);
      expect(await server.exited).to.equal(signal);
      await until('the bus process to end', async () => (alive(server.bus) ? undefined : true), 5000, 10);
      const ms = performance.now() - t0;
      expect(ms, 'both gone (ms)').to.be.below(2000);
      await torqueSettles(server, 0, 'm2 torque after the stop');
    });
  }

  it('--on-close=hold: the servos keep their torque after SIGTERM to the group', async () => {
    const server = await serve(['--on-close=hold']);
    process.kill(-server.child.pid!, 'SIGTERM');
    expect(await server.exited).to.equal('SIGTERM');
    await until('the bus process to end', async () => (alive(server.bus) ? undefined : true), 5000, 10);
    expect(await torque(), 'm2 torque after the stop').to.equal(1);
  });

  it('a crash, then SIGTERM to what is left (systemd after a main process died): limp servos', async () => {
    const server = await serve();
    server.child.kill('SIGKILL');
    process.kill(server.bus, 'SIGTERM');
    expect(await server.exited).to.equal('SIGKILL');
    await until('the bus process to end', async () => (alive(server.bus) ? undefined : true), 5000, 10);
    await torqueSettles(server, 0, 'm2 torque after the crash');
  });

  it('a hung server: SIGTERM to the group; the bus process leaves the servos limp after its grace', async () => {
    const server = await serve();
    server.child.kill('SIGSTOP');
    const t0 = performance.now();
    process.kill(-server.child.pid!, 'SIGTERM');
    await until('the bus process to end', async () => (alive(server.bus) ? undefined : true), 8000, 10);
    const ms = performance.now() - t0;
    await torqueSettles(server, 0, 'm2 torque');
    // It waited for its server first: a server that answers closes the bus itself, in its own order.
    expect(ms, 'ended after (ms)').to.be.at.least(BUS_SIGNAL_GRACE_MS - 50);
    server.child.kill('SIGKILL');
    await server.exited;
  });
});

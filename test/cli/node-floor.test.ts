/**
 * The Node version floor (scripts/node-floor.js): an older Node stops at start and at install with one message
 * naming the version to install, before any module that Node could not load.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { NODE_FLOOR, nodeFloorMessage } from '../../scripts/node-floor.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Runs a script with process.versions.node reading `version`, as an older Node would. */
function runAs(version: string, script: string, ...args: string[]) {
  const fake = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`;
  return spawnSync(process.execPath, ['--import', fake, path.join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    encoding: 'utf8',
    timeout: 20_000,
  });
}

describe('the Node version floor', () => {
  it('is the minimum of package.json engines.node', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(pkg.engines.node).to.equal(`>=${NODE_FLOOR.replace(/\.0$/, '')}`);
  });

  it('refuses older versions with the one to install and the Pi OS to use', () => {
    for (const old of ['18.19.0', 'v18.20.8', '20.10.0', '20.10.99', '19.9.0', '16.0.0', '20']) {
      const message = nodeFloorMessage(old, NODE_FLOOR, '/usr/bin/node');
      expect(message, old).to.be.a('string');
      expect(message).to.contain(`needs Node.js ${NODE_FLOOR} or newer`);
      expect(message).to.contain(`this is Node.js ${old.replace(/^v/, '')} (/usr/bin/node)`);
      expect(message).to.contain('64-bit Raspberry Pi OS');
    }
  });

  it('accepts the floor and anything newer', () => {
    for (const ok of [NODE_FLOOR, 'v20.11.0', '20.11.1', '20.19.6', '20.20.2', '21.0.0', '22.12.0', '24.1.0'])
      expect(nodeFloorMessage(ok), ok).to.equal(undefined);
  });

  it('stops `npx poppy-twin` on an older Node before it builds or loads the server', () => {
    const run = runAs('18.19.0', 'bin/poppy-twin.js', '--port=0');
    expect(run.status).to.equal(1);
    expect(run.stderr).to.match(/^poppy-twin needs Node\.js 20\.11\.0 or newer; this is Node\.js 18\.19\.0 /);
    expect(run.stdout).to.equal('');
    expect(run.stderr).not.to.contain('built dist');
  });

  it('fails the install (preinstall) on an older Node, and passes silently on this one', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.preinstall).to.equal('node scripts/node-floor.js');
    const old = runAs('20.10.0', 'scripts/node-floor.js');
    expect(old.status).to.equal(1);
    expect(old.stderr).to.contain('needs Node.js 20.11.0 or newer; this is Node.js 20.10.0');
    const here = spawnSync(process.execPath, [path.join(ROOT, 'scripts/node-floor.js')], {
      encoding: 'utf8',
    });
    expect([here.status, here.stdout, here.stderr]).to.deep.equal([0, '', '']);
  });
});

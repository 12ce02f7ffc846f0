/**
 * npm 11 ends an install with a warning listing the dependencies whose install scripts package.json's
 * `allowScripts` does not cover. Every locked package with an install script has its entry there, so `npm ci` stays
 * quiet, and a new one fails here, to be reviewed (README, "Install and run").
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Lock {
  packages: Record<string, { version?: string; hasInstallScript?: boolean; name?: string }>;
}

describe('install scripts (npm allowScripts)', () => {
  it('every locked package with an install script has an allowScripts entry, and no entry is stale', async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    const lock = JSON.parse(await readFile(path.join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
    const withScripts = Object.entries(lock.packages)
      .filter(([where, p]) => where !== '' && p.hasInstallScript)
      .map(
        ([where, p]) => p.name ?? where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length),
      );
    expect(withScripts, 'packages with install scripts').to.not.be.empty;
    // An entry is "name" or "name@version": its name is what comes before the last @ that is not the first character.
    const entries = Object.keys(pkg.allowScripts ?? {}).map((key) => key.replace(/(?<=.)@[^@]*$/, ''));
    expect([...new Set(withScripts)].sort()).to.deep.equal([...new Set(entries)].sort());
  });
});

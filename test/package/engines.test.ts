/**
 * package.json's engines field must stay true: every locked package the server runs with admits the minimum Node
 * version we promise (a dependency needing a newer Node breaks `npm start` on the promised one, e.g. npm's newest
 * armv7l Node, 20.11); the development tools (dev dependencies) admit Node 20.19, the floor for developing.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Node for the tests, lint and build tools (mocha, eslint and c8 need 20.19: README "Quick start"). */
const DEVELOPMENT_FLOOR: Version = [20, 19, 0];

type Version = [number, number, number];

/** The lowest version a ">=a.b.c" style minimum names. */
function minimumOf(range: string): Version {
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!m) throw new Error(`engines.node must be a ">=x.y" minimum, got "${range}"`);
  return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** Partial version ("20", "14.17", "10.x", "*") as [lowest, next excluded] bounds. */
function partial(text: string): { low: Version; parts: number } {
  const bits = text
    .replace(/^v/, '')
    .split('.')
    .filter((b) => b !== '' && b !== 'x' && b !== '*' && b !== 'X');
  return { low: [Number(bits[0] ?? 0), Number(bits[1] ?? 0), Number(bits[2] ?? 0)], parts: bits.length };
}

function bump(v: Version, parts: number): Version {
  if (parts <= 1) return [v[0] + 1, 0, 0];
  if (parts === 2) return [v[0], v[1] + 1, 0];
  return [v[0], v[1], v[2] + 1];
}

/** Does one comparator ("^20.9.0", ">= 18", "14", "10.*", "*") admit `v`? (the subset of semver npm packages use) */
function admits(comparator: string, v: Version): boolean {
  const m = /^(\^|~|>=|<=|>|<|=)?\s*(.*)$/.exec(comparator.trim())!;
  const op = m[1] ?? '';
  const { low, parts } = partial(m[2]!);
  if (parts === 0) return op === '' || op === '>=' || op === '=' || op === '^' || op === '~';
  switch (op) {
    case '>=':
      return compare(v, low) >= 0;
    case '>':
      return parts < 3 ? compare(v, bump(low, parts)) >= 0 : compare(v, low) > 0;
    case '<=':
      return parts < 3 ? compare(v, bump(low, parts)) < 0 : compare(v, low) <= 0;
    case '<':
      return compare(v, low) < 0;
    case '^': {
      const high: Version = low[0] > 0 || parts === 1 ? [low[0] + 1, 0, 0] : [0, low[1] + 1, 0];
      return compare(v, low) >= 0 && compare(v, high) < 0;
    }
    case '~':
      return compare(v, low) >= 0 && compare(v, bump(low, Math.min(parts, 2))) < 0;
    default:
      return compare(v, low) >= 0 && compare(v, bump(low, parts)) < 0;
  }
}

function rangeAdmits(range: string, v: Version): boolean {
  return range.split('||').some((set) => {
    const comparators = set
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .filter(Boolean);
    return comparators.every((c) => admits(c, v));
  });
}

describe('package: engines', () => {
  it('the range reader knows the forms the lock file uses', () => {
    const v: Version = [20, 19, 0];
    expect(rangeAdmits('>=18', v)).to.equal(true);
    expect(rangeAdmits('^18.18.0 || ^20.9.0 || >=21.1.0', v)).to.equal(true);
    expect(rangeAdmits('>=22', v)).to.equal(false);
    expect(rangeAdmits('^20.19.0 || ^22.12.0 || >=23', [20, 18, 0])).to.equal(false);
    expect(rangeAdmits('18 || 20 || >=22', v)).to.equal(true);
    expect(rangeAdmits('20 || >=22', [21, 0, 0])).to.equal(false);
    expect(rangeAdmits('10.* || >= 12.*', v)).to.equal(true);
    expect(rangeAdmits('>=16 || 14 >=14.17', v)).to.equal(true);
    expect(rangeAdmits('*', v)).to.equal(true);
    expect(rangeAdmits('>20', v)).to.equal(false);
    expect(rangeAdmits('>20.18.5', v)).to.equal(true);
    expect(rangeAdmits('<=20', v)).to.equal(true);
    expect(rangeAdmits('<20.19.0', v)).to.equal(false);
    expect(rangeAdmits('^12.22 || ^14.13 || >=16', [15, 0, 0])).to.equal(false);
  });

  it("every locked package's engines.node admits the minimum in package.json, dev tools the development one", async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    const lock = JSON.parse(await readFile(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<
        string,
        { engines?: { node?: unknown } | string[]; dev?: boolean; devOptional?: boolean }
      >;
    };
    const minimum = minimumOf(pkg.engines.node);
    const refusing: string[] = [];
    let checked = 0;
    let runtime = 0;
    for (const [where, entry] of Object.entries(lock.packages)) {
      const range = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
      if (typeof range !== 'string') continue;
      checked++;
      const dev = entry.dev === true || entry.devOptional === true;
      if (!dev) runtime++;
      const floor = dev ? DEVELOPMENT_FLOOR : minimum;
      if (!rangeAdmits(range, floor))
        refusing.push(`${where || 'package.json'}: node ${range} (${floor.join('.')})`);
    }
    expect(checked).to.be.above(50);
    expect(runtime).to.be.above(30);
    expect(refusing, `needs a newer Node than ${pkg.engines.node}`).to.deep.equal([]);
  });
});

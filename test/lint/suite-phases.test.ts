/**
 * `npm test` runs in two phases (package.json): every test file two at a time (.mocharc.json), then the files whose
 * figures are wall-time margins (the bus emulator in real time, chromium) one at a time (.mocharc.wall.json), where
 * the suite's own load cannot eat them. Each test file must be in exactly one phase.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');
const json = (file: string) =>
  JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as Record<string, unknown>;

describe("the suite's two phases", () => {
  it('run every test file once: the parallel phase ignores exactly the wall-time files', () => {
    const all = readdirSync(path.join(ROOT, 'test'), { recursive: true })
      .map((f) => path.posix.join('test', String(f).split(path.sep).join('/')))
      .filter((f) => f.endsWith('.test.ts'))
      .sort();
    const parallel = json('.mocharc.json');
    const wall = json('.mocharc.wall.json');
    expect(parallel.spec).to.deep.equal(['test/**/*.test.ts']);
    expect(parallel.parallel).to.equal(true);
    expect(wall.parallel, 'the wall-time phase runs one file at a time').to.equal(undefined);
    const ignored = [...(parallel.ignore as string[])].sort();
    expect([...(wall.spec as string[])].sort()).to.deep.equal(ignored);
    for (const f of ignored) expect(all, `${f} exists`).to.include(f);
    const script = (json('package.json').scripts as Record<string, string>).test;
    expect(script).to.include('mocha --config .mocharc.wall.json');
  });
});

/**
 * --shard=<i>/<n>: disjoint, stable parts covering the suite, whose merged report is the report of the whole;
 * a shard out of range is a usage error (exit 2).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jsonReport } from '../../src/scenario/report.ts';
import { jobError } from '../../src/scenario/result.ts';
import { findScenarios } from '../../src/scenario/runner.ts';
import { mergeJsonReports, mergeResults, parseShard, shardFiles } from '../../src/scenario/shard.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('scenario suites split in shards', function () {
  this.timeout(30000);

  it('parses i/n and refuses anything else', () => {
    expect(parseShard('2/4')).to.deep.equal({ index: 2, count: 4 });
    for (const bad of ['3/2', '0/2', '1/0', 'a/b', '2', '-1/2'])
      expect(() => parseShard(bad), bad).to.throw(/--shard must be <i>\/<n>/);
  });

  it('the parts are disjoint, cover the suite, and do not depend on the order files are given in', async () => {
    const files = await findScenarios([path.join(ROOT, 'scenarios')]);
    expect(files.length).to.be.greaterThan(3);
    for (const count of [1, 2, 3, files.length, files.length + 2]) {
      const parts = Array.from({ length: count }, (_, i) => shardFiles(files, { index: i + 1, count }));
      expect(parts.flat().sort(), `n=${count}`).to.deep.equal([...files].sort());
      expect(new Set(parts.flat()).size, `n=${count}: disjoint`).to.equal(files.length);
      const shuffled = [...files].reverse();
      for (let i = 0; i < count; i++)
        expect(shardFiles(shuffled, { index: i + 1, count }), 'stable').to.deep.equal(parts[i]);
    }
  });

  it("the parts' merged report equals the report of the whole", async () => {
    const files = await findScenarios([path.join(ROOT, 'scenarios')]);
    const result = (f: string) =>
      jobError({ file: path.relative(ROOT, f), robot: 'ergo-jr' }, `ran ${f}`, 12);
    const whole = jsonReport(files.map(result));
    const parts = [1, 2, 3].map((index) => jsonReport(shardFiles(files, { index, count: 3 }).map(result)));
    expect(mergeJsonReports(parts)).to.equal(whole);
    expect(mergeJsonReports([...parts].reverse()), 'in any order').to.equal(whole);
    expect(mergeResults([])).to.deep.equal([]);

    // The same through the command line (--merge), as the indexed Job's last step does.
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shard-'));
    try {
      const inputs = parts.map((text, i) => {
        const p = path.join(tmp, `part-${i}.json`);
        writeFileSync(p, text);
        return p;
      });
      const out = path.join(tmp, 'whole.json');
      const cli = spawnSync('npx', ['tsx', 'src/scenario/cli.ts', '--merge', ...inputs, '--json', out], {
        cwd: ROOT,
        encoding: 'utf8',
      });
      expect(cli.status, cli.stderr).to.equal(0);
      expect(readFileSync(out, 'utf8')).to.equal(whole);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('--shard=3/2 is a usage error (exit 2, one line)', () => {
    const cli = spawnSync('npx', ['tsx', 'src/scenario/cli.ts', 'scenarios/', '--shard=3/2'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(cli.status).to.equal(2);
    expect(cli.stderr.trim()).to.match(/^error: --shard must be <i>\/<n>.*"3\/2"$/);
  });
});

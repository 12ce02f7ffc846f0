/**
 * A source file a newcomer can hold: every file in src/ over 400 lines says why on its first line
 * (CONTRIBUTING.md), so a file that grows past it without a reason fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const SRC = path.resolve(import.meta.dirname, '../../src');
const LIMIT = 400;
const REASON = /^\/\/ Over 400 lines: \S.{10,}/;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|js)$/.test(entry.name) ? [full] : [];
  });
}

describe('file size (src/)', () => {
  it('finds the source files', () => {
    expect(sourceFiles(SRC).length).to.be.greaterThan(100);
  });

  it('gives every file over 400 lines a one-line reason at its top', () => {
    const unexplained = sourceFiles(SRC)
      .map((file) => ({ file, lines: fs.readFileSync(file, 'utf8').split('\n') }))
      .filter(({ lines }) => lines.length > LIMIT && !REASON.test(lines[0] ?? ''))
      .map(({ file, lines }) => `${path.relative(SRC, file)} (${lines.length} lines)`);
    expect(unexplained, 'files over 400 lines without a reason on line 1').to.deep.equal([]);
  });
});

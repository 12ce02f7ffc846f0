/**
 * The docs' links lead somewhere: every relative link of README.md, CONTRIBUTING.md and docs/ names a file or folder
 * of the repository, and its `#anchor` a heading of that page (GitHub's slugs), so moving a section breaks no link.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Pages written on another branch of the same issue: a link to one is checked once it exists. */
const PENDING = new Set(['docs/security.md']);

function pages(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f));
  return ['README.md', 'CONTRIBUTING.md', ...docs];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** What is wrong with the links of `file` (its text read from the repository unless given). */
function linkProblems(file: string, markdown = readFileSync(path.join(ROOT, file), 'utf8')): string[] {
  const text = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  const problems: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const link = m[1]!;
    if (/^[a-z]+:/.test(link)) continue; // http:, https:, mailto:
    const [target = '', anchor] = link.split('#');
    const resolved = target ? path.normalize(path.join(path.dirname(file), target)) : file;
    if (!existsSync(path.join(ROOT, resolved))) {
      if (!PENDING.has(resolved)) problems.push(`${file}: ${link}: ${resolved} does not exist`);
      continue;
    }
    if (anchor && !statSync(path.join(ROOT, resolved)).isDirectory()) {
      if (!anchors(readFileSync(path.join(ROOT, resolved), 'utf8')).has(anchor))
        problems.push(`${file}: ${link}: ${resolved} has no heading #${anchor}`);
    }
  }
  return problems;
}

describe('docs: links', () => {
  it('slugs headings as GitHub does, and finds a missing page or heading', () => {
    expect([
      ...anchors('# The `pypot` profile (`--compat=pypot`)\n## Faults\n## Faults\n```\n# not one\n```'),
    ]).to.deep.equal(['the-pypot-profile---compatpypot', 'faults', 'faults-1']);
    const bad =
      '[a](docs/nowhere.md), [b](docs/cli.md#nowhere), [c](docs/cli.md#flags), [d](docs/security.md)';
    expect(linkProblems('README.md', bad)).to.deep.equal([
      'README.md: docs/nowhere.md: docs/nowhere.md does not exist',
      'README.md: docs/cli.md#nowhere: docs/cli.md has no heading #nowhere',
    ]);
  });

  it('every relative link of README.md, CONTRIBUTING.md and docs/ leads to a page and heading that exist', () => {
    const problems = pages().flatMap((file) => linkProblems(file));
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });
});

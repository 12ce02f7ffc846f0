/**
 * The repository stands alone: code, tests and docs cite docs/reference/, never files users do not have, and every
 * citation `docs/reference/<file>.md <n.m>` names a page and a numbered heading that exist.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '../..');
const REFERENCE = 'docs/reference';
const SELF = path.relative(ROOT, import.meta.filename);

/** Names of the external reference files, built so that this file does not cite them itself. */
const EXTERNAL = ['FACTS', 'CONTRACT', 'SERVO-MODELS', 'REST-API'].join('|');
/**
 * A citation of an external reference file ("X.md", "X.md 4.2", "X §6"), or a path into the specification folder
 * kept beside the repository.
 */
const OUTSIDE = new RegExp(
  `\\b(?:${EXTERNAL})(?:\\.md\\b|\\s*§)|\\.\\./shared\\b|\\bshared/(?:reference|spec)/`,
);

const SECTION = String.raw`\d+(?:\.\d+)*`;
/** A section list after a citation: "4.2", "1.2, 2.2, 3.2", "2.4 and 3.3", "1-7", "8.3 / 8.5", "section 4", "§3". */
const LIST = String.raw`(?:,? (?:section |§)?(${SECTION}(?:(?:, | and | / |-|–)${SECTION}(?![\d.]*\s*(?:s\b|ms\b|%|deg|mm|Hz)))*))?`;
const PAGES = String.raw`[a-z][a-z-]*`;

/** Numbered headings of a reference page ("## 8. Dynamixel", "### 8.3 Control tables" -> "8", "8.3"). */
function headings(text: string): Set<string> {
  const found = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s/gm)) found.add(m[1]!);
  return found;
}

/**
 * What is wrong with the citations of one file's text: a citation of a file outside the repository, or of a
 * reference page or section that does not exist. `pages` maps a page name ("robots") to its numbered headings.
 * Inside docs/reference/ the pages cite each other without the folder ("pypot.md 4.4").
 */
function citationProblems(text: string, file: string, pages: ReadonlyMap<string, Set<string>>): string[] {
  const problems: string[] = [];
  const inReference = file.startsWith(`${REFERENCE}/`);
  const prefix = inReference ? `(?:${REFERENCE}/)?` : `${REFERENCE}/`;
  const cite = new RegExp(`(?<![\\w/.-])${prefix}(${PAGES})\\.md(?![\\w/-])${LIST}`, 'g');
  text.split('\n').forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    if (OUTSIDE.test(line)) problems.push(`${where}: cites a file outside the repository: ${line.trim()}`);
    for (const m of line.matchAll(cite)) {
      const page = m[1]!;
      if (inReference && !m[0].startsWith(REFERENCE) && !pages.has(page)) continue; // README.md, api.md...
      const sections = pages.get(page);
      if (!sections) {
        problems.push(`${where}: ${REFERENCE}/${page}.md does not exist: ${m[0]}`);
        continue;
      }
      for (const s of m[2]?.split(/, | and | \/ |-|–/) ?? []) {
        if (!sections.has(s)) problems.push(`${where}: ${REFERENCE}/${page}.md has no section ${s}: ${m[0]}`);
      }
    }
  });
  return problems;
}

function referencePages(): Map<string, Set<string>> {
  const pages = new Map<string, Set<string>>();
  for (const name of readdirSync(path.join(ROOT, REFERENCE))) {
    if (name.endsWith('.md') && name !== 'README.md') {
      pages.set(name.slice(0, -3), headings(readFileSync(path.join(ROOT, REFERENCE, name), 'utf8')));
    }
  }
  return pages;
}

/** Text files under `rel` (a folder or a file), relative to the root. */
function filesUnder(rel: string): string[] {
  const abs = path.join(ROOT, rel);
  if (!statSync(abs).isDirectory()) return [rel];
  return readdirSync(abs, { withFileTypes: true }).flatMap((e) => {
    const child = path.join(rel, e.name);
    if (e.isDirectory()) return filesUnder(child);
    return /\.(ts|js|mjs|json|md|html|css)$/.test(e.name) ? [child] : [];
  });
}

/** Where the project's own words are: the code, its tests and instruments, and the docs. */
const SCANNED = [
  'src',
  'test',
  'bench',
  'scenarios',
  'examples',
  'urdf/generate.ts',
  'docs',
  'README.md',
  'CONTRIBUTING.md',
];

describe('citations (the repository stands alone)', () => {
  const pages = referencePages();

  it('has the reference pages the code cites, with numbered sections', () => {
    expect([...pages.keys()].sort()).to.deep.equal([
      'camera',
      'contract',
      'dynamixel',
      'pypot',
      'rest-api',
      'robots',
      'servo-models',
    ]);
    expect([...pages.get('robots')!]).to.include.members(['0', '1.1', '1.4', '2.4', '3.3', '6', '9.6', '10']);
    expect([...pages.get('dynamixel')!]).to.include.members(['8', '8.1', '8.2', '8.3', '8.4', '8.5']);
    expect([...pages.get('contract')!]).to.include.members(['1', '2', '3', '4', '5', '6', '7', '8']);
  });

  it('catches a citation outside the repository, a missing page and a missing section', () => {
    const bad = [
      `// see ${'FACTS'}.md 4.2`,
      `// see ${'SERVO-MODELS'} §3`,
      `// see ${'..'}/shared/DESIGN.md`,
      '// see docs/reference/nowhere.md 1',
      '// see docs/reference/robots.md 42.7',
      '// see docs/reference/contract.md 1-9',
      '// see docs/reference/robots.md 1.2, 2.2, 3.9',
    ].join('\n');
    const problems = citationProblems(bad, 'src/x.ts', pages);
    expect(problems).to.have.length(7);
    expect(problems[3]).to.contain('nowhere.md does not exist');
    expect(problems[4]).to.contain('robots.md has no section 42.7');
    expect(problems[5]).to.contain('contract.md has no section 9');
    expect(problems[6]).to.contain('robots.md has no section 3.9');
    const good = [
      '// docs/reference/robots.md 1.2, 2.2, 3.2; docs/reference/contract.md 1-7 and docs/reference/pypot.md 4.2.',
      '// (docs/reference/dynamixel.md 8.3 / 8.5), docs/reference/servo-models.md §3, docs/reference/contract.md section 4',
      '// docs/reference/servo-models.md (the BAM models); docs/reference/robots.md 6 gives (0, -0.0604, 0.128)',
    ].join('\n');
    expect(citationProblems(good, 'src/x.ts', pages)).to.deep.equal([]);
  });

  it('finds no citation outside the repository and no citation of a missing page or section', () => {
    const problems = SCANNED.flatMap(filesUnder)
      .filter((file) => file !== SELF)
      .flatMap((file) => citationProblems(readFileSync(path.join(ROOT, file), 'utf8'), file, pages));
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });
});

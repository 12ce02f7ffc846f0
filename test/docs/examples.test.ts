/**
 * Docs that cannot drift: every code example of README.md, CONTRIBUTING.md and docs/ is run or checked
 * (test/docs/examples/check.ts says how each kind is), so a changed route, flag, answer or signature fails here.
 * A block that cannot run is marked in its info string with why (`sh no-run: needs a robot`), and is still checked
 * for what it names. The servers are sim twins on a stepped clock; nothing waits in real time.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { type Context, PROGRAMS, type Result, checkBlock } from './examples/check.ts';
import { type CodeBlock, codeBlocks } from './examples/markdown.ts';
import { Page, ROOT } from './examples/page.ts';
import { CLIS, type Cli, helpFlags } from './examples/shell.ts';
import { type ExampleFile, typeCheck, writeExample } from './examples/typecheck.ts';

/** The pages whose examples are run: the README, the contributors' guide and everything under docs/. */
async function pages(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs'), { recursive: true }))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f))
    .sort();
  return ['README.md', 'CONTRIBUTING.md', ...docs];
}

/** A page of broken examples, one of each way to break one: each must be caught (BROKEN_PROBLEMS, in order). */
const BROKEN = [
  '```sh',
  'sudo apt-get install chromium',
  '```',
  '```',
  'a block that does not say what it is',
  '```',
  '```sh',
  'curl http://127.0.0.1:8080/motors/m9/registers/present_position/value.json',
  'curl http://127.0.0.1:8080/motors/list.json   # {"motors": ["m1", "m7"]}',
  '```',
  '```sh no-run: serves until stopped',
  'npm start -- --robots=torso',
  'npm run scenario -- scenarios/no-such.scenario.ts',
  '```',
  '```sh no-run: for no reason',
  'curl http://127.0.0.1:8080/motors/list.json',
  '```',
  '```ts file=scenarios/broken.scenario.ts',
  "import { defineScenario } from '../src/scenario/api.ts';",
  "export default defineScenario({ name: 'b', robot: 'ergo-jr', run: async (t) => t.hand('m6', -20, 1, 'slow') });",
  '```',
  '```json answer="GET /motors/m1/registers/compliant/value.json"',
  '{ "compliant": false }',
  '```',
  '```ts mirrors=src/primitives/api.ts',
  'interface ParamSpec { name: string; type: string; optional?: boolean }',
  '```',
  'Text, then an indented block:',
  '',
  '    npm test',
  '',
].join('\n');
const BROKEN_PROBLEMS = [
  /sudo apt-get install chromium`: the examples test cannot run this: mark the block `sh no-run: <why>`/,
  /a code block says what it is/,
  /motors\/m9\/.*answered 404 \{"error":"motor \\"m9\\" does not exist"/,
  /shows \{"motors":\["m1","m7"\]\}.*\.motors differs/,
  /--robots is not a flag of start/,
  /scenarios\/no-such\.scenario\.ts does not exist/,
  /every command of this block can run here: remove its no-run/,
  /line 20: Expected 2-3 arguments, but got 4/,
  /GET \/motors\/m1\/registers\/compliant\/value.json answered \{"compliant":true\}: .compliant is true/,
  /ParamSpec is not the ParamSpec of src\/primitives\/api.ts/,
  /a code block says what it is/,
];

/** Each CLI's `--help`, as its flags. */
async function cliFlags(scripts: Record<string, string>): Promise<Map<Cli, Map<string, boolean>>> {
  const program = (cli: Cli) =>
    cli === 'start' ? 'src/main.ts' : scripts[cli]!.split(' ').find((w) => /\.[cm]?[jt]s$/.test(w))!;
  const help = (file: string) =>
    new Promise<string>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', file, '--help'], { cwd: ROOT });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.on('close', () => resolve(out));
    });
  const texts = await Promise.all(CLIS.map((cli) => help(program(cli))));
  return new Map(CLIS.map((cli, i) => [cli, helpFlags(texts[i]!)]));
}

describe('docs: every code example runs, or says why not and is checked', function () {
  this.timeout(120000);
  let scratch: string;
  let ctx: Context;
  const blocks = new Map<string, CodeBlock[]>();
  const results: Result[] = [];

  before(async () => {
    await mkdir(path.join(ROOT, 'tmp'), { recursive: true });
    // Under the repository (tmp/ is git-ignored), so that examples resolve its modules and its tsconfig applies.
    scratch = await mkdtemp(path.join(ROOT, 'tmp', 'doc-examples-'));
    for (const file of await pages())
      blocks.set(file, codeBlocks(await readFile(path.join(ROOT, file), 'utf8'), file));
    blocks.set('(broken examples)', codeBlocks(BROKEN, '(broken examples)'));
    const scripts = (
      JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    const files = new Map<CodeBlock, ExampleFile>();
    let n = 0;
    for (const block of [...blocks.values()].flat())
      if (PROGRAMS.includes(block.lang)) files.set(block, await writeExample(block, scratch, n++));
    // The CLIs print their --help in child processes while this one type-checks (synchronously).
    const helps = cliFlags(scripts);
    const typeErrors = typeCheck([...files.values()].filter((f) => /\.ts$/.test(f.path)));
    const flags = await helps;
    ctx = { flags, scripts, files, typeErrors, scratch };
  });

  after(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  async function run(file: string): Promise<Result[]> {
    const page = new Page(file);
    const out: Result[] = [];
    try {
      for (const block of blocks.get(file)!) out.push(await checkBlock(block, page, ctx));
    } finally {
      await page.close();
    }
    results.push(...out);
    return out;
  }

  const where = (r: Result) => `${r.block.file}:${r.block.line} (${r.block.lang || 'no language'})`;

  it('README.md, CONTRIBUTING.md and every page of docs/', async () => {
    const problems: string[] = [];
    for (const file of [...blocks.keys()].filter((f) => f !== '(broken examples)'))
      for (const r of await run(file)) problems.push(...r.problems.map((p) => `${where(r)}: ${p}`));
    expect(problems, problems.join('\n\n')).to.deep.equal([]);
    const count = (v: Result['verdict']) => results.filter((r) => r.verdict === v).length;
    console.log(
      `      ${count('ran')} examples run, ${count('no-run')} marked no-run (and checked), ${count('text')} text`,
    );
  });

  it('catches each way an example breaks (a page of broken ones)', async () => {
    const found = (await run('(broken examples)')).flatMap((r) => r.problems);
    for (const pattern of BROKEN_PROBLEMS) {
      const at = found.findIndex((p) => pattern.test(p));
      expect(at, `${pattern} among:\n${found.join('\n')}`).to.be.at.least(0);
      found.splice(at, 1);
    }
    expect(found, 'nothing else').to.deep.equal([]);
  });
});

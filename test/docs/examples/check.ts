/**
 * What each kind of example must do. Shell blocks run their curl, sleep and file commands against the page's server;
 * every command, run or not, names npm scripts, flags and repository paths that exist. JSON blocks parse, and those
 * that say which request they answer (or are the body of) are sent and checked against the answer and the OpenAPI
 * schema. TypeScript and JavaScript blocks are type-checked (TypeScript) and run: a scenario by the scenario runner,
 * a custom primitive loaded into a server, anything else as a program. `text` is prose laid out, and a block that
 * cannot run says so, with why, in its info string (`sh no-run: needs a robot`).
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { type ScenarioDefinition, runScenario } from '../../../src/scenario/api.ts';
import { resultLines } from '../../../src/scenario/runner.ts';
import { checkConsole, checkJson, subset } from './answers.ts';
import type { CodeBlock } from './markdown.ts';
import { type Page, ROOT } from './page.ts';
import { type Cli, commands, flagsOf, kindOf } from './shell.ts';
import type { ExampleFile } from './typecheck.ts';
import { simServer } from '../../helpers.ts';

export type Verdict = 'ran' | 'no-run' | 'text';

export interface Result {
  readonly block: CodeBlock;
  readonly verdict: Verdict;
  readonly problems: string[];
}

export interface Context {
  /** Each CLI's flags (from its --help): flag -> takes a value. */
  readonly flags: ReadonlyMap<Cli, ReadonlyMap<string, boolean>>;
  readonly scripts: Readonly<Record<string, string>>;
  /** TypeScript and JavaScript blocks written as files, and their type errors. */
  readonly files: ReadonlyMap<CodeBlock, ExampleFile>;
  readonly typeErrors: ReadonlyMap<string, string[]>;
  /** Where a scratch records folder may go. */
  readonly scratch: string;
}

const SHELL = ['sh', 'bash', 'shell'];
const TYPESCRIPT = ['ts', 'typescript'];
const JAVASCRIPT = ['js', 'javascript', 'mjs'];
export const PROGRAMS = [...TYPESCRIPT, ...JAVASCRIPT];
const REPO_PATH = /^(?:src|test|docs|scenarios|examples|robots|urdf|bench|scripts|deploy|asm|bin|eslint)\//;

export async function checkBlock(block: CodeBlock, page: Page, ctx: Context): Promise<Result> {
  const problems: string[] = [];
  const result = (verdict: Verdict): Result => ({ block, verdict, problems });
  if (block.indented || !block.lang)
    return fail(result, 'a code block says what it is: fence it with a language (sh, ts, json...), or text');
  if (block.noRun === '') return fail(result, 'no-run says why: `no-run: <why>`');
  try {
    if (SHELL.includes(block.lang)) await shell(block, page, ctx, problems);
    else if (block.lang === 'console') await checkConsole(block, ctx.scripts, problems);
    else if (block.lang === 'json') await checkJson(block, page, problems);
    else if (PROGRAMS.includes(block.lang)) await program(block, page, ctx, problems);
    else if (block.lang === 'text' || block.lang === 'txt') return result('text');
    else if (block.noRun === undefined)
      problems.push(`the examples test does not run ${block.lang}: mark it no-run: <why>`);
  } catch (err) {
    problems.push((err as Error).stack ?? String(err));
  }
  return result(block.noRun === undefined ? 'ran' : 'no-run');
}

function fail(result: (v: Verdict) => Result, problem: string): Result {
  const r = result('ran');
  r.problems.push(problem);
  return r;
}

/** What a command names that does not exist: an npm script, a flag of the CLI it runs, a file of the repository. */
function staticProblems(w: readonly string[], ctx: Context): string[] {
  const problems: string[] = [];
  if (w[0] === 'npm' && (w[1] === 'run' || w[1] === 'start' || w[1] === 'test')) {
    const script = w[1] === 'run' ? w[2] : w[1];
    if (script && !(script in ctx.scripts)) problems.push(`npm has no script "${script}" (package.json)`);
  }
  const { cli, args } = kindOf(w);
  if (cli) {
    const known = ctx.flags.get(cli)!;
    for (const [flag] of flagsOf(args, (f) => known.get(f) ?? false))
      if (!known.has(flag)) problems.push(`${flag} is not a flag of ${cli} (see its --help)`);
  }
  for (const word of new Set(w.map((x) => x.replace(/^--[\w-]+=/, '')))) {
    if (REPO_PATH.test(word) && !/[*?<>{]/.test(word) && !existsSync(path.join(ROOT, word)))
      problems.push(`${word} does not exist in the repository`);
  }
  return problems;
}

async function shell(block: CodeBlock, page: Page, ctx: Context, problems: string[]): Promise<void> {
  const runnable = block.noRun === undefined;
  const all = commands(block.code);
  if (!runnable && all.every((c) => ['curl', 'sleep', 'file'].includes(kindOf(c.words).kind)))
    problems.push('every command of this block can run here: remove its no-run');
  for (const cmd of all) {
    const at = `line ${block.line + cmd.line}: \`${cmd.text}\``;
    for (const p of staticProblems(cmd.words, ctx)) problems.push(`${at}: ${p}`);
    const { kind, cli, args } = kindOf(cmd.words);
    if (kind === 'server') {
      // The page's later examples talk to this server; one the test cannot stand in for (a real robot, a
      // classroom) leaves the page's server as it was.
      const known = ctx.flags.get(cli!)!;
      const flags = flagsOf(args, (f) => known.get(f) ?? false);
      if (runnable || !page.unhonoured(flags).length) page.setServer(flags);
      if (runnable) {
        for (const p of page.unhonoured(flags)) problems.push(`${at}: ${p}`);
        problems.push(`${at}: a server never returns: start it in a block of its own, marked no-run`);
      }
      continue;
    }
    if (!runnable) continue;
    if (kind === 'curl') await curl(cmd.words, cmd.expected, page, at, problems);
    else if (kind === 'sleep') await page.advance(Number(args[0]));
    else if (kind === 'file') {
      const ran = await page.run(cmd.words[0]!, args, { cwd: await page.cwd(), withServer: false });
      if (ran.code !== 0) problems.push(`${at}: exit ${ran.code}: ${ran.stderr.trim()}`);
    } else
      problems.push(
        `${at}: the examples test cannot run this: mark the block \`${block.lang} no-run: <why>\``,
      );
  }
}

/** A curl command against the page's server: it must succeed, and give the answer its comment shows. */
async function curl(w: readonly string[], expected: unknown, page: Page, at: string, problems: string[]) {
  const args = await Promise.all(w.slice(1).map((a) => page.local(a)));
  const ran = await page.run('curl', ['-sS', '--max-time', '60', '-w', '%{stderr}\n%{http_code}', ...args], {
    cwd: await page.cwd(),
    withServer: true,
  });
  const status = Number(ran.stderr.trim().split('\n').pop());
  const showsError = typeof expected === 'object' && expected !== null && 'error' in expected;
  if (ran.code !== 0) problems.push(`${at}: curl exited ${ran.code}: ${ran.stderr.trim()}`);
  else if (status >= 400 && !showsError)
    problems.push(`${at}: answered ${status} ${ran.stdout.slice(0, 400)}`);
  else if (expected !== undefined) {
    let answer: unknown;
    try {
      answer = JSON.parse(ran.stdout);
    } catch {
      problems.push(`${at}: shows a JSON answer, answered ${ran.stdout.slice(0, 200)}`);
      return;
    }
    const why = subset(expected, answer);
    if (why) problems.push(`${at}: shows ${JSON.stringify(expected)}, answered ${ran.stdout.trim()}: ${why}`);
  }
}

async function program(block: CodeBlock, page: Page, ctx: Context, problems: string[]): Promise<void> {
  const file = ctx.files.get(block)!;
  const typeErrors = ctx.typeErrors.get(file.path) ?? [];
  problems.push(...typeErrors);
  if (block.attrs.has('mirrors') || block.noRun !== undefined || typeErrors.length) return;
  if (/\bdefineScenario\(/.test(block.code)) {
    // As the scenario runner's worker runs it: its default export on a twin of its robot.
    const def = ((await import(pathToFileURL(file.path).href)) as { default: ScenarioDefinition }).default;
    const result = await runScenario(def, path.dirname(file.path), { file: file.path });
    if (result.status !== 'pass' || !result.checks.length)
      problems.push(`the scenario does not pass:\n${resultLines(result)}`);
  } else if (/\blib\.Primitive\b/.test(block.code)) await primitive(block, file, ctx, problems);
  else {
    // A program: run against the page's server, where it talks to one.
    const code = await page.local(block.code);
    const run = file.path.replace(/(\.\w+)$/, '.run$1');
    await writeFile(run, code === block.code ? await readFile(file.path, 'utf8') : code);
    const ts = TYPESCRIPT.includes(block.lang) ? ['--import', 'tsx'] : [];
    const ran = await page.run(process.execPath, [...ts, run], {
      cwd: ROOT,
      withServer: code !== block.code,
    });
    if (ran.code !== 0) problems.push(`the program exited ${ran.code}:\n${ran.stdout}${ran.stderr}`);
  }
}

/** A custom primitive: loaded by a twin from a folder of its own, listed, started, run a while and stopped. */
async function primitive(
  block: CodeBlock,
  file: ExampleFile,
  ctx: Context,
  problems: string[],
): Promise<void> {
  const name = /super\(\s*ctx\s*,\s*'([^']+)'/.exec(block.code)?.[1];
  if (!name) return void problems.push("a primitive names itself: super(ctx, '<name>', ...)");
  const twin = await simServer('ergo-jr', {
    primitivesDir: path.dirname(file.path),
    recordsDir: path.join(ctx.scratch, 'records'),
  });
  try {
    const json = async (url: string) => (await twin.get(url)).json() as Record<string, unknown>;
    expect((await json('/primitives/problems.json')).problems, 'problems loading it').to.deep.equal([]);
    expect((await json('/primitives/list.json')).primitives).to.include(name);
    expect((await twin.get(`/primitives/${name}/start.json`)).statusCode).to.equal(200);
    await twin.advance(0.5);
    expect(await json(`/primitives/${name}/status.json`)).to.include({ running: true, last_error: null });
    expect((await twin.get(`/primitives/${name}/stop.json`)).statusCode).to.equal(200);
  } catch (err) {
    problems.push(`the primitive ${name}: ${(err as Error).message}`);
  } finally {
    await twin.close();
  }
}

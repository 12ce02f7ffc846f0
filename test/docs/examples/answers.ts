/**
 * Examples that show answers. A JSON block parses; one that says which request it answers (`json answer="GET /x"`,
 * with `status=404` for an error) is compared with the live answer and validated against that route's OpenAPI
 * schema; one that says it is a request's body (`json body="POST /x"`) is validated and sent. A console block's
 * `$ npm run scenario ...` is run and every output line it shows must be in the real output, its figures aside.
 */
import { spawn } from 'node:child_process';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { CodeBlock } from './markdown.ts';
import { type Page, ROOT } from './page.ts';
import { words } from './shell.ts';

/** Why `expected` is not part of `actual` (objects: their keys; arrays: element by element), or '' when it is. */
export function subset(expected: unknown, actual: unknown, where = ''): string {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return `${where || 'the answer'} differs`;
    for (const [i, e] of expected.entries()) {
      const why = subset(e, actual[i], `${where}[${i}]`);
      if (why) return why;
    }
    return '';
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return `${where || 'the answer'} is not an object`;
    for (const [k, v] of Object.entries(expected)) {
      const why = subset(v, (actual as Record<string, unknown>)[k], `${where}.${k}`);
      if (why) return why;
    }
    return '';
  }
  return Object.is(expected, actual) ? '' : `${where || 'the answer'} is ${JSON.stringify(actual)}`;
}

type Operation = {
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
};
const ajv = new Ajv2020({ strict: false, validateFormats: false });

/** The OpenAPI operation of a concrete request (`GET /motors/m1/goto.json` -> `/motors/{motor}/goto.json`). */
function operation(doc: { paths: Record<string, Record<string, Operation>> }, method: string, url: string) {
  const bare = url.split('?')[0]!;
  const matches = Object.keys(doc.paths).filter((p) =>
    new RegExp(`^${p.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`).test(bare),
  );
  // The most literal template wins (/motors/goto.json over /motors/{motor}.json).
  matches.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return matches.length ? doc.paths[matches[0]!]![method.toLowerCase()] : undefined;
}

function schemaProblem(schema: object | undefined, value: unknown, what: string): string | undefined {
  if (!schema) return `${what}: the OpenAPI document has no JSON schema for it`;
  const valid = ajv.compile(schema);
  return valid(value)
    ? undefined
    : `${what} does not fit its OpenAPI schema: ${ajv.errorsText(valid.errors)}`;
}

export async function checkJson(block: CodeBlock, page: Page, problems: string[]): Promise<void> {
  let value: unknown;
  try {
    value = JSON.parse(block.code);
  } catch (err) {
    return void problems.push(`not JSON: ${(err as Error).message}`);
  }
  const answer = block.attrs.get('answer');
  const body = block.attrs.get('body');
  if (block.noRun !== undefined || (!answer && !body)) return;
  const [method = '', url = ''] = (answer ?? body)!.split(' ');
  const { twin } = await page.server();
  const doc = (await twin.get('/openapi.json')).json() as {
    paths: Record<string, Record<string, Operation>>;
  };
  const op = operation(doc, method, url);
  if (!op) return void problems.push(`${method} ${url} is not a route of the OpenAPI document`);
  const sent = twin.app.inject({
    method: method as 'GET' | 'POST',
    url,
    ...(body ? { headers: { 'content-type': 'application/json' }, payload: block.code } : {}),
  });
  const res = await twin.untilAnswered(sent);
  if (answer) {
    const status = Number(block.attrs.get('status') ?? 200);
    if (res.statusCode !== status)
      problems.push(`${answer} answered ${res.statusCode}, not ${status}: ${res.body}`);
    const why = subset(value, res.json());
    if (why) problems.push(`${answer} answered ${res.body}: ${why}`);
    const responses = op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`];
    const p = schemaProblem(responses?.content?.['application/json']?.schema, value, `the ${status} answer`);
    if (p) problems.push(p);
  } else {
    const p = schemaProblem(op.requestBody?.content['application/json']?.schema, value, 'the body');
    if (p) problems.push(p);
    if (res.statusCode >= 300) problems.push(`${body} answered ${res.statusCode}: ${res.body}`);
  }
}

/** A shown output line as a pattern: its figures match any figure, its spaces any run of spaces. */
function linePattern(shown: string): RegExp {
  let text = shown.trim();
  // A line cut short with "..." (the table's last column) matches any line it starts.
  const cut = text.endsWith('...');
  if (cut) text = text.replace(/\S*\.\.\.$/, '');
  const source = text
    .replace(/-{3,}/g, '\uE000')
    .split(/(-?\d+(?:\.\d+)?)/)
    .map((part, i) =>
      i % 2 ? '-?\\d+(?:\\.\\d+)?' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+'),
    )
    .join('')
    .replace(/\uE000/g, '-+'); // a rule of dashes, as wide as the table
  return new RegExp(`^${source}${cut ? '' : '$'}`);
}

export async function checkConsole(
  block: CodeBlock,
  scripts: Readonly<Record<string, string>>,
  problems: string[],
): Promise<void> {
  const sessions = block.code.split(/^(?=\$ )/m).filter((s) => s.startsWith('$ '));
  for (const session of sessions) {
    const [command = '', ...shown] = session.split('\n');
    const w = words(command.slice(2));
    if (block.noRun !== undefined) continue;
    if (w[0] !== 'npm' || w[1] !== 'run' || !w[2] || !(w[2] in scripts)) {
      problems.push(`\`${command}\`: the examples test runs npm scripts only: mark the block no-run: <why>`);
      continue;
    }
    // The script's own program (`tsx src/x.ts` -> node --import tsx src/x.ts), with the arguments after --.
    const program = scripts[w[2]]!.split(' ').find((x) => /\.[cm]?[jt]s$/.test(x))!;
    const args = w[3] === '--' ? w.slice(4) : w.slice(3);
    const output = await runNode([program, ...args]);
    const lines = output.split('\n').map((l) => l.trim());
    for (const line of shown) {
      if (!line.trim() || line.trim() === '...') continue;
      const pattern = linePattern(line);
      if (!lines.some((l) => pattern.test(l)))
        problems.push(`\`${command}\` did not print (figures aside): ${line.trim()}\nit printed:\n${output}`);
    }
  }
}

/** `node --import tsx <args>` in the repository: its standard output and error. */
async function runNode(args: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise((resolve) => child.on('close', resolve));
  return out;
}

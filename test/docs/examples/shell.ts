/**
 * Shell examples as commands: lines joined at a trailing backslash, comments split off (a comment that is JSON is
 * the answer the command is shown to give), `&&` and a trailing `&` split, words unquoted as sh does. Each command
 * is of a kind the examples test knows how to run, or a kind it only checks.
 */

export interface Command {
  /** Line in the block (1-based). */
  readonly line: number;
  readonly text: string;
  readonly words: readonly string[];
  /** The JSON the comment beside or below it shows, when it shows one. */
  expected?: unknown;
}

export type Kind = 'curl' | 'sleep' | 'server' | 'file' | 'cli' | 'other';

/** Splits `text` at `#` comments outside quotes: [command, comment]. */
function splitComment(text: string): [string, string] {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = '';
      else if (c === '\\' && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '\\') i++;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return [text.slice(0, i), text.slice(i + 1)];
  }
  return [text, ''];
}

/** sh's word splitting and quote removal (no expansion: `$HOME` stays as written). */
export function words(text: string): string[] {
  const out: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (word !== undefined) out.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unclosed ' in: ${text}`);
      word = (word ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let s = '';
      for (i++; i < text.length && text[i] !== '"'; i++) {
        if (text[i] === '\\' && /["\\$`]/.test(text[i + 1] ?? '')) i++;
        s += text[i];
      }
      if (i >= text.length) throw new Error(`unclosed " in: ${text}`);
      word = (word ?? '') + s;
    } else if (c === '\\') {
      word = (word ?? '') + (text[++i] ?? '');
    } else word = (word ?? '') + c;
  }
  if (word !== undefined) out.push(word);
  return out;
}

/** A JSON value at the start of `text` (the rest is prose), or undefined when it does not start with one. */
export function leadingJson(text: string): unknown {
  const t = text.trim();
  if (!/^[{[]/.test(t)) return undefined;
  let depth = 0;
  let quote = false;
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === '"') quote = false;
    } else if (c === '"') quote = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (--depth === 0) return JSON.parse(t.slice(0, i + 1)) as unknown;
    }
  }
  throw new Error(`unbalanced JSON in the comment: ${t}`);
}

/** The commands of a shell block, with the answers their comments show. */
export function commands(code: string): Command[] {
  const out: Command[] = [];
  const lines = code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = lines[i]!;
    while (text.endsWith('\\') && i + 1 < lines.length) text = text.slice(0, -1) + ' ' + lines[++i]!;
    const [command, comment] = splitComment(text);
    const expected = leadingJson(comment);
    if (!command.trim()) {
      // A comment line showing JSON is the answer of the command above it.
      if (expected !== undefined && out.length) out[out.length - 1]!.expected = expected;
      continue;
    }
    const parts = command.split(/\s&&\s/);
    parts.forEach((part, n) => {
      const body = part.trim().replace(/\s&$/, '');
      out.push({
        line: start + 1,
        text: body,
        words: words(body),
        ...(n === parts.length - 1 && expected !== undefined ? { expected } : {}),
      });
    });
  }
  return out;
}

/** The npm scripts and programs whose flags are checked against their `--help`. */
export const CLIS = ['start', 'emulator', 'scenario', 'deploy', 'detect', 'calibrate'] as const;
export type Cli = (typeof CLIS)[number];

/** What a command is, and for a CLI, which one and its arguments. */
export function kindOf(w: readonly string[]): { kind: Kind; cli?: Cli; args: readonly string[] } {
  const [first = '', second = '', third = ''] = w;
  const afterDashes = (from: number) => (w[from] === '--' ? w.slice(from + 1) : w.slice(from));
  if (first === 'curl') return { kind: 'curl', args: w.slice(1) };
  if (first === 'sleep') return { kind: 'sleep', args: w.slice(1) };
  if (['mkdir', 'cp', 'mv', 'rm', 'ls', 'cat', 'touch'].includes(first))
    return { kind: 'file', args: w.slice(1) };
  if (first === 'npm' && second === 'start') return { kind: 'server', cli: 'start', args: afterDashes(2) };
  if (first === 'npx' && second === 'poppy-twin') return { kind: 'server', cli: 'start', args: w.slice(2) };
  if (first === 'node' && second === 'dist/main.js')
    return { kind: 'server', cli: 'start', args: w.slice(2) };
  if (first === 'node' && second === '--import' && third === 'tsx' && w[3] === 'src/main.ts')
    return { kind: 'server', cli: 'start', args: w.slice(4) };
  if (first === 'npm' && second === 'run' && (CLIS as readonly string[]).includes(third))
    return { kind: 'cli', cli: third as Cli, args: afterDashes(3) };
  return { kind: 'other', args: w.slice(1) };
}

/** `--robot=torso`, `--robot torso` and `--allow-missing-motors` as [flag, value] pairs, given the flags that take one. */
export function flagsOf(
  args: readonly string[],
  takesValue: (flag: string) => boolean,
): [string, string | true][] {
  const out: [string, string | true][] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    if (eq > 0) out.push([a.slice(0, eq), a.slice(eq + 1)]);
    else if (takesValue(a) && i + 1 < args.length) out.push([a, args[++i]!]);
    else out.push([a, true]);
  }
  return out;
}

/** The options a commander `--help` lists: flag -> whether it takes a value. */
export function helpFlags(help: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const m of help.matchAll(/^\s+(?:-\w, )?(--[\w-]+)( <[^>]+>| \[[^\]]+\])?/gm))
    flags.set(m[1]!, !!m[2]);
  return flags;
}

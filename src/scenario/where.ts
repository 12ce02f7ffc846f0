/**
 * Where in a scenario file something happened: the scenario's own frame of a stack (tsx maps it to the .ts line),
 * so an error, a bad argument or a time limit names the file and line a user wrote.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Site {
  /** Relative to the working directory when inside it. */
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** This package's src/: frames there are the API's, not the scenario's. */
const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const FRAME = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;

interface Frame {
  readonly fn: string | undefined;
  readonly abs: string;
  readonly line: number;
  readonly column: number;
}

function frames(stack: string | undefined): Frame[] {
  const out: Frame[] = [];
  for (const text of (stack ?? '').split('\n')) {
    const m = FRAME.exec(text);
    if (!m) continue;
    let abs = m[2]!;
    if (abs.startsWith('file://')) abs = fileURLToPath(abs);
    if (!path.isAbsolute(abs)) continue; // node:internal, <anonymous>, evalmachine
    out.push({ fn: m[1], abs, line: Number(m[3]), column: Number(m[4]) });
  }
  return out;
}

const isUser = (f: Frame): boolean =>
  !f.abs.startsWith(SRC + path.sep) && !f.abs.split(path.sep).includes('node_modules');

const shown = (abs: string): string => {
  const rel = path.relative(process.cwd(), abs);
  return rel.startsWith('..') || path.isAbsolute(rel) ? abs : rel;
};

/** The frame of `scenarioFile` (absolute) in a stack, else the first frame outside the API and node_modules. */
export function siteOf(stack: string | undefined, scenarioFile?: string): Site | undefined {
  const all = frames(stack);
  const f = all.find((x) => x.abs === scenarioFile) ?? all.find(isUser);
  return f && { file: shown(f.abs), line: f.line, column: f.column };
}

export const siteText = (s: Site): string => `${s.file}:${s.line}`;

/** The stack's frames in the user's code (API, node_modules and node internals dropped), paths made relative. */
export function userStack(stack: string | undefined): string | undefined {
  const lines = frames(stack)
    .filter(isUser)
    .map((f) => `at ${f.fn ? `${f.fn} ` : ''}(${shown(f.abs)}:${f.line}:${f.column})`);
  return lines.length ? lines.join('\n') : undefined;
}

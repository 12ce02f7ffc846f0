/**
 * Custom primitives: the operator's modules in a folder, imported at start-up. A file that cannot be used (syntax
 * error, throws while loading, wrong export, invalid declarations, name taken) is reported with the reason and
 * skipped; the others load.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { primitiveLibrary } from './api.ts';
import { validatePrimitive } from './members.ts';
import { Primitive, type PrimitiveContext } from './primitive.ts';

export interface LoadProblem {
  readonly file: string;
  readonly reason: string;
}

const EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'];
/** A module whose top level never settles must not stall the server's start (wall clock: this is I/O). */
const IMPORT_TIMEOUT_MS = 10_000;

export function isModuleFile(file: string): boolean {
  if (file.startsWith('.') || /\.d\.m?ts$/.test(file)) return false;
  return EXTENSIONS.includes(path.extname(file));
}

/** The module files of a primitives folder (absolute paths, sorted), or why the folder cannot be read. */
export async function listModules(dir: string): Promise<{ files: string[]; problem?: LoadProblem }> {
  try {
    const dirents = await readdir(dir, { withFileTypes: true });
    const files = dirents
      .filter((d) => d.isFile() && isModuleFile(d.name))
      .map((d) => path.resolve(dir, d.name))
      .sort();
    return { files };
  } catch (err) {
    return {
      files: [],
      problem: { file: dir, reason: `cannot read the primitives folder: ${(err as Error).message}` },
    };
  }
}

export async function loadCustomPrimitives(
  dir: string,
  ctx: PrimitiveContext,
  taken: (name: string) => boolean,
): Promise<{ primitives: Primitive[]; problems: LoadProblem[] }> {
  const primitives: Primitive[] = [];
  const problems: LoadProblem[] = [];
  const { files, problem } = await listModules(dir);
  if (problem) problems.push(problem);
  const names = new Set<string>();
  for (const file of files) {
    try {
      const p = await loadPrimitiveModule(file, ctx);
      if (taken(p.name) || names.has(p.name)) throw new Error(`a primitive named "${p.name}" already exists`);
      names.add(p.name);
      primitives.push(p);
    } catch (err) {
      problems.push({ file, reason: reason(err) });
    }
  }
  return { primitives, problems };
}

/** Imports one module and builds its primitive with `ctx` (throws the reason it cannot be used). */
export async function loadPrimitiveModule(file: string, ctx: PrimitiveContext): Promise<Primitive> {
  const mod = (await withTimeout(import(pathToFileURL(file).href), IMPORT_TIMEOUT_MS, 'loading')) as {
    default?: unknown;
  };
  const exported = mod.default;
  let p: unknown;
  if (typeof exported === 'function' && exported.prototype instanceof Primitive) {
    p = new (exported as new (ctx: PrimitiveContext) => Primitive)(ctx);
  } else if (typeof exported === 'function') {
    p = await withTimeout(
      Promise.resolve(
        (exported as (c: PrimitiveContext, l: typeof primitiveLibrary) => unknown)(ctx, primitiveLibrary),
      ),
      IMPORT_TIMEOUT_MS,
      'the factory',
    );
  } else {
    throw new Error(
      exported === undefined
        ? 'no default export: export default a factory (ctx, lib) => Primitive, or a Primitive subclass'
        : `the default export is a ${typeof exported}, not a factory or a Primitive subclass`,
    );
  }
  if (!(p instanceof Primitive))
    throw new Error(
      `the factory returned ${p === null ? 'null' : typeof p}, not a Primitive (build it with lib.Primitive)`,
    );
  if (p.context.host !== ctx.host)
    throw new Error('the primitive was not built with the context it was given');
  const invalid = validatePrimitive(p);
  if (invalid) throw new Error(invalid);
  return p;
}

export function reason(err: unknown): string {
  const text =
    err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  const firstLines = text
    .split('\n')
    .filter((l) => l.trim())
    .slice(0, 3)
    .join(' | ');
  return firstLines.length > 400 ? `${firstLines.slice(0, 397)}...` : firstLines;
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

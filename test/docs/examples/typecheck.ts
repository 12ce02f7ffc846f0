/**
 * TypeScript examples type-checked as the repository's own code is (its tsconfig.json), all in one program. A block
 * is written where it says it lives (`file=scenarios/x.scenario.ts`: its relative imports resolve from there), under
 * a scratch folder of the repository. A block with `mirrors=<module>` declares types that must be exactly that
 * module's types of the same names.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';
import type { CodeBlock } from './markdown.ts';
import { ROOT } from './page.ts';

/** Where a block's example file is written, and what it was written from. */
export interface ExampleFile {
  readonly block: CodeBlock;
  readonly path: string;
}

/** Relative import specifiers, rewritten so that they point where they would from `declared`. */
export function rehome(code: string, declared: string, written: string): string {
  return code.replace(
    /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\2/g,
    (_all, lead: string, quote: string, spec: string) => {
      const target = path.resolve(path.dirname(declared), spec);
      let rel = path.relative(path.dirname(written), target);
      if (!rel.startsWith('.')) rel = `./${rel}`;
      return `${lead}${quote}${rel}${quote}`;
    },
  );
}

/** Top-level interface and type alias names a block declares. */
export function declaredTypes(code: string): string[] {
  return [...code.matchAll(/^(?:export\s+)?(?:interface|type)\s+(\w+)/gm)].map((m) => m[1]!);
}

const CHECKS_MARK = '// --- the examples test: each type above is exactly its module type ---';

/** Writes a program block under `dir`; a TypeScript block's mirrored types get their equality checks appended. */
export async function writeExample(block: CodeBlock, dir: string, n: number): Promise<ExampleFile> {
  const js = !['ts', 'typescript'].includes(block.lang);
  const declaredAs = block.attrs.get('file') ?? `example-${n}.${js ? 'mjs' : 'ts'}`;
  const written = path.join(dir, `b${n}`, declaredAs);
  let code = rehome(block.code, path.join(ROOT, declaredAs), written);
  const mirrors = block.attrs.get('mirrors');
  if (mirrors) {
    const names = declaredTypes(block.code);
    const module = JSON.stringify(path.relative(path.dirname(written), path.join(ROOT, mirrors)));
    code += [
      '',
      CHECKS_MARK,
      `import type { ${names.map((t) => `${t} as __Real_${t}`).join(', ')} } from ${module};`,
      'type __Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;',
      'type __Same<T extends true> = T;',
      ...names.map((t) => `export type __Check_${t} = __Same<__Equal<${t}, __Real_${t}>>; // ${t}`),
      '',
    ].join('\n');
  }
  await mkdir(path.dirname(written), { recursive: true });
  await writeFile(written, code);
  return { block, path: written };
}

/** Type errors per example file, each naming the line in the Markdown page. */
export function typeCheck(files: readonly ExampleFile[]): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  // The repository's own declaration files (WebAssembly's types, untyped packages) come along, as in `tsc`.
  const declarations = config.fileNames.filter((f) => f.endsWith('.d.ts'));
  const program = ts.createProgram([...files.map((f) => f.path), ...declarations], {
    ...config.options,
    noEmit: true,
  });
  const problems = new Map<string, string[]>(files.map((f) => [f.path, []]));
  const byPath = new Map(files.map((f) => [path.resolve(f.path), f]));
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const example = d.file && byPath.get(path.resolve(d.file.fileName));
    if (!example || !d.file) {
      // An error outside the examples (in src/) fails the first example: it would fail `npm run typecheck` too.
      problems.get(files[0]!.path)?.push(`${d.file?.fileName ?? ''}: ${text}`);
      continue;
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    const source = d.file.text.split('\n')[line] ?? '';
    const blockLines = example.block.code.split('\n').length;
    const check = /\/\/ (\w+)$/.exec(source);
    problems
      .get(example.path)!
      .push(
        line >= blockLines && check
          ? `${check[1]} is not the ${check[1]} of ${example.block.attrs.get('mirrors')}: ${text.split('\n')[0]}`
          : `line ${example.block.line + 1 + line}: ${text}`,
      );
  }
  return problems;
}

/**
 * The code blocks of a Markdown page: fenced ones with their info string (the language, then `no-run: <why>` or
 * `key=value` attributes), and indented ones, which say nothing of what they are and so are reported as unmarked.
 */

export interface CodeBlock {
  /** The page, relative to the repository. */
  readonly file: string;
  /** Line of the opening fence (1-based). */
  readonly line: number;
  /** The info string's first word, lower case ('' when there is none). */
  readonly lang: string;
  /** `key=value` words of the info string (`file=scenarios/x.scenario.ts`, `mirrors=src/...`). */
  readonly attrs: ReadonlyMap<string, string>;
  /** Why the block cannot run, when its info string says `no-run: <why>` ('' for a bare `no-run`). */
  readonly noRun: string | undefined;
  readonly code: string;
  /** An indented code block (four spaces), not fenced. */
  readonly indented: boolean;
}

/** `sh no-run: needs a robot` -> lang sh, noRun 'needs a robot'; `ts file=a.ts` -> attrs {file: a.ts}. */
export function parseInfo(info: string): Pick<CodeBlock, 'lang' | 'attrs' | 'noRun'> {
  const text = info.trim();
  const lang = (/^[^\s]*/.exec(text)?.[0] ?? '').toLowerCase();
  let rest = text.slice(lang.length).trim();
  let noRun: string | undefined;
  const at = rest.search(/(^|\s)no-run\b/);
  if (at >= 0) {
    noRun = rest
      .slice(at)
      .replace(/^\s*no-run:?/, '')
      .trim();
    rest = rest.slice(0, at);
  }
  const attrs = new Map<string, string>();
  for (const m of rest.matchAll(/([\w-]+)=(?:"([^"]*)"|(\S+))/g)) attrs.set(m[1]!, m[2] ?? m[3]!);
  return { lang, attrs, noRun };
}

const LIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s/;

export function codeBlocks(text: string, file: string): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  let lastText = ''; // the last non-blank line outside code, to tell an indented block from a list's continuation
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^(\s*)(`{3,}|~{3,})(.*)$/.exec(line);
    if (fence) {
      const [, indent, marks, info] = fence;
      const close = new RegExp(`^\\s*${marks![0] === '`' ? '`' : '~'}{${marks!.length},}\\s*$`);
      let end = i + 1;
      while (end < lines.length && !close.test(lines[end]!)) end++;
      const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent!) ? l.slice(indent!.length) : l));
      blocks.push({ file, line: i + 1, ...parseInfo(info!), code: body.join('\n'), indented: false });
      i = end;
      lastText = '';
      continue;
    }
    const previousBlank = i > 0 && lines[i - 1]!.trim() === '';
    const inList = LIST_ITEM.test(lastText) || /^\s{2,}\S/.test(lastText);
    if (/^ {4,}\S/.test(line) && previousBlank && !inList && lastText !== '') {
      let end = i;
      while (end < lines.length && (/^ {4}/.test(lines[end]!) || lines[end]!.trim() === '')) end++;
      const body = lines.slice(i, end).map((l) => l.slice(4));
      blocks.push({
        file,
        line: i + 1,
        lang: '',
        attrs: new Map(),
        noRun: undefined,
        code: body.join('\n').trimEnd(),
        indented: true,
      });
      i = end - 1;
      continue;
    }
    if (line.trim() !== '') lastText = line;
  }
  return blocks;
}

/**
 * A unit's values read as systemd reads them, for the tests that run what a unit runs: a key's value, an
 * EnvironmentFile's variables, and ExecStart's words (systemd.service(5) "Command lines": double quotes with C
 * escapes, `%%` and `$$` for themselves, `$VAR` split at blanks, `${VAR}` one word).
 */

/** The values of `key` in a unit's text, in order. */
export function unitValues(text: string, key: string): string[] {
  return [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!);
}

/** KEY=VALUE lines of an environment file (comments and blank lines skipped, one pair of quotes taken off). */
export function envFileVars(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    vars[m[1]!] = m[2]!.trim().replace(/^"(.*)"$/, '$1');
  }
  return vars;
}

/** The words of a command line with `env` substituted. */
export function commandWords(line: string, env: Record<string, string | undefined>): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (i >= line.length) break;
    // An unquoted $VAR on its own: its value's words.
    const split = /^\$([A-Za-z_][A-Za-z0-9_]*)(?=\s|$)/.exec(line.slice(i));
    if (split) {
      words.push(...(env[split[1]!] ?? '').split(/\s+/).filter(Boolean));
      i += split[0].length;
      continue;
    }
    let word = '';
    let quoted = false;
    for (; i < line.length && (quoted || !/\s/.test(line[i]!)); i++) {
      const c = line[i]!;
      const next = line[i + 1];
      if (c === '"') quoted = !quoted;
      else if (c === '\\' && quoted && next !== undefined) {
        word += next === 'n' ? '\n' : next;
        i++;
      } else if ((c === '%' || c === '$') && next === c) {
        word += c;
        i++;
      } else if (c === '$' && next === '{') {
        const end = line.indexOf('}', i);
        word += env[line.slice(i + 2, end)] ?? '';
        i = end;
      } else if (c === '%')
        throw new Error(`a specifier this reader does not expand: ${line.slice(i, i + 2)}`);
      else word += c;
    }
    if (quoted) throw new Error(`unbalanced quotes: ${line}`);
    words.push(word);
  }
  return words;
}

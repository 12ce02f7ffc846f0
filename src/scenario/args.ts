/** The scenario API's calls as a user wrote them, for steps and messages; and the error of a wrong argument. */

/** A scenario called the API wrongly: the scenario stops here, with this message. */
export class ScenarioArgumentError extends Error {
  override readonly name = 'ScenarioArgumentError';
}

/** A value as a user would write it, clipped: `"m4"`, `20`, `{"m7":20}`, `undefined`, `a function`. */
export function show(v: unknown, max = 60): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length <= max ? s : `${s.slice(0, max - 3)}...`;
}

/** A call as the scenario wrote it, e.g. `t.hand("m4", 20, 1)`. */
export function callText(name: string, args: readonly unknown[]): string {
  let n = args.length;
  while (n > 0 && args[n - 1] === undefined) n--;
  return `${name}(${args
    .slice(0, n)
    .map((a) => show(a, 80))
    .join(', ')})`;
}

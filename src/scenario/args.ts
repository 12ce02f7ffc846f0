/**
 * Run-time checks of the scenario API's arguments: scenario files run untyped, so a wrong type or an unknown name
 * gets one message naming the call, the argument, what was given and what is allowed. The runner adds the file
 * and line (src/scenario/where.ts).
 */

/** A scenario called the API wrongly: the scenario stops here, with this message. */
export class ScenarioArgumentError extends Error {
  override readonly name = 'ScenarioArgumentError';
  /** The call it came from and a trace taken there (set by the step that made the call). */
  call?: { readonly label: string; readonly trace: Error };
}

/**
 * Whether `err` is one of this API's errors by its name: a scenario file and the runner may load two copies of
 * these modules (CommonJS and ESM under tsx), and `instanceof` would tell them apart.
 */
export function isNamed<T extends Error>(err: unknown, name: string): err is T {
  return err instanceof Error && err.name === name;
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

/** `"2" (a string)`: the value and, when it is not the expected kind, its kind. */
function given(v: unknown): string {
  const kind = v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`;
  return v === undefined || v === null ? show(v) : `${show(v)} (${kind})`;
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

export class Args {
  readonly call: string;

  constructor(name: string, args: readonly unknown[]) {
    this.call = callText(name, args);
  }

  fail(message: string): never {
    throw new ScenarioArgumentError(`${this.call}: ${message}`);
  }

  /** A finite number, at least `min` (or above `above`). */
  number(arg: string, v: unknown, bounds: { min?: number; above?: number } = {}, unit = ''): number {
    const want =
      bounds.above !== undefined
        ? `a number${unit} > ${bounds.above}`
        : bounds.min !== undefined
          ? `a number${unit} >= ${bounds.min}`
          : `a finite number${unit}`;
    if (
      typeof v !== 'number' ||
      !Number.isFinite(v) ||
      (bounds.min !== undefined && v < bounds.min) ||
      (bounds.above !== undefined && v <= bounds.above)
    )
      this.fail(`${arg} is ${given(v)}; give ${want}`);
    return v;
  }

  optionalNumber(arg: string, v: unknown, bounds: { min?: number; above?: number } = {}, unit = '') {
    return v === undefined ? undefined : this.number(arg, v, bounds, unit);
  }

  string(arg: string, v: unknown, example: string): string {
    if (typeof v !== 'string' || v === '')
      this.fail(`${arg} is ${given(v)}; give a non-empty string, e.g. ${example}`);
    return v;
  }

  /** One of `allowed` (e.g. the robot's motors); `what` names them: "ergo-jr's motors". */
  oneOf<T extends string>(arg: string, v: unknown, allowed: readonly T[], what: string): T {
    if (typeof v !== 'string' || !allowed.includes(v as T))
      this.fail(
        `${arg} is ${typeof v === 'string' ? show(v) : given(v)}, not one of ${what}: ${allowed.length ? allowed.join(', ') : '(none)'}`,
      );
    return v as T;
  }

  /** Three finite numbers [x, y, z]. */
  triple(arg: string, v: unknown, unit: string): [number, number, number] {
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
      this.fail(`${arg} is ${given(v)}; give 3 numbers [x, y, z] in ${unit}`);
    return v as [number, number, number];
  }

  /** A plain object (options), or undefined. */
  options(arg: string, v: unknown): void {
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v)))
      this.fail(`${arg} is ${given(v)}; give an object of options, or nothing`);
  }

  func(arg: string, v: unknown, example: string): void {
    if (typeof v !== 'function') this.fail(`${arg} is ${given(v)}; give a function, e.g. ${example}`);
  }
}

/**
 * `t.hand`'s two forms: (motor, degrees, seconds) or ({motor: degrees, ...}, seconds). Names checked against
 * `motors`; the positions as a map.
 */
export function handArgs(
  a: Args,
  args: readonly unknown[],
  motors: readonly string[],
  robot: string,
): { targets: Map<string, number>; duration: number } {
  const what = `${robot}'s motors`;
  if (typeof args[0] === 'string') {
    const motor = a.oneOf('motor', args[0], motors, what);
    const deg = a.number('degrees', args[1], {}, ' (user degrees)');
    return { targets: new Map([[motor, deg]]), duration: a.number('seconds', args[2], { above: 0 }) };
  }
  const t = args[0];
  if (typeof t !== 'object' || t === null || Array.isArray(t))
    a.fail(
      `the first argument is ${given(t)}; give a motor and its position, t.hand("m1", 40, 1.5), or several, t.hand({m1: 40, m4: -30}, 1.5)`,
    );
  const targets = new Map<string, number>();
  for (const [name, deg] of Object.entries(t)) {
    targets.set(
      a.oneOf('motor', name, motors, what),
      a.number(`the position of ${name}`, deg, {}, ' (user degrees)'),
    );
  }
  if (!targets.size) a.fail(`no motor given; give {motor: degrees}, e.g. {${motors[0] ?? 'm1'}: 40}`);
  if (args.length > 2 && args[2] !== undefined)
    a.fail(
      `with {motor: degrees} the seconds come second: t.hand({m1: 40}, 1.5); three arguments are t.hand("m1", 40, 1.5)`,
    );
  return { targets, duration: a.number('seconds', args[1], { above: 0 }) };
}

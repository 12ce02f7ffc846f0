/**
 * A primitive's REST members: the properties and methods it declares (never found by reflection), the checks of
 * what it declares, and the binding of REST arguments to a method's parameters.
 */
import { badRequest, RobotError } from '../core/errors.ts';
import { describe } from '../core/values.ts';
import { coerceValue, VALUE_TYPES, type ValueType } from './coercion.ts';
import type { PrimitiveLifecycle } from './lifecycle.ts';

export interface PropertySpec {
  name: string;
  type: ValueType;
  /** A POST answers 403. */
  readOnly?: boolean;
  /** May return a promise (an isolated primitive's properties live in its worker). */
  get(): unknown;
  /** Called with a value already checked (and coerced) against `type`; may throw a RobotError (badRequest) to refuse it. */
  set?(value: unknown): unknown;
}

export interface ParamSpec {
  name: string;
  type: ValueType;
  optional?: boolean;
}

export interface MethodSpec {
  name: string;
  params: ParamSpec[];
  /** Receives the arguments in declaration order, checked against their types (undefined for omitted optional ones). */
  call(args: unknown[]): unknown | Promise<unknown>;
}

/** What a primitive declares to REST. */
export interface DeclaresMembers {
  readonly name: string;
  properties(): PropertySpec[];
  methods(): MethodSpec[];
}

/** Arguments of a method call: by name (a JSON object body) or by position (an array, one value, nothing). */
export type MethodArgs =
  { readonly named: Readonly<Record<string, unknown>> } | { readonly positional: readonly unknown[] };

const LIFECYCLE = ['start', 'stop', 'pause', 'resume'] as const;
export const LIFECYCLE_METHODS: readonly string[] = LIFECYCLE;

/** The lifecycle methods of `p` (start, stop, pause, resume), whatever its methods() override returns. */
export function builtinMethods(p: PrimitiveLifecycle): MethodSpec[] {
  return [
    { name: 'start', params: [], call: () => p.start().then(() => null) },
    { name: 'stop', params: [], call: () => p.stop().then(() => null) },
    { name: 'pause', params: [], call: () => (p.pause(), null) },
    { name: 'resume', params: [], call: () => (p.resume(), null) },
  ];
}

const PRIMITIVE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const MEMBER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Checks what a primitive declares (name, properties, methods); returns the first problem or undefined. Names
 * starting with "_" are the records' (`_<move>_recorder`, `_<move>_player`), so custom ones may not use them.
 */
export function validatePrimitive(
  p: DeclaresMembers,
  opts: { allowUnderscore?: boolean } = {},
): string | undefined {
  const nameRe = opts.allowUnderscore ? /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,80}$/ : PRIMITIVE_NAME;
  if (typeof p.name !== 'string' || !nameRe.test(p.name))
    return `invalid primitive name ${describe(p.name)}: letters, digits, "_" and "-", starting with a letter`;
  let props: unknown;
  let methods: unknown;
  try {
    props = p.properties();
    methods = p.methods();
  } catch (err) {
    return `properties() or methods() threw: ${(err as Error).message}`;
  }
  if (!Array.isArray(props)) return 'properties() must return an array';
  if (!Array.isArray(methods)) return 'methods() must return an array';
  const seen = new Set<string>();
  for (const s of props as PropertySpec[]) {
    if (!s || typeof s.name !== 'string' || !MEMBER_NAME.test(s.name))
      return `invalid property name ${describe(s?.name)}`;
    if (seen.has(s.name)) return `property "${s.name}" is declared twice`;
    seen.add(s.name);
    if (!VALUE_TYPES.includes(s.type))
      return `property "${s.name}" has type ${describe(s.type)}; use one of ${VALUE_TYPES.join(', ')}`;
    if (typeof s.get !== 'function') return `property "${s.name}" has no get()`;
    if (!s.readOnly && typeof s.set !== 'function')
      return `property "${s.name}" has no set(): declare it readOnly or give it a set()`;
  }
  seen.clear();
  for (const m of methods as MethodSpec[]) {
    if (!m || typeof m.name !== 'string' || !MEMBER_NAME.test(m.name))
      return `invalid method name ${describe(m?.name)}`;
    if (seen.has(m.name)) return `method "${m.name}" is declared twice`;
    seen.add(m.name);
    if (typeof m.call !== 'function') return `method "${m.name}" has no call()`;
    if (!Array.isArray(m.params)) return `method "${m.name}" has no params list`;
    const params = new Set<string>();
    let optional = false;
    for (const a of m.params) {
      if (!a || typeof a.name !== 'string' || !MEMBER_NAME.test(a.name))
        return `method "${m.name}": invalid parameter name ${describe(a?.name)}`;
      if (params.has(a.name)) return `method "${m.name}": parameter "${a.name}" is declared twice`;
      params.add(a.name);
      if (!VALUE_TYPES.includes(a.type))
        return `method "${m.name}": parameter "${a.name}" has type ${describe(a.type)}`;
      if (optional && !a.optional)
        return `method "${m.name}": required parameter "${a.name}" comes after an optional one`;
      optional ||= !!a.optional;
    }
  }
  return undefined;
}

export function bindArguments(primitive: string, spec: MethodSpec, args: MethodArgs): unknown[] {
  const signature = `${spec.name}(${spec.params.map((a) => `${a.name}${a.optional ? '?' : ''}: ${a.type}`).join(', ')})`;
  const tip = spec.params.length
    ? `send the arguments as an object {${spec.params.map((a) => `"${a.name}": ...`).join(', ')}} or an array`
    : 'send no body (this method takes no arguments)';
  const raw: unknown[] = [];
  if ('named' in args) {
    for (const key of Object.keys(args.named)) {
      if (!spec.params.some((a) => a.name === key))
        throw badRequest(`${primitive}:${spec.name} has no parameter "${key}"`, tip, signature);
    }
    for (const a of spec.params) raw.push(args.named[a.name]);
  } else {
    if (args.positional.length > spec.params.length)
      throw badRequest(
        `${primitive}:${spec.name} takes ${spec.params.length ? `at most ${spec.params.length}` : 'no'} argument${spec.params.length === 1 ? '' : 's'}`,
        tip,
        `got ${args.positional.length}; ${signature}`,
      );
    raw.push(...args.positional);
  }
  return spec.params.map((a, i) => {
    const v = raw[i];
    if (v === undefined || v === null) {
      if (a.optional) return undefined;
      throw badRequest(`${primitive}:${spec.name} needs the argument "${a.name}"`, tip, signature);
    }
    return coerceValue(a.type, v, `argument "${a.name}"`);
  });
}

/** Runs primitive code: RobotErrors keep their status; anything else becomes `code` with its message. */
export async function guardAsync<T>(
  fn: () => T | Promise<T>,
  message: string,
  code: 'bad_request' | 'internal' = 'internal',
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asRobotError(err, message, code);
  }
}

function asRobotError(err: unknown, message: string, code: 'bad_request' | 'internal'): RobotError {
  if (err instanceof RobotError) return err;
  const details = err instanceof Error ? err.message : String(err);
  return new RobotError(code, message, "check the primitive's documentation", details.slice(0, 200));
}

/** What JSON can carry: undefined becomes null, non-finite numbers null. */
export function jsonValue(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'number' && !Number.isFinite(v)) return null;
  return v;
}

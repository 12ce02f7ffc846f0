/**
 * The plain path of a body check: an object body whose every field has the commonest form (a JSON number for a
 * lenient number, any `wait`) is checked by a few comparisons instead of zod's parse, and gives the value zod would
 * give; every other body (a decimal string, a missing field, an error to explain) goes through zod. Under load zod's
 * parse of a goto's body cost 4.5 us of a 31 us request (docs/decisions/0054-plain-body-check.md).
 * test/http/plain-check.test.ts compares both on thousands of bodies.
 */
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { $ZodType } from 'zod/v4/core';

/** What a field's plain check says when the value is not of its plain form: zod decides. */
export const NOT_PLAIN: unique symbol = Symbol('not plain');

/** A field's plain check: the value zod gives for `value`, or NOT_PLAIN when it might give anything else. */
export type PlainCheck = (value: unknown) => unknown;

/** The zod internals read here: a schema's definition, and the schema it was cloned from (by .meta()). */
interface ZodInternals {
  readonly _zod: {
    readonly def: {
      readonly type: string;
      readonly shape?: Readonly<Record<string, z.ZodType>>;
      readonly catchall?: unknown;
      readonly checks?: readonly unknown[];
    };
    readonly parent?: ZodInternals;
  };
}

const checks = new WeakMap<object, PlainCheck>();

/** Registers the plain check of `schema` (and of its clones with the same definition, as .meta() makes). */
export function withPlainCheck<T extends z.ZodType>(schema: T, check: PlainCheck): T {
  checks.set(schema, check);
  return schema;
}

/** The plain check of a field: its own, or its parent's when it is a clone of the same definition. */
function plainCheckOf(schema: ZodInternals): PlainCheck | undefined {
  for (let s: ZodInternals | undefined = schema; s; s = s._zod.parent) {
    const check = checks.get(s);
    if (check) return check;
    // A clone with checks or a refinement of its own has another definition: its parent's check would skip them.
    if (s._zod.parent && s._zod.parent._zod.def !== s._zod.def) return undefined;
  }
  return undefined;
}

/**
 * The plain check of an object schema (zod's default: unknown keys dropped, no refinement of the whole), when every
 * field has one; undefined otherwise. Its answer has the schema's keys in order, as zod's has.
 */
export function plainObjectCheck(schema: z.ZodType): PlainCheck | undefined {
  const def = (schema as unknown as Partial<ZodInternals>)._zod?.def;
  if (!def) return undefined; // not a zod schema: its own validator alone
  if (def.type !== 'object' || !def.shape || def.catchall !== undefined || def.checks?.length)
    return undefined;
  const fields: [string, PlainCheck][] = [];
  for (const [key, field] of Object.entries(def.shape)) {
    const check = plainCheckOf(field as unknown as ZodInternals);
    if (!check) return undefined;
    fields.push([key, check]);
  }
  return (value) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return NOT_PLAIN;
    const out: Record<string, unknown> = {};
    for (const [key, check] of fields) {
      const checked = check((value as Record<string, unknown>)[key]);
      // zod leaves an optional key out when it is absent and its value undefined: let zod say which.
      if (checked === NOT_PLAIN || checked === undefined) return NOT_PLAIN;
      out[key] = checked;
    }
    return out;
  };
}

/** A validator in fastify's form: the checked value, or the error. */
export type Validator = (value: unknown) => {
  value?: unknown;
  error?: Error | FastifySchemaValidationError[];
};

/** `validate` with the plain path of `schema` in front, when it has one. */
export function withPlainPath(schema: z.ZodType, validate: Validator): Validator {
  const plain = plainObjectCheck(schema);
  if (!plain) return validate;
  return (value) => {
    const checked = plain(value);
    return checked === NOT_PLAIN ? validate(value) : { value: checked };
  };
}

/** fastify-type-provider-zod's validator compiler with the plain path in front of body checks (the app's). */
export const bodyValidatorCompiler: FastifySchemaCompiler<$ZodType> = (route) => {
  const validate = validatorCompiler(route);
  return route.httpPart === 'body'
    ? withPlainPath(route.schema as unknown as z.ZodType, validate as Validator)
    : validate;
};

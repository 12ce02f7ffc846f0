/**
 * The zod pieces the routes declare their inputs and answers with (one choice, used everywhere). They keep the
 * lenient rules of docs/reference/contract.md 1 and 2: numbers also as decimal strings, `wait` true only for true/"true"/"True"/1/"1",
 * positions as "x,y,z" strings or arrays. Each schema documents itself in the OpenAPI document (input side).
 */
import { z } from 'zod';
import { DECIMAL, MAX_DURATION, parseWait } from '../core/values.ts';
import { badRequest } from '../core/errors.ts';
import { NOT_PLAIN, withPlainCheck } from './plain-check.ts';

/** A finite number: a JSON number or a decimal numeric string ("12.5"; never "0x10"). Plain: a JSON number. */
export const lenientNumber = withPlainCheck(
  z
    .union([z.number(), z.string().regex(DECIMAL).transform(Number)], {
      error: 'must be a number (a decimal numeric string works too)',
    })
    .pipe(z.number({ error: 'must be a finite number' }))
    .meta({ description: 'a number, or a decimal numeric string', examples: [30] }),
  (v) => (typeof v === 'number' && Number.isFinite(v) ? v : NOT_PLAIN),
);

/** A duration in seconds, > 0 and at most MAX_DURATION. Plain: a JSON number within those bounds. */
export const duration = withPlainCheck(
  lenientNumber
    .pipe(
      z
        .number()
        .gt(0, { error: `must be greater than 0 (seconds)` })
        .max(MAX_DURATION, { error: `must be at most ${MAX_DURATION} seconds` }),
    )
    .meta({ description: `seconds, > 0 and <= ${MAX_DURATION}`, examples: [1.5] }),
  (v) => (typeof v === 'number' && v > 0 && v <= MAX_DURATION ? v : NOT_PLAIN),
);

/** `wait`: true only for true, "true", "True", 1, "1"; anything else (or nothing) is false. Always plain. */
export const wait = withPlainCheck(
  z
    .unknown()
    .optional()
    .transform(parseWait)
    .meta({
      description:
        'wait for the end of the motion before answering: true, "true", "True", 1 or "1"; default false',
      examples: [true],
    }),
  parseWait,
);

/** Three numbers as "x,y,z" or [x, y, z]. */
export const triple = z
  .union([z.string().transform((s) => s.split(',')), z.array(z.unknown())], {
    error: 'must be 3 numbers: "x,y,z" or [x, y, z]',
  })
  .pipe(z.array(lenientNumber).length(3, { error: 'must be 3 numbers: "x,y,z" or [x, y, z]' }))
  .meta({ description: '"x,y,z" or [x, y, z]', examples: ['0.1,-0.15,0.12'] });

/** A bare value body (register and property writes): the route's domain checks its type. */
export const anyValue = z.unknown().meta({
  description: 'the new value as JSON (number, boolean, string or array); form field "value" works too',
});

/** The error body of every failure (docs/reference/contract.md 1). */
export const errorBody = z
  .object({
    error: z.string().meta({ description: 'what went wrong, one sentence' }),
    tip: z.string().meta({ description: 'how to get it right' }),
    details: z.string().meta({ description: 'the cause (short; never a stack trace)' }),
  })
  .meta({
    examples: [
      {
        error: 'motor "m9" does not exist',
        tip: 'GET /motors/list.json lists the motors',
        details: 'robot ergo-jr',
      },
    ],
  });

/** `{<key>: string}` answers such as `{"m1": "started"}`. */
export const nameToWord = z.record(z.string(), z.string());

/** A register value as the API shows it. */
export const registerValue = z.union([
  z.number(),
  z.boolean(),
  z.string(),
  z.null(),
  z.array(z.union([z.number(), z.array(z.number())])),
  z.array(z.string()).meta({ description: 'the "registers" register: register names' }),
]);

/**
 * `?force=true|false` of the moves the guard checks (absent: false); anything else is a 400. Checked with or without
 * the guard, so that a client's typo never passes for a forced move.
 */
export function forceQuery(query: Readonly<Record<string, string>>): boolean {
  const v = query.force;
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw badRequest(`force=${v} is not a boolean`, 'give ?force=true (skip the guard) or ?force=false');
}

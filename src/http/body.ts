/**
 * Request bodies, read as docs/reference/contract.md 1 says: JSON first whatever the Content-Type; else form fields whose
 * values are read as JSON where they parse; else plain text. Bodies nested deeper than MAX_DEPTH are refused
 * (400) before anything walks them, and form fields live in an object without a prototype, so a field named
 * `__proto__` is only a field.
 */
import { RobotError, badRequest } from '../core/errors.ts';
import { describe } from '../core/values.ts';

export type Body =
  | { readonly kind: 'none' }
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'form'; readonly fields: Record<string, unknown> }
  | { readonly kind: 'text'; readonly text: string };

export const NO_BODY: Body = { kind: 'none' };

/** Deepest nesting of arrays and objects accepted in a body; no request of this API needs more than 3. */
export const MAX_DEPTH = 32;

const DEPTH_TIP = `no field of this API nests more than 3 levels; bodies are limited to ${MAX_DEPTH}`;

export function parseBody(text: string, contentType: string | undefined): Body {
  if (text.trim() === '') return NO_BODY;
  let value: unknown;
  let isJson = true;
  try {
    value = JSON.parse(text);
  } catch {
    isJson = false;
  }
  if (isJson) {
    // Each level takes two brackets: a short body cannot nest too deep (most bodies are short).
    if (text.length > 2 * MAX_DEPTH) checkDepth(value);
    return { kind: 'json', value };
  }
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const fields = Object.create(null) as Record<string, unknown>;
    for (const [k, v] of new URLSearchParams(text)) {
      const field = jsonOrString(v);
      checkDepth(field);
      fields[k] = field;
    }
    return { kind: 'form', fields };
  }
  return { kind: 'text', text };
}

/** Walks a parsed JSON value without recursion; 400 when it nests deeper than MAX_DEPTH. */
function checkDepth(root: unknown): void {
  if (root === null || typeof root !== 'object') return;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > MAX_DEPTH)
      throw badRequest(
        `the body is nested more than ${MAX_DEPTH} levels deep`,
        DEPTH_TIP,
        'arrays or objects nested too deep',
      );
    for (const child of Object.values(v as object))
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
}

function jsonOrString(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** A body that is one bare value (register writes, property writes). */
export function bareValue(body: Body, tip: string): unknown {
  switch (body.kind) {
    case 'json':
      return body.value;
    case 'form': {
      if (Object.hasOwn(body.fields, 'value')) return body.fields.value;
      const keys = Object.keys(body.fields);
      if (keys.length === 1 && body.fields[keys[0]!] === '') return jsonOrString(keys[0]!);
      throw badRequest(
        'the body must be the new value',
        tip,
        `form fields ${describe(keys.join(', '))} but no "value"`,
      );
    }
    case 'text':
      return body.text.trim();
    case 'none':
      throw badRequest('the body is empty: it must be the new value', tip);
  }
}

/** A body that is an object of fields; an empty body is {}. */
export function objectBody(body: Body, tip: string): Record<string, unknown> {
  switch (body.kind) {
    case 'none':
      return {};
    case 'form':
      return body.fields;
    case 'json':
      if (body.value !== null && typeof body.value === 'object' && !Array.isArray(body.value))
        return body.value as Record<string, unknown>;
      throw badRequest('the body must be a JSON object', tip, `got ${describe(body.value)}`);
    case 'text':
      throw badRequest('the body is not JSON', tip, `got ${describe(body.text)}`);
  }
}

/** A GET's body (rpy.json): fastify reads none, so it is read here, within `limit` bytes. */
export async function readGetBody(
  stream: NodeJS.ReadableStream,
  contentType: string | undefined,
  limit: number,
): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    // Past the limit the rest is read and dropped (the request timeout bounds it): leaving the loop would destroy the
    // request stream, and the 413 could never be sent on the socket.
    if (size <= limit) chunks.push(buf);
  }
  if (size > limit)
    throw new RobotError('too_large', 'the request body is too large', `keep it under ${limit} bytes`);
  return parseBody(Buffer.concat(chunks).toString('utf8'), contentType);
}

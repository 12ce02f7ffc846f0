/**
 * Request bodies, read as CONTRACT.md 1 says: JSON first whatever the Content-Type; else form fields whose
 * values are read as JSON where they parse; else plain text.
 */
import { badRequest } from '../core/errors.ts';
import { describe } from '../core/values.ts';

export type Body =
  | { readonly kind: 'none' }
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'form'; readonly fields: Record<string, unknown> }
  | { readonly kind: 'text'; readonly text: string };

export const NO_BODY: Body = { kind: 'none' };

export function parseBody(text: string, contentType: string | undefined): Body {
  if (text.trim() === '') return NO_BODY;
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    // not JSON: fall through
  }
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const fields: Record<string, unknown> = {};
    for (const [k, v] of new URLSearchParams(text)) fields[k] = jsonOrString(v);
    return { kind: 'form', fields };
  }
  return { kind: 'text', text };
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
      if ('value' in body.fields) return body.fields.value;
      const keys = Object.keys(body.fields);
      if (keys.length === 1 && body.fields[keys[0]!] === '') return jsonOrString(keys[0]!);
      throw badRequest(
        'the body must be the new value',
        tip,
        `form fields ${keys.join(', ')} but no "value"`,
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

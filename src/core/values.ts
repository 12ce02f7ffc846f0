/** Parsing of loosely typed request values (JSON, form fields) with clear 400 errors. */
import { badRequest } from './errors.ts';

/**
 * A number written in decimal, as JSON writes numbers (an optional sign, digits, a fraction, an exponent), with
 * blanks around it. `Number()` alone would also read "0x10", "0b1", "Infinity" and "" (as 0).
 */
export const DECIMAL = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** Longest goto, IK goto and hand drag accepted, in seconds (an hour): beyond it a request is surely a mistake. */
export const MAX_DURATION = 3600;

export function parseBoolean(value: unknown, what: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value === 'string') {
    const v = value.trim().toLowerCase();
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0') return false;
  }
  throw badRequest(
    `${what} must be a boolean`,
    'send true or false (also "true"/"false", 1/0)',
    `got ${describe(value)}`,
  );
}

export function parseNumber(value: unknown, what: string): number {
  let n: number | undefined;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && DECIMAL.test(value)) n = Number(value);
  if (n === undefined || !Number.isFinite(n))
    throw badRequest(
      `${what} must be a finite number`,
      'send a JSON number such as 12.5 (a decimal numeric string works too)',
      `got ${describe(value)}`,
    );
  return n;
}

export function parseNumberArray(value: unknown, length: number, what: string): number[] {
  let v = value;
  if (typeof v === 'string') v = v.split(',').map((s) => s.trim());
  if (!Array.isArray(v) || v.length !== length)
    throw badRequest(
      `${what} must be an array of ${length} numbers`,
      `send for example [${Array.from({ length }, (_, i) => i + 1).join(', ')}]`,
      `got ${describe(value)}`,
    );
  return v.map((x, i) => parseNumber(x, `${what}[${i}]`));
}

export function parseIntegerArray(
  value: unknown,
  length: number,
  min: number,
  max: number,
  what: string,
): number[] {
  const nums = parseNumberArray(value, length, what);
  nums.forEach((n, i) => {
    if (!Number.isInteger(n) || n < min || n > max)
      throw badRequest(
        `${what}[${i}] must be an integer from ${min} to ${max}`,
        `send ${length} integers in ${min}..${max}`,
        `got ${n}`,
      );
  });
  return nums;
}

/** `wait` of the goto bodies: true only for true, "true", "True", 1, "1" (docs/reference/contract.md 2). */
export function parseWait(value: unknown): boolean {
  return value === true || value === 1 || value === 'true' || value === 'True' || value === '1';
}

/**
 * A short text showing a value in an error's details. Never throws: a value nested too deep for JSON.stringify
 * (a 5,000-level array) or with a cycle is described by its kind instead of being walked again.
 */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? kindOf(value);
  } catch {
    text = kindOf(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function kindOf(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (value !== null && typeof value === 'object') return 'an object';
  return typeof value === 'symbol' || typeof value === 'function' ? typeof value : String(value);
}

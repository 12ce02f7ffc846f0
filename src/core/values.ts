/** Parsing of loosely typed request values (JSON, form fields) with clear 400 errors. */
import { badRequest } from './errors.ts';

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
  else if (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value)))
    n = Number(value);
  if (n === undefined || !Number.isFinite(n))
    throw badRequest(
      `${what} must be a finite number`,
      'send a JSON number such as 12.5 (a numeric string works too)',
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

/** `wait` of the goto bodies: true only for true, "true", "True", 1, "1" (CONTRACT.md 2). */
export function parseWait(value: unknown): boolean {
  return value === true || value === 1 || value === 'true' || value === 'True' || value === '1';
}

/** A positive duration in seconds. */
export function parseDuration(value: unknown, what = 'duration'): number {
  if (value === undefined || value === null)
    throw badRequest(`${what} is missing`, 'send a duration in seconds, for example "duration": 1.5');
  const d = parseNumber(value, what);
  if (d <= 0)
    throw badRequest(
      `${what} must be greater than 0`,
      'send a duration in seconds, for example "duration": 1.5',
      `got ${d}`,
    );
  return d;
}

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

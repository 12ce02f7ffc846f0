/**
 * `expect`-style helpers for a scenario's own checks. A failed expectation does not throw: it adds a finding with
 * the value, the limit and the margin, so one check can report every motor that is off, not only the first.
 */
import { type CheckResult, type Finding, at, checkResult, fmt } from './result.ts';

export interface Where {
  /** Seconds into the run the value belongs to. */
  readonly time?: number;
  readonly unit?: string;
}

export interface Expectation {
  /** value <= limit */
  toBeAtMost(limit: number, where?: Where): void;
  /** value >= limit */
  toBeAtLeast(limit: number, where?: Where): void;
  /** |value - target| <= tolerance */
  toBeCloseTo(target: number, tolerance: number, where?: Where): void;
  toBe(expected: unknown): void;
  toBeTruthy(): void;
}

/** Collects the findings and figures of one named check. */
export class CheckRecorder {
  readonly name: string;
  readonly #findings: Finding[] = [];
  readonly #measured: Record<string, number> = {};
  #count = 0;

  constructor(name: string) {
    this.name = name;
  }

  /** `what` names the motor, link or quantity, e.g. "m2 tracking error". */
  expect(value: number | unknown, what: string): Expectation {
    this.#count++;
    const num = typeof value === 'number' ? value : NaN;
    const bound = (limit: number, over: number, relation: (unit: string) => string, w: Where = {}) => {
      if (!Number.isFinite(num)) {
        this.fail({
          message: `${at(w.time)}${what} is ${String(value)}, not a finite number`,
          where: what,
          time: w.time,
        });
        return;
      }
      if (over <= 0) return;
      const unit = w.unit ? ` ${w.unit}` : '';
      this.fail({
        message: `${at(w.time)}${what} is ${fmt(num)}${unit}, ${relation(unit)}, over by ${fmt(over)}${unit}`,
        where: what,
        time: w.time,
        value: num,
        limit,
        margin: over,
        unit: w.unit,
      });
    };
    return {
      toBeAtMost: (limit, w) => bound(limit, num - limit, (u) => `above the limit ${fmt(limit)}${u}`, w),
      toBeAtLeast: (limit, w) => bound(limit, limit - num, (u) => `below the minimum ${fmt(limit)}${u}`, w),
      toBeCloseTo: (target, tolerance, w) =>
        bound(
          tolerance,
          Math.abs(num - target) - tolerance,
          (u) =>
            `${fmt(Math.abs(num - target))}${u} from ${fmt(target)}${u} (tolerance ${fmt(tolerance)}${u})`,
          w,
        ),
      toBe: (expected) => {
        if (!Object.is(value, expected))
          this.fail({
            message: `${what} is ${JSON.stringify(value)}, expected ${JSON.stringify(expected)}`,
            where: what,
          });
      },
      toBeTruthy: () => {
        if (!value)
          this.fail({ message: `${what} is ${JSON.stringify(value)}, expected a true value`, where: what });
      },
    };
  }

  /** A figure to report (and compare between runs). */
  measure(key: string, value: number): void {
    this.#measured[key] = value;
  }

  fail(finding: Finding): void {
    this.#findings.push(finding);
  }

  result(summary?: string): CheckResult {
    const n = this.#findings.length;
    return checkResult(
      this.name,
      summary ?? (n ? `${n} of ${this.#count} expectation(s) failed` : `${this.#count} expectation(s) met`),
      this.#findings,
      this.#measured,
    );
  }
}

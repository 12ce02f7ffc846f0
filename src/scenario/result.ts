/**
 * What a scenario reports: named checks, each with what it measured and, when it fails, findings that name the
 * time, the motor or link, the value, the limit and the margin. Plain data: it crosses process boundaries as JSON.
 */
import path from 'node:path';

export type CheckStatus = 'pass' | 'fail' | 'error' | 'skipped';

/** One thing wrong, located. `margin` is how far past the limit the value went (same unit), always > 0. */
export interface Finding {
  readonly message: string;
  /** Seconds into the move, replay or run. */
  readonly time?: number;
  /** Motor, link or link pair, IK target... */
  readonly where?: string;
  readonly value?: number;
  readonly limit?: number;
  readonly margin?: number;
  readonly unit?: string;
}

export interface CheckResult {
  readonly name: string;
  readonly status: CheckStatus;
  /** One line: what was checked and the worst case seen, also when it passes. */
  readonly summary: string;
  /** Why it failed (capped; `omitted` says how many more there were). */
  readonly findings: readonly Finding[];
  readonly omitted?: number;
  /** Figures of the check, rounded so that two runs compare equal when the physics did. */
  readonly measured: Readonly<Record<string, number>>;
}

export interface ScenarioResult {
  /** Path of the scenario file, relative to where the runner was started. */
  readonly file: string;
  readonly name: string;
  readonly robot: string;
  /** 'twin' or the URL of the server it ran against. */
  readonly target: string;
  readonly status: CheckStatus;
  readonly checks: readonly CheckResult[];
  /**
   * Why the scenario stopped (load error, error thrown outside a check, bad argument, time limit), led by the
   * scenario's file and line when known: "scenarios/x.scenario.ts:12: ...".
   */
  readonly error?: string;
  /** The error's class: TimeLimitError, ScenarioArgumentError, Error, TypeError... */
  readonly errorType?: string;
  /** Where the scenario was when it stopped. */
  readonly location?: { readonly file: string; readonly line: number; readonly column: number };
  /** The step it was in or had last begun: a check or an API call with its arguments. */
  readonly step?: string;
  /** The frames of the user's code, for an error it threw. */
  readonly stack?: string;
  /** Seconds of the target's time the scenario used (sim time on the twin). */
  readonly simSeconds?: number;
  /** The limits it ran under. */
  readonly timeLimit?: { readonly simSeconds: number; readonly wallSeconds: number };
  /** Wall seconds (not part of the deterministic figures). */
  readonly wallSeconds: number;
}

/** Findings kept per check; a move 10 s long through a limit would otherwise list 500 frames. */
export const MAX_FINDINGS = 20;

/** 6 significant digits: enough to read, and stable across runs of the same deterministic physics. */
export function round(value: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  return Number(value.toPrecision(6));
}

/** Worst status first: error > fail > pass > skipped (a scenario with only skipped checks is skipped). */
export function worstStatus(statuses: readonly CheckStatus[]): CheckStatus {
  for (const s of ['error', 'fail', 'pass'] as const) if (statuses.includes(s)) return s;
  return 'skipped';
}

/** Builds a check result from findings: pass when there are none. */
export function checkResult(
  name: string,
  summary: string,
  findings: readonly Finding[],
  measured: Record<string, number> = {},
): CheckResult {
  const rounded = Object.fromEntries(Object.entries(measured).map(([k, v]) => [k, round(v)]));
  return {
    name,
    status: findings.length ? 'fail' : 'pass',
    summary,
    findings: findings.slice(0, MAX_FINDINGS),
    ...(findings.length > MAX_FINDINGS ? { omitted: findings.length - MAX_FINDINGS } : {}),
    measured: rounded,
  };
}

export function skippedCheck(name: string, reason: string): CheckResult {
  return { name, status: 'skipped', summary: reason, findings: [], measured: {} };
}

/** Number formatting for messages: 2 decimals, no "-0.00". */
export function fmt(value: number, digits = 2): string {
  const s = value.toFixed(digits);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

export function at(time: number | undefined): string {
  return time === undefined ? '' : `at t=${fmt(time)} s: `;
}

/** The result of a scenario file that could not run (did not load, or its process died). */
export function jobError(
  job: { readonly file: string; readonly robot?: string; readonly url?: string },
  why:
    string | (Pick<ScenarioResult, 'errorType' | 'location' | 'step' | 'stack'> & { readonly error: string }),
  wallMs = 0,
): ScenarioResult {
  return {
    file: job.file,
    name: path.basename(job.file),
    robot: job.robot ?? '?',
    target: job.url ?? 'twin',
    status: 'error',
    checks: [],
    ...(typeof why === 'string' ? { error: why } : why),
    wallSeconds: Math.round(wallMs / 10) / 100,
  };
}

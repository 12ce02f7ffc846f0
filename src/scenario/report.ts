/** The runner's outputs: a summary table for people, a JSON report, and JUnit XML for CI systems. */
import os from 'node:os';
import type { CheckResult, CheckStatus, ScenarioResult } from './result.ts';

export interface RunSummary {
  readonly scenarios: number;
  readonly checks: number;
  readonly passed: number;
  readonly failed: number;
  readonly errors: number;
  readonly skipped: number;
  /** True when every check passed (skipped ones aside) and no scenario errored. */
  readonly ok: boolean;
}

export function summarize(results: readonly ScenarioResult[]): RunSummary {
  const checks = results.flatMap((r) => r.checks);
  const count = (s: CheckStatus) => checks.filter((c) => c.status === s).length;
  const errors = count('error') + results.filter((r) => r.error).length;
  const failed = count('fail');
  return {
    scenarios: results.length,
    checks: checks.length,
    passed: count('pass'),
    failed,
    errors,
    skipped: count('skipped'),
    ok: results.length > 0 && failed === 0 && errors === 0,
  };
}

export function jsonReport(results: readonly ScenarioResult[]): string {
  return `${JSON.stringify({ format: 'poppy-twin-scenarios/1', summary: summarize(results), scenarios: results }, null, 2)}\n`;
}

const MARK: Record<CheckStatus, string> = { pass: 'pass', fail: 'FAIL', error: 'ERROR', skipped: 'skip' };

/** A fixed-width table: scenario, robot, check, result, what it measured (or the first failure). */
export function summaryTable(results: readonly ScenarioResult[], width = 140): string {
  const rows: string[][] = [['Scenario', 'Robot', 'Check', 'Result', 'Detail']];
  for (const r of results) {
    if (r.error) rows.push([r.name, r.robot, '(scenario)', MARK.error, r.error]);
    for (const c of r.checks) rows.push([r.name, r.robot, c.name, MARK[c.status], detail(c)]);
  }
  const widths = [0, 1, 2, 3].map((i) => Math.min(36, Math.max(...rows.map((row) => row[i]!.length))));
  const used = widths.reduce((a, w) => a + w + 2, 0);
  const lines = rows.map((row) =>
    [
      ...row.slice(0, 4).map((cell, i) => clip(cell, widths[i]!).padEnd(widths[i]!)),
      clip(row[4]!, Math.max(20, width - used)),
    ].join('  '),
  );
  lines.splice(1, 0, '-'.repeat(Math.min(width, used + Math.max(...rows.map((r) => r[4]!.length)))));
  const s = summarize(results);
  lines.push(
    '',
    `${s.scenarios} scenario(s), ${s.checks} check(s): ${s.passed} passed, ${s.failed} failed, ${s.errors} error(s), ${s.skipped} skipped`,
  );
  return lines.join('\n');
}

function detail(c: CheckResult): string {
  if (c.status === 'fail') return c.findings[0]?.message ?? c.summary;
  return c.summary;
}

function clip(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, Math.max(0, n - 3))}...`;
}

/** Every finding of every failed check, in full (the table clips them). */
export function failureList(results: readonly ScenarioResult[]): string {
  const out: string[] = [];
  for (const r of results) {
    if (r.error) {
      out.push(`${r.name} [${r.robot}] (${r.file}): ERROR ${r.error}`);
      if (r.step && !r.error.includes(r.step)) out.push(`  - last step: ${r.step}`);
      for (const line of r.stack?.split('\n') ?? []) out.push(`  ${line}`);
    }
    for (const c of r.checks) {
      if (c.status !== 'fail' && c.status !== 'error') continue;
      out.push(
        `${r.name} [${r.robot}] ${c.name}: ${c.status === 'error' ? `ERROR ${c.summary}` : c.summary}`,
      );
      for (const f of c.findings) out.push(`  - ${f.message}`);
      if (c.omitted) out.push(`  - ... and ${c.omitted} more`);
    }
  }
  return out.join('\n');
}

/** A stopped scenario in full: the error, the step it was in, the stack of the user's code. */
function errorText(r: ScenarioResult): string {
  return [
    r.error,
    ...(r.step ? [`step: ${r.step}`] : []),
    ...(r.location ? [`at ${r.location.file}:${r.location.line}:${r.location.column}`] : []),
    ...(r.stack ? [r.stack] : []),
  ].join('\n');
}

/** Characters XML 1.0 cannot carry at all (control characters but tab, newline, return; lone surrogates). */
function xmlAllowed(ch: string): boolean {
  const c = ch.codePointAt(0)!;
  return (
    c === 0x9 ||
    c === 0xa ||
    c === 0xd ||
    (c >= 0x20 && c <= 0xd7ff) ||
    (c >= 0xe000 && c <= 0xfffd) ||
    c > 0xffff
  );
}

const xml = (s: string): string =>
  [...s]
    .filter(xmlAllowed)
    .join('')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');

/**
 * JUnit XML as the Apache Ant schema (JUnit.xsd) requires it: <testsuites> of one <testsuite> per scenario (name,
 * tests, failures, errors, time, timestamp, hostname, id, package; <properties>, <system-out>, <system-err>), one
 * <testcase> per check (name, classname, time) with a <failure> or <error> (message, type). Skipped checks use
 * <skipped> and a `skipped` count, as Jenkins' junit-10.xsd and the Surefire schema add to Ant's.
 */
export function junitReport(results: readonly ScenarioResult[], timestamp = new Date()): string {
  const stamp = timestamp.toISOString().slice(0, 19);
  const host = xml(os.hostname() || 'localhost');
  const s = summarize(results);
  const total = results.reduce((a, r) => a + r.wallSeconds, 0);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="scenarios" tests="${s.checks + results.filter((r) => r.error).length}" failures="${s.failed}" errors="${s.errors}" skipped="${s.skipped}" time="${total.toFixed(3)}">`,
  ];
  results.forEach((r, id) => {
    const checks = r.checks;
    const n = (st: CheckStatus) => checks.filter((c) => c.status === st).length;
    const classname = xml(`${r.file.replace(/\.[cm]?[jt]s$/, '').replace(/[\\/]/g, '.')}.${r.robot}`);
    const errors = n('error') + (r.error ? 1 : 0);
    lines.push(
      `  <testsuite name="${xml(`${r.name} [${r.robot}]`)}" tests="${checks.length + (r.error ? 1 : 0)}" failures="${n('fail')}" errors="${errors}" skipped="${n('skipped')}" time="${r.wallSeconds.toFixed(3)}" timestamp="${stamp}" hostname="${host}" id="${id}" package="${xml(r.file)}">`,
      '    <properties>',
      `      <property name="robot" value="${xml(r.robot)}"/>`,
      `      <property name="target" value="${xml(r.target)}"/>`,
      '    </properties>',
    );
    for (const c of checks) {
      lines.push(`    <testcase name="${xml(c.name)}" classname="${classname}" time="0">`);
      if (c.status === 'fail') {
        const text = [
          c.summary,
          ...c.findings.map((f) => f.message),
          ...(c.omitted ? [`... and ${c.omitted} more`] : []),
        ];
        lines.push(
          `      <failure message="${xml(c.findings[0]?.message ?? c.summary)}" type="CheckFailed">${xml(text.join('\n'))}</failure>`,
        );
      } else if (c.status === 'error') {
        lines.push(`      <error message="${xml(c.summary)}" type="CheckError">${xml(c.summary)}</error>`);
      } else if (c.status === 'skipped') {
        lines.push(`      <skipped message="${xml(c.summary)}"/>`);
      }
      lines.push('    </testcase>');
    }
    if (r.error) {
      lines.push(
        `    <testcase name="scenario" classname="${classname}" time="${r.wallSeconds.toFixed(3)}">`,
        `      <error message="${xml(r.error)}" type="${xml(r.errorType ?? 'ScenarioError')}">${xml(errorText(r))}</error>`,
        '    </testcase>',
      );
    }
    lines.push(
      `    <system-out>${xml(`${r.name} on ${r.target}: ${r.status}`)}</system-out>`,
      '    <system-err></system-err>',
      '  </testsuite>',
    );
  });
  lines.push('</testsuites>', '');
  return lines.join('\n');
}

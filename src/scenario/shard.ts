/**
 * Splitting a suite for a CI matrix or an indexed Job: `--shard=<i>/<n>` runs the i-th of n disjoint parts, by
 * round-robin over the sorted scenario files (the same parts on every machine), and the parts' JSON reports merge
 * back into the report of the whole.
 */
import { jsonReport } from './report.ts';
import type { ScenarioResult } from './result.ts';

export interface Shard {
  /** 1-based. */
  readonly index: number;
  readonly count: number;
}

/** `"2/4"` -> {index: 2, count: 4}; throws a one-line Error for anything else (a usage error). */
export function parseShard(value: string): Shard {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(value);
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || count < 1 || index < 1 || index > count)
    throw new Error(`--shard must be <i>/<n> with 1 <= i <= n (e.g. 1/4), not "${value}"`);
  return { index, count };
}

/** The files of part `shard`: every n-th of the sorted files from the i-th. */
export function shardFiles(files: readonly string[], shard: Shard): string[] {
  return [...files].sort().filter((_, k) => k % shard.count === shard.index - 1);
}

/** The results of several parts as one run of the whole: ordered by file, as the runner orders them. */
export function mergeResults(parts: readonly (readonly ScenarioResult[])[]): ScenarioResult[] {
  return parts.flat().sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/** JSON reports (`--json`) of the parts as the report of the whole. */
export function mergeJsonReports(texts: readonly string[]): string {
  const parts = texts.map((text, i) => {
    const report = JSON.parse(text) as { format?: string; scenarios?: ScenarioResult[] };
    if (report.format !== 'poppy-twin-scenarios/1' || !Array.isArray(report.scenarios))
      throw new Error(`report ${i + 1} is not a poppy-twin-scenarios/1 JSON report`);
    return report.scenarios;
  });
  return jsonReport(mergeResults(parts));
}

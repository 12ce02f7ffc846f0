/**
 * npm run scenario -- <files or folders> [--robot <name>] [--url <server>] [--json out.json] [--junit out.xml]
 *   [--shard <i>/<n>] [--sim-limit <s>] [--wall-limit <s>]; or --merge <part reports...> --json <whole.json>
 *   (the parts' JSON reports as one).
 * Exit code 0 only when every check of every scenario passes; 1 when one fails; 2 for bad usage.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Command } from 'commander';
import { DEFAULT_TIME_LIMIT, type TimeLimit } from './limits.ts';
import { failureList, jsonReport, junitReport, summarize, summaryTable } from './report.ts';
import { findScenarios, runScenarios } from './runner.ts';
import { type Shard, mergeJsonReports, parseShard, shardFiles } from './shard.ts';

const program = new Command()
  .name('npm run scenario --')
  .description('Run scenario scripts on the twin (or a server by URL) and report their checks')
  .argument('[paths...]', 'scenario files, or folders searched for *.scenario.ts', ['scenarios'])
  .option('--robot <name>', 'run on this robot (the scenario must support it)')
  .option('--url <url>', 'run against a running server instead of the twin (scenarios with runsOn: "any")')
  .option('--json <file>', 'write the JSON report here')
  .option('--junit <file>', 'write JUnit XML here')
  .option('--jobs <n>', 'scenarios run at once (default: the number of cores)', (v) => Number.parseInt(v, 10))
  .option('--shard <i/n>', 'run only the i-th of n disjoint parts of the suite (CI matrix, indexed Job)')
  .option(
    '--sim-limit <s>',
    `sim seconds a scenario may use, unless it sets its own timeLimit (default ${DEFAULT_TIME_LIMIT.simSeconds})`,
  )
  .option(
    '--wall-limit <s>',
    `real seconds a scenario may take, unless it sets its own timeLimit (default ${DEFAULT_TIME_LIMIT.wallSeconds})`,
  )
  .option('--merge', "the paths are parts' JSON reports: write them as one report (--json) and exit")
  .showHelpAfterError();

program.parse();
const opts = program.opts<{
  robot?: string;
  url?: string;
  json?: string;
  junit?: string;
  jobs?: number;
  shard?: string;
  merge?: boolean;
  simLimit?: string;
  wallLimit?: string;
}>();
/** A flag's seconds: a number > 0. */
const seconds = (flag: string, v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`${flag} takes seconds, a number > 0, not "${v}"`);
  return n;
};
let shard: Shard | undefined;
let timeLimit: TimeLimit | undefined;
try {
  shard = opts.shard === undefined ? undefined : parseShard(opts.shard);
  timeLimit = {
    simSeconds: seconds('--sim-limit', opts.simLimit),
    wallSeconds: seconds('--wall-limit', opts.wallLimit),
  };
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  process.exit(2);
}
if (opts.merge) {
  const inputs = program.processedArgs[0] as string[];
  try {
    const merged = mergeJsonReports(await Promise.all(inputs.map((p) => readFile(p, 'utf8'))));
    if (opts.json) await writeFile(opts.json, merged);
    else process.stdout.write(merged);
    process.exit(0);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
}

let files: string[];
try {
  files = await findScenarios(program.processedArgs[0] as string[]);
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
if (!files.length) {
  console.error('no scenario files found (a folder is searched for *.scenario.ts)');
  process.exit(2);
}
if (shard) {
  files = shardFiles(files, shard);
  console.log(`shard ${shard.index}/${shard.count}: ${files.length} scenario file(s)`);
}
const started = performance.now();
const results = await runScenarios(files, { robot: opts.robot, url: opts.url, jobs: opts.jobs, timeLimit });
console.log(`\n${summaryTable(results, process.stdout.columns ?? 200)}`);
const failures = failureList(results);
if (failures) console.log(`\nFailures:\n${failures}`);
console.log(`\n${((performance.now() - started) / 1000).toFixed(1)} s`);
if (opts.json) await writeFile(opts.json, jsonReport(results));
if (opts.junit) await writeFile(opts.junit, junitReport(results));
process.exit(summarize(results).ok ? 0 : 1);

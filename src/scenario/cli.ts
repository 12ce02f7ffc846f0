/**
 * npm run scenario -- <files or folders> [--robot <name>] [--url <server>] [--json out.json] [--junit out.xml]
 * Exit code 0 only when every check of every scenario passes; 1 when one fails; 2 for bad usage.
 */
import { writeFile } from 'node:fs/promises';
import { Command } from 'commander';
import { failureList, jsonReport, junitReport, summarize, summaryTable } from './report.ts';
import { findScenarios, runScenarios } from './runner.ts';

const program = new Command()
  .name('npm run scenario --')
  .description('Run scenario scripts on the twin (or a server by URL) and report their checks')
  .argument('[paths...]', 'scenario files, or folders searched for *.scenario.ts', ['scenarios'])
  .option('--robot <name>', 'run on this robot (the scenario must support it)')
  .option('--url <url>', 'run against a running server instead of the twin (scenarios with runsOn: "any")')
  .option('--json <file>', 'write the JSON report here')
  .option('--junit <file>', 'write JUnit XML here')
  .option('--jobs <n>', 'scenarios run at once (default: the number of cores)', (v) => Number.parseInt(v, 10))
  .showHelpAfterError();

program.parse();
const opts = program.opts<{ robot?: string; url?: string; json?: string; junit?: string; jobs?: number }>();

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
const started = performance.now();
const results = await runScenarios(files, { robot: opts.robot, url: opts.url, jobs: opts.jobs });
console.log(`\n${summaryTable(results, process.stdout.columns ?? 200)}`);
const failures = failureList(results);
if (failures) console.log(`\nFailures:\n${failures}`);
console.log(`\n${((performance.now() - started) / 1000).toFixed(1)} s`);
if (opts.json) await writeFile(opts.json, jsonReport(results));
if (opts.junit) await writeFile(opts.junit, junitReport(results));
process.exit(summarize(results).ok ? 0 : 1);

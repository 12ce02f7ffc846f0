/**
 * npm run deploy -- <move.record | move name> --to <robot URL> [--force] [--name <name>] [--robot <robot>]
 * Checks the move on the twin of the target's robot; installs it only when every check passes (or with --force,
 * printing the failures). Exit 0 installed, 1 refused, 2 could not run.
 */
import { Command } from 'commander';
import { deploy } from './deploy.ts';
import { failureList, summaryTable } from './report.ts';

const program = new Command()
  .name('npm run deploy --')
  .description('Check a recorded move on the twin of the target robot, then install it there')
  .argument('<move>', 'a pypot .record file, or a move name in --records-dir')
  .requiredOption('--to <url>', 'the robot server, e.g. http://poppy.local:8080')
  .option('--force', 'install even when checks fail (the failures are still printed)')
  .option('--name <name>', 'install under this name (default: the file name)')
  .option('--robot <robot>', "the target's robot (default: recognised from its GET /robot.json)")
  .option('--records-dir <dir>', 'where a move given by name is read', 'records')
  .showHelpAfterError();

program.parse();
const opts = program.opts<{
  to: string;
  force?: boolean;
  name?: string;
  robot?: string;
  recordsDir: string;
}>();
try {
  const outcome = await deploy(program.args[0]!, { ...opts, log: (l) => console.log(l) });
  console.log(`\n${summaryTable([outcome.report], process.stdout.columns ?? 200)}`);
  if (outcome.failed.length) console.log(`\nFailures:\n${failureList([outcome.report])}`);
  if (!outcome.installed) {
    console.log(
      `\nREFUSED: "${outcome.name}" was not installed on ${opts.to}: ${outcome.failed.map((c) => c.name).join(', ')} failed (--force installs anyway)`,
    );
    process.exit(1);
  }
  const forced = outcome.failed.length ? ` DESPITE ${outcome.failed.length} failed check(s) (--force)` : '';
  console.log(
    `\nINSTALLED "${outcome.name}" on ${opts.to}${forced}; ${outcome.listed ? 'listed in' : 'NOT listed in'} /records/list.json; play it: POST ${opts.to.replace(/\/+$/, '')}/records/${outcome.name}/play.json`,
  );
  process.exit(outcome.listed ? 0 : 1);
} catch (err) {
  console.error(`deploy: ${(err as Error).message}`);
  process.exit(2);
}

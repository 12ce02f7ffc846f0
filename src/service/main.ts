/**
 * `npx poppy-twin service install|uninstall|status`: bin/poppy-twin.js runs this bundle (dist/service.js) instead of
 * the server's for those words, so none of the server's modules load.
 */
import { serviceCommand } from './cli.ts';

try {
  process.exitCode = await serviceCommand(process.argv.slice(2));
} catch (err) {
  // What the flags could not foresee (a file that cannot be written...): one line, as a bad flag.
  process.stderr.write(`error: ${(err as Error).message}\n`);
  process.exitCode = 1;
}

/**
 * `npx poppy-twin service install|uninstall|status`: bin/poppy-twin.js runs this bundle (dist/service.js) instead of
 * the server's for those words, so none of the server's modules load.
 */
import { serviceCommand } from './cli.ts';

process.exitCode = await serviceCommand(process.argv.slice(2));

/**
 * `poppy-twin service install|uninstall|status [flags]` (main.ts here hands it the words after `service`): the
 * flags checked, one line for a bad one (exit 2), then src/service/install.ts on this machine.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { BUILTIN_ROBOTS, loadRobotConfig } from '../config/robot-config.ts';
import { parsePort } from '../config/flags.ts';
import { PACKAGE_ROOT } from '../core/entry.ts';
import { ConfigError } from '../core/errors.ts';
import { serverNodeFlags } from '../core/memory.ts';
import { type Runner, type ServiceHost, install, status, systemdVersion, uninstall } from './install.ts';
import { DEFAULT_USER, type ServiceFlags } from './unit.ts';

export const TEMPLATE = path.join(PACKAGE_ROOT, 'deploy', 'systemd', 'poppy-twin.service');

/** A command run to its end; a missing one is code 127, as a shell says. */
export const execRunner: Runner = (cmd, args) =>
  new Promise((resolve) =>
    execFile(cmd, args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 127) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === 127 ? err.message : '') });
    }),
  );

/** This machine as the install command sees it. */
export function thisMachine(): ServiceHost {
  return {
    root: '/',
    isRoot: process.getuid?.() === 0,
    // sd_booted(): systemd made this folder at boot.
    systemd: existsSync('/run/systemd/system'),
    run: execRunner,
    say: (line) => process.stdout.write(line + '\n'),
    warn: (line) => process.stderr.write(line + '\n'),
    scratch: async () => mkdtempSync(path.join(os.tmpdir(), 'poppy-twin-service-')),
  };
}

function parseUser(v: string): string {
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(v))
    throw new InvalidArgumentError('must be a user name: lower-case letters, digits, _ and -');
  if (v === 'root') throw new InvalidArgumentError('the service runs as a user of its own, not root');
  return v;
}

function parseHost(v: string): string {
  if (net.isIP(v) || /^[A-Za-z0-9][A-Za-z0-9.-]*$/.test(v)) return v;
  throw new InvalidArgumentError('must be an address (0.0.0.0, 127.0.0.1, ::) or a host name');
}

function parseDevice(v: string): string {
  if (!path.isAbsolute(v))
    throw new InvalidArgumentError("must be the device's absolute path, e.g. /dev/ttyAMA0");
  return v;
}

interface InstallFlags extends Omit<ServiceFlags, 'shadow'> {
  readonly shadow?: boolean;
  readonly user: string;
}

/** Runs the words after `service`; resolves with the exit code. */
export async function serviceCommand(words: readonly string[], host = thisMachine()): Promise<number> {
  let code: number | undefined;
  const program = new Command()
    .name('poppy-twin service')
    .description('the systemd service of the server on the robot (docs/robot-computer.md)')
    .showHelpAfterError(false)
    .configureOutput({
      writeOut: (s) => host.say(s.trimEnd()),
      writeErr: (s) => host.warn(s.trimEnd()),
      outputError: (s, write) => write(s.split('\n')[0] + '\n'),
    })
    .exitOverride();
  program
    .command('install')
    .description(
      'write the unit, create its user and token, enable and start it (or print how, without root)',
    )
    .option('--robot <name|path>', 'ergo-jr, torso, humanoid, or the path to a robot config JSON', 'ergo-jr')
    .option('--serial <device>', "the robot's serial port (default: the robot config's)", parseDevice)
    .option('--host <addr>', 'address to listen on', parseHost, '0.0.0.0')
    .option('--port <n>', 'HTTP port', parsePort, 8080)
    .addOption(
      new Option('--on-close <state>', 'servos when the server stops')
        .choices(['compliant', 'hold'])
        .default('compliant'),
    )
    .option('--shadow', 'run the physics twin beside the robot')
    .option('--user <name>', 'the user the service runs as (created if missing)', parseUser, DEFAULT_USER)
    .action(async (flags: InstallFlags) => {
      code = await installHere(host, flags, words);
    });
  program
    .command('uninstall')
    .description('stop, disable and remove the unit (the records, the user and the token are kept)')
    .action(async () => {
      code = await uninstall(host);
    });
  program
    .command('status')
    .description("the service's state (systemctl status), or that it is not installed")
    .action(async () => {
      code = await status(host);
    });
  if (words.length === 0) {
    host.warn('error: name a command: poppy-twin service install|uninstall|status');
    return 2;
  }
  try {
    await program.parseAsync([...words], { from: 'user' });
  } catch (err) {
    const exit = (err as { exitCode?: number }).exitCode;
    if (exit === undefined) throw err;
    return exit === 0 ? 0 : 2;
  }
  return code ?? 2;
}

async function installHere(
  host: ServiceHost,
  flags: InstallFlags,
  words: readonly string[],
): Promise<number> {
  let robot = flags.robot;
  let reads: string[] = [];
  try {
    const config = await loadRobotConfig(robot);
    if (!(BUILTIN_ROBOTS as readonly string[]).includes(robot)) {
      // A config of the user's: the service starts elsewhere, so its absolute path, and it reads its URDF too.
      robot = config.source;
      reads = [path.dirname(config.source), path.dirname(config.urdfPath)];
    }
    if (!flags.serial && config.bus.port === 'auto')
      throw new ConfigError(
        '--serial',
        `the ${config.name} config names no serial port: give it, e.g. --serial=/dev/ttyACM0`,
      );
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    host.warn(`error: ${err.message}`);
    return 2;
  }
  if (flags.serial && !existsSync(path.join(host.root, flags.serial)))
    host.warn(`warning: ${flags.serial} does not exist now; the service tries again until it does`);
  const node = process.execPath;
  return install(host, {
    template: readFileSync(TEMPLATE, 'utf8'),
    unit: {
      installDir: PACKAGE_ROOT.replace(/\/$/, ''),
      node,
      // Node's flags for this machine's memory: the unit is written on the robot's computer itself.
      nodeFlags: serverNodeFlags(),
      user: flags.user,
      systemdVersion: await systemdVersion(host.run),
      reads,
      flags: {
        robot,
        serial: flags.serial,
        host: flags.host,
        port: flags.port,
        onClose: flags.onClose,
        shadow: Boolean(flags.shadow),
      },
    },
    rerun: [node, path.join(PACKAGE_ROOT, 'dist', 'service.js'), ...words],
  });
}

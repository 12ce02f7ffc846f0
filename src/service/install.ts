/**
 * `poppy-twin service install|uninstall|status`: the unit written and enabled, or (not root, no systemd) the commands
 * to run instead. Every command goes through a Runner and every file below a root folder, so tests see what would
 * run and be written without a systemd or the real /etc.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { newToken } from '../http/access.ts';
import { ENV_PATH, STATE_DIR, UNIT_NAME, UNIT_PATH, type UnitOptions, renderUnit } from './unit.ts';

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}
/** Runs a command to its end (never throws: a missing command is code 127). */
export type Runner = (cmd: string, args: readonly string[]) => Promise<RunResult>;

export interface ServiceHost {
  /** The machine's root folder ('/'); a test's own folder, so that nothing touches the real /etc. */
  readonly root: string;
  readonly isRoot: boolean;
  /** systemd is this machine's init, with systemctl (it is not in most containers). */
  readonly systemd: boolean;
  readonly run: Runner;
  /** A line on stdout, a line on stderr. */
  readonly say: (line: string) => void;
  readonly warn: (line: string) => void;
  /** A new folder of the user's for the files to install by hand. */
  readonly scratch: () => Promise<string>;
}

/** The groups the unit's SupplementaryGroups= names: the serial ports' and the cameras'. */
export const GROUPS = ['dialout', 'video'] as const;
const SERVICE = 'poppy-twin';

/** The words of a command for a POSIX shell: plain words as they are, others in single quotes. */
export function shellLine(words: readonly string[]): string {
  return words.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`)).join(' ');
}

const at = (host: ServiceHost, p: string) => path.join(host.root, p);

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

/** systemd's version from `systemctl --version`, when systemctl is there. */
export async function systemdVersion(run: Runner): Promise<number | undefined> {
  const r = await run('systemctl', ['--version']);
  const m = r.code === 0 ? /^systemd (\d+)/.exec(r.stdout) : null;
  return m ? Number(m[1]) : undefined;
}

/** The environment file: a token of its own (the server generates one per start otherwise), flags commented out. */
export function envFileText(token = newToken()): string {
  return [
    '# poppy-twin service (read by systemd as root; keep it mode 0600). The token clients send:',
    '# Authorization: Bearer <token>, or open http://<robot>:<port>/ui/?token=<token> once.',
    `POPPY_TWIN_TOKEN=${token}`,
    '# More server flags, after those of the unit (a later flag wins), e.g.:',
    '#POPPY_TWIN_FLAGS=--camera=/dev/video0 --log-level=debug',
    '',
  ].join('\n');
}

const USERADD = (user: string) => [
  'useradd',
  '--system',
  '--user-group',
  '--home-dir',
  STATE_DIR,
  '--no-create-home',
  '--shell',
  '/usr/sbin/nologin',
  user,
];

export interface InstallOptions {
  readonly unit: UnitOptions;
  readonly template: string;
  /** The same install as one command line, for the user to run as root. */
  readonly rerun: readonly string[];
}

/** Runs `cmd`; a failure is told on one line (false). */
async function step(host: ServiceHost, cmd: string[]): Promise<boolean> {
  const r = await host.run(cmd[0]!, cmd.slice(1));
  if (r.code === 0) return true;
  const why = (r.stderr || r.stdout).trim().split('\n')[0] || `exit code ${r.code}`;
  host.warn(`error: ${shellLine(cmd)} failed: ${why}`);
  return false;
}

/** Writes `text` to `file` whole or not at all (a rename), with `mode`. */
async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, text, { mode });
  await fs.chmod(tmp, mode);
  await fs.rename(tmp, file);
}

export async function install(host: ServiceHost, o: InstallOptions): Promise<number> {
  const user = o.unit.user;
  const unit = renderUnit(o.template, o.unit);
  const needUser = (await host.run('getent', ['passwd', user])).code !== 0;
  const needEnv = !(await exists(at(host, ENV_PATH)));
  if (!host.isRoot || !host.systemd) return installByHand(host, o, unit, needUser, needEnv);
  for (const group of GROUPS)
    if ((await host.run('getent', ['group', group])).code !== 0) {
      host.warn(`error: the group ${group} does not exist on this machine (sudo groupadd --system ${group})`);
      return 1;
    }
  if (needUser && !(await step(host, USERADD(user)))) return 1;
  if (needEnv) {
    // Created once: a later install keeps the token the clients already have.
    await fs.mkdir(path.dirname(at(host, ENV_PATH)), { recursive: true });
    await fs.writeFile(at(host, ENV_PATH), envFileText(), { mode: 0o600, flag: 'wx' });
  }
  const again = await exists(at(host, UNIT_PATH));
  await writeAtomic(at(host, UNIT_PATH), unit + '\n', 0o644);
  if (!(await step(host, ['systemctl', 'daemon-reload']))) return 1;
  if (!(await step(host, ['systemctl', 'enable', '--now', SERVICE]))) return 1;
  // A running service keeps its old command line until restarted.
  if (again && !(await step(host, ['systemctl', 'restart', SERVICE]))) return 1;
  host.say(`${again ? 'updated' : 'installed'} ${UNIT_PATH}${needUser ? `, created the user ${user}` : ''}`);
  host.say(`started and enabled at boot: ${SERVICE} runs as ${user}, records in ${STATE_DIR}/records`);
  host.say(
    `the token clients send is POPPY_TWIN_TOKEN in ${ENV_PATH}${needEnv ? ' (generated now)' : ''}: sudo cat ${ENV_PATH}`,
  );
  host.say(`status: npx poppy-twin service status   logs: journalctl -u ${SERVICE} -f`);
  return 0;
}

/** Not root, or no systemd: the files go to a scratch folder and the commands are printed. */
async function installByHand(
  host: ServiceHost,
  o: InstallOptions,
  unit: string,
  needUser: boolean,
  needEnv: boolean,
): Promise<number> {
  const dir = await host.scratch();
  const unitFile = path.join(dir, UNIT_NAME);
  await writeAtomic(unitFile, unit + '\n', 0o644);
  const envFile = path.join(dir, 'poppy-twin.env');
  if (needEnv) await writeAtomic(envFile, envFileText(), 0o600);
  const sudo = host.isRoot ? [] : ['sudo'];
  const why = !host.systemd ? 'systemd is not running on this machine' : 'installing a service takes root';
  host.say(`${why}: nothing was installed; the unit is written to ${unitFile}`);
  if (host.systemd && !host.isRoot) {
    host.say('Install it with:');
    host.say(`  ${shellLine(['sudo', ...o.rerun])}`);
    host.say('or by hand:');
  } else host.say('To install it where systemd runs:');
  const lines = [
    ...(needUser ? [[...sudo, ...USERADD(o.unit.user)]] : []),
    ...(needEnv ? [[...sudo, 'install', '-m', '0600', '-o', 'root', '-g', 'root', envFile, ENV_PATH]] : []),
    [...sudo, 'install', '-m', '0644', '-o', 'root', '-g', 'root', unitFile, UNIT_PATH],
    [...sudo, 'systemctl', 'daemon-reload'],
    [...sudo, 'systemctl', 'enable', '--now', SERVICE],
  ];
  for (const l of lines) host.say(`  ${shellLine(l)}`);
  return 0;
}

/** The user the installed unit runs as. */
function unitUser(text: string): string | undefined {
  return /^User=(.+)$/m.exec(text)?.[1]?.trim();
}

export async function uninstall(host: ServiceHost): Promise<number> {
  const file = at(host, UNIT_PATH);
  const text = await fs.readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) {
    host.say(`${SERVICE} is not installed (no ${UNIT_PATH}): nothing to do`);
    return 0;
  }
  const user = unitUser(text) ?? 'poppy';
  const kept = `kept: the records in ${STATE_DIR}, the user ${user} and ${ENV_PATH} (its token)`;
  if (!host.isRoot || !host.systemd) {
    const sudo = host.isRoot ? [] : ['sudo'];
    host.say(
      `${host.systemd ? 'removing a service takes root' : 'systemd is not running on this machine'}: nothing was changed. To remove it:`,
    );
    const lines = [
      ...(host.systemd ? [[...sudo, 'systemctl', 'disable', '--now', SERVICE]] : []),
      [...sudo, 'rm', UNIT_PATH],
      ...(host.systemd ? [[...sudo, 'systemctl', 'daemon-reload']] : []),
    ];
    for (const l of lines) host.say(`  ${shellLine(l)}`);
    host.say(kept);
    return 0;
  }
  if (!(await step(host, ['systemctl', 'disable', '--now', SERVICE]))) return 1;
  await fs.rm(file);
  if (!(await step(host, ['systemctl', 'daemon-reload']))) return 1;
  // A unit that had failed stays listed until this; nothing to say if it had not.
  await host.run('systemctl', ['reset-failed', SERVICE]);
  host.say(`stopped, disabled and removed ${UNIT_PATH}`);
  host.say(`${kept}: nothing saved is lost`);
  host.say(
    `to remove them too: sudo userdel ${user}; sudo rm ${ENV_PATH}; sudo rm -r ${STATE_DIR} (the records)`,
  );
  return 0;
}

/** systemctl's status (its exit code: 0 running, 3 not), or 4 when not installed or systemd is not running. */
export async function status(host: ServiceHost): Promise<number> {
  if (!(await exists(at(host, UNIT_PATH)))) {
    host.say(
      `${SERVICE} is not installed (no ${UNIT_PATH}); install it with: npx poppy-twin service install`,
    );
    return 4;
  }
  if (!host.systemd) {
    host.say(`${SERVICE} is installed (${UNIT_PATH}), but systemd is not running on this machine`);
    return 4;
  }
  const r = await host.run('systemctl', ['status', '--no-pager', '--lines=15', UNIT_NAME]);
  if (r.stdout.trim()) host.say(r.stdout.trimEnd());
  if (r.stderr.trim()) host.warn(r.stderr.trimEnd());
  host.say(`logs: journalctl -u ${SERVICE} -f`);
  return r.code;
}

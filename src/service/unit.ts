/**
 * The systemd unit of the server on the robot's computer: deploy/systemd/poppy-twin.service, rendered for this
 * checkout, this node, a user and the flags given (docs/robot-computer.md, docs/decisions/0058-a-service.md).
 */
import path from 'node:path';

export const UNIT_NAME = 'poppy-twin.service';
/** Where the install command writes the unit and the environment file (below the machine's root). */
export const UNIT_PATH = '/etc/systemd/system/poppy-twin.service';
export const ENV_PATH = '/etc/poppy-twin.env';
/** The unit's StateDirectory=, and the records below it: never removed by an uninstall. */
export const STATE_DIR = '/var/lib/poppy-twin';
export const RECORDS_DIR = `${STATE_DIR}/records`;
export const DEFAULT_USER = 'poppy';

/** The server flags the install command writes into ExecStart (the others go in POPPY_TWIN_FLAGS). */
export interface ServiceFlags {
  /** A built-in robot's name, or the absolute path of a robot config. */
  readonly robot: string;
  readonly serial?: string;
  readonly host: string;
  readonly port: number;
  readonly onClose: 'compliant' | 'hold';
  readonly shadow: boolean;
}

export interface UnitOptions {
  /** The checkout (absolute): its dist/main.js runs. */
  readonly installDir: string;
  /** Node's executable (absolute). */
  readonly node: string;
  /** Node's own flags, chosen for the machine at install (src/core/memory.ts: serverNodeFlags). */
  readonly nodeFlags?: readonly string[];
  readonly user: string;
  readonly flags: ServiceFlags;
  /** systemd's version where it will run: 254 and later get a growing back-off. */
  readonly systemdVersion?: number;
  /** Other paths the service reads (a robot config and its URDF outside the checkout). */
  readonly reads?: readonly string[];
  /** Default RECORDS_DIR; tests run the command line with a folder of their own. */
  readonly recordsDir?: string;
}

/** systemd 254 added RestartSteps= and RestartMaxDelaySec= (Debian 12 and Raspberry Pi OS 12 have 252). */
export const BACKOFF_SINCE = 254;
const BACKOFF = ['RestartSec=1s', 'RestartSteps=6', 'RestartMaxDelaySec=1min'];

/** Folders ProtectHome=yes hides from the service: what the unit needs of them is bound back, read-only. */
const HOMES = ['/home', '/root', '/run/user'];

/** The server's command line as ExecStart runs it, before POPPY_TWIN_FLAGS. */
export function execStartArgs(o: UnitOptions): string[] {
  const f = o.flags;
  return [
    o.node,
    ...(o.nodeFlags ?? []),
    path.join(o.installDir, 'dist', 'main.js'),
    '--backend=real',
    `--robot=${f.robot}`,
    ...(f.serial ? [`--serial=${f.serial}`] : []),
    `--host=${f.host}`,
    `--port=${f.port}`,
    `--on-close=${f.onClose}`,
    ...(f.shadow ? ['--shadow'] : []),
    `--records-dir=${o.recordsDir ?? RECORDS_DIR}`,
  ];
}

/**
 * One word of a unit's command line: `%` and `$` doubled (specifiers, variables), and double quotes around a word
 * with blanks, quotes or backslashes, escaped C-style inside (systemd.service(5) "Command lines").
 */
export function quoteWord(word: string, dollar = true): string {
  let w = word.replaceAll('%', '%%');
  if (dollar) w = w.replaceAll('$', '$$$$');
  if (w !== '' && !/[\s"'\\]/.test(w)) return w;
  return `"${w.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n')}"`;
}

/** The paths under a home folder that the service must read, outermost only. */
export function homeReads(paths: readonly string[]): string[] {
  const under = (p: string, dir: string) => p === dir || p.startsWith(dir + '/');
  const inHome = [...new Set(paths.map((p) => path.resolve(p)))].filter((p) =>
    HOMES.some((h) => under(p, h) && p !== h),
  );
  return inHome.filter((p) => !inHome.some((q) => q !== p && under(p, q))).sort();
}

/** The unit for `o`, from the template's text: its own keys are replaced, every other line is kept as it is. */
export function renderUnit(template: string, o: UnitOptions): string {
  for (const p of [o.installDir, o.node])
    if (!path.isAbsolute(p)) throw new Error(`not an absolute path: ${p}`);
  const binds = homeReads([o.installDir, path.dirname(o.node), ...(o.reads ?? [])]);
  // BindReadOnlyPaths= reads a colon as the separator of a source and a destination.
  for (const b of binds) if (b.includes(':')) throw new Error(`a path with a colon cannot be bound: ${b}`);
  const exec = [...execStartArgs(o).map((w) => quoteWord(w)), '$POPPY_TWIN_FLAGS'].join(' ');
  const out: string[] = [];
  const seen = new Set<string>();
  for (const line of template.split('\n')) {
    const key = /^([A-Za-z]+)=/.exec(line)?.[1] ?? '';
    seen.add(key);
    if (key === 'ExecStart') out.push(`ExecStart=${exec}`);
    else if (key === 'User') out.push(`User=${o.user}`);
    else if (key === 'RestartSec' && (o.systemdVersion ?? 0) >= BACKOFF_SINCE) out.push(...BACKOFF);
    else if (key === 'ProtectHome' && binds.length)
      // The homes stay hidden (an empty tmpfs over them) but for the checkout, node and the configs, read-only.
      out.push('ProtectHome=tmpfs', `BindReadOnlyPaths=${binds.map((b) => quoteWord(b, false)).join(' ')}`);
    else out.push(line);
  }
  for (const key of ['ExecStart', 'User', 'RestartSec', 'ProtectHome'])
    if (!seen.has(key)) throw new Error(`the unit template has no ${key}= line`);
  return out.join('\n');
}

/**
 * `poppy-twin service install|uninstall|status` on a machine of the test's own: a temporary root folder for /etc and
 * /var/lib, and a runner that records each command and answers as the test says (no systemd, nothing real touched).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { tokenProblem } from '../../src/http/access.ts';
import { type RunResult, type ServiceHost } from '../../src/service/install.ts';
import { serviceCommand } from '../../src/service/cli.ts';
import { ENV_PATH, STATE_DIR, UNIT_PATH } from '../../src/service/unit.ts';
import { commandWords, envFileVars, unitValues } from './systemd-lines.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Machine extends ServiceHost {
  readonly calls: string[];
  readonly out: string[];
  readonly err: string[];
  readonly scratched: string[];
  file(p: string): string | undefined;
}

/**
 * A machine: `answers` maps a command's start ('getent passwd') to its result (default: success, empty);
 * `systemctl --version` says 252.
 */
function machine(
  root: string,
  opts: { isRoot?: boolean; systemd?: boolean; answers?: Record<string, Partial<RunResult>> } = {},
): Machine {
  const calls: string[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const scratched: string[] = [];
  const answers: Record<string, Partial<RunResult>> = {
    'systemctl --version': { stdout: 'systemd 252 (252.38-1~deb12u1)\n+PAM +AUDIT\n' },
    ...opts.answers,
  };
  return {
    root,
    isRoot: opts.isRoot ?? true,
    systemd: opts.systemd ?? true,
    calls,
    out,
    err,
    scratched,
    async run(cmd, args) {
      const line = [cmd, ...args].join(' ');
      calls.push(line);
      const key = Object.keys(answers).find((k) => line.startsWith(k));
      return { code: 0, stdout: '', stderr: '', ...(key ? answers[key] : {}) };
    },
    say: (line) => out.push(line),
    warn: (line) => err.push(line),
    async scratch() {
      const dir = mkdtempSync(path.join(root, 'scratch-'));
      scratched.push(dir);
      return dir;
    },
    file(p) {
      const f = path.join(root, p);
      return existsSync(f) ? readFileSync(f, 'utf8') : undefined;
    },
  };
}

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
const NO_USER = { 'getent passwd': { code: 2 } };

describe('poppy-twin service install | uninstall | status (a temporary root, an injected runner)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'poppy-service-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('install as root: the user, the token, the unit, then daemon-reload and enable --now', async () => {
    const m = machine(root, { answers: NO_USER });
    expect(await serviceCommand(['install', '--serial=/dev/ttyAMA0', '--shadow'], m)).to.equal(0);
    expect(m.calls).to.deep.equal([
      'systemctl --version',
      'getent passwd poppy',
      'getent group dialout',
      'getent group video',
      `useradd --system --user-group --home-dir ${STATE_DIR} --no-create-home --shell /usr/sbin/nologin poppy`,
      'systemctl daemon-reload',
      'systemctl enable --now poppy-twin',
    ]);
    const unit = m.file(UNIT_PATH)!;
    expect(mode(path.join(root, UNIT_PATH))).to.equal('644');
    expect(unitValues(unit, 'User')).to.deep.equal(['poppy']);
    expect(commandWords(unitValues(unit, 'ExecStart')[0]!, {})).to.deep.equal([
      process.execPath,
      path.join(ROOT, 'dist/main.js'),
      '--backend=real',
      '--robot=ergo-jr',
      '--serial=/dev/ttyAMA0',
      '--host=0.0.0.0',
      '--port=8080',
      '--on-close=compliant',
      '--shadow',
      '--records-dir=/var/lib/poppy-twin/records',
    ]);
    // The token: generated once, mode 0600, one the server takes.
    expect(mode(path.join(root, ENV_PATH))).to.equal('600');
    const token = envFileVars(m.file(ENV_PATH)!).POPPY_TWIN_TOKEN!;
    expect(tokenProblem(token)).to.equal(undefined);
    expect(m.out.join('\n'))
      .to.include(`POPPY_TWIN_TOKEN in ${ENV_PATH}`)
      .and.include('journalctl -u poppy-twin');
    expect(m.out.join('\n')).to.not.include(token);
    // This machine has no such device (yet): said, and installed all the same.
    expect(m.err).to.deep.equal([
      'warning: /dev/ttyAMA0 does not exist now; the service tries again until it does',
    ]);
  });

  it('install again: no new user, the same token, the new flags, and a restart to apply them', async () => {
    const first = machine(root, { answers: NO_USER });
    expect(await serviceCommand(['install'], first)).to.equal(0);
    const token = envFileVars(first.file(ENV_PATH)!).POPPY_TWIN_TOKEN;
    const again = machine(root);
    const flags = [
      '--robot=torso',
      '--serial=/dev/ttyUSB0',
      '--host=127.0.0.1',
      '--port=9000',
      '--on-close=hold',
    ];
    expect(await serviceCommand(['install', ...flags, '--user=robot'], again)).to.equal(0);
    expect(again.calls.filter((c) => !c.startsWith('getent'))).to.deep.equal([
      'systemctl --version',
      'systemctl daemon-reload',
      'systemctl enable --now poppy-twin',
      'systemctl restart poppy-twin',
    ]);
    const unit = again.file(UNIT_PATH)!;
    expect(commandWords(unitValues(unit, 'ExecStart')[0]!, {}).slice(3, 8)).to.deep.equal(flags);
    expect(unitValues(unit, 'User')).to.deep.equal(['robot']);
    expect(envFileVars(again.file(ENV_PATH)!).POPPY_TWIN_TOKEN).to.equal(token);
  });

  it("install on systemd 255: the growing back-off; a robot config of the user's by its absolute path", async () => {
    const m = machine(root, { answers: { 'systemctl --version': { stdout: 'systemd 255 (255.4-1)\n' } } });
    expect(await serviceCommand(['install', '--robot=robots/ergo-jr.json'], m)).to.equal(0);
    const unit = m.file(UNIT_PATH)!;
    expect(unitValues(unit, 'RestartSteps')).to.have.lengthOf(1);
    expect(commandWords(unitValues(unit, 'ExecStart')[0]!, {})[3]).to.equal(
      `--robot=${path.join(ROOT, 'robots/ergo-jr.json')}`,
    );
  });

  it('a failing step stops the install with one line naming it', async () => {
    const noGroup = machine(root, { answers: { 'getent group video': { code: 2 } } });
    expect(await serviceCommand(['install'], noGroup)).to.equal(1);
    expect(noGroup.err).to.deep.equal([
      'error: the group video does not exist on this machine (sudo groupadd --system video)',
    ]);
    expect(noGroup.file(UNIT_PATH)).to.equal(undefined);
    expect(noGroup.calls.some((c) => c.startsWith('systemctl daemon'))).to.equal(false);
    const failing = machine(root, {
      answers: { 'systemctl enable': { code: 1, stderr: 'Failed to enable unit: Access denied\n' } },
    });
    expect(await serviceCommand(['install'], failing)).to.equal(1);
    expect(failing.err).to.deep.equal([
      'error: systemctl enable --now poppy-twin failed: Failed to enable unit: Access denied',
    ]);
  });

  for (const [what, opts, sudo] of [
    ['not root', { isRoot: false }, 'sudo '],
    ['no systemd (a container)', { systemd: false }, ''],
  ] as const) {
    it(`install, ${what}: nothing installed; the unit in a scratch folder and the commands to run`, async () => {
      const m = machine(root, { ...opts, answers: NO_USER });
      expect(await serviceCommand(['install', '--port=8081'], m)).to.equal(0);
      expect(m.file(UNIT_PATH)).to.equal(undefined);
      expect(m.file(ENV_PATH)).to.equal(undefined);
      expect(m.calls.filter((c) => !/^(getent|systemctl --version)/.test(c))).to.deep.equal([]);
      const dir = m.scratched[0]!;
      const unit = readFileSync(path.join(dir, 'poppy-twin.service'), 'utf8');
      expect(unit).to.include('--port=8081');
      expect(mode(path.join(dir, 'poppy-twin.env'))).to.equal('600');
      const text = m.out.join('\n');
      expect(m.out[0]).to.include(path.join(dir, 'poppy-twin.service'));
      for (const line of [
        `${sudo}useradd --system`,
        `${sudo}install -m 0600 -o root -g root ${dir}/poppy-twin.env ${ENV_PATH}`,
        `${sudo}install -m 0644 -o root -g root ${dir}/poppy-twin.service ${UNIT_PATH}`,
        `${sudo}systemctl daemon-reload`,
        `${sudo}systemctl enable --now poppy-twin`,
      ])
        expect(text).to.include(line);
      if (sudo)
        expect(text).to.include(`sudo ${process.execPath} ${ROOT}/dist/service.js install --port=8081`);
    });
  }

  it('uninstall: stopped, disabled, removed; the records, the user and the token kept', async () => {
    expect(await serviceCommand(['install'], machine(root))).to.equal(0);
    mkdirSync(path.join(root, STATE_DIR, 'records'), { recursive: true });
    writeFileSync(path.join(root, STATE_DIR, 'records', 'wave.record'), '{}');
    const m = machine(root);
    expect(await serviceCommand(['uninstall'], m)).to.equal(0);
    expect(m.calls).to.deep.equal([
      'systemctl disable --now poppy-twin',
      'systemctl daemon-reload',
      'systemctl reset-failed poppy-twin',
    ]);
    expect(m.file(UNIT_PATH)).to.equal(undefined);
    expect(m.file(path.join(STATE_DIR, 'records', 'wave.record'))).to.equal('{}');
    expect(m.file(ENV_PATH)).to.match(/POPPY_TWIN_TOKEN=/);
    expect(m.out.join('\n')).to.include('nothing saved is lost');
    const twice = machine(root);
    expect(await serviceCommand(['uninstall'], twice)).to.equal(0);
    expect(twice.calls).to.deep.equal([]);
    expect(twice.out[0]).to.include('not installed');
  });

  it('uninstall, not root: the commands to run, nothing changed', async () => {
    expect(await serviceCommand(['install'], machine(root))).to.equal(0);
    const m = machine(root, { isRoot: false });
    expect(await serviceCommand(['uninstall'], m)).to.equal(0);
    expect(m.calls).to.deep.equal([]);
    expect(m.file(UNIT_PATH)).to.not.equal(undefined);
    expect(m.out.join('\n'))
      .to.include('sudo systemctl disable --now poppy-twin')
      .and.include(`sudo rm ${UNIT_PATH}`);
  });

  it("status: not installed (4), systemctl's answer and code once installed, 4 without systemd", async () => {
    const before = machine(root);
    expect(await serviceCommand(['status'], before)).to.equal(4);
    expect(before.out[0]).to.include('not installed');
    expect(await serviceCommand(['install'], machine(root))).to.equal(0);
    const m = machine(root, {
      answers: {
        'systemctl status': { code: 3, stdout: '○ poppy-twin.service\n     Active: inactive (dead)\n' },
      },
    });
    expect(await serviceCommand(['status'], m)).to.equal(3);
    expect(m.calls).to.deep.equal(['systemctl status --no-pager --lines=15 poppy-twin.service']);
    expect(m.out[0]).to.include('Active: inactive (dead)');
    expect(await serviceCommand(['status'], machine(root, { systemd: false }))).to.equal(4);
  });

  for (const words of [
    [],
    ['bogus'],
    ['install', '--port=abc'],
    ['install', '--port=70000'],
    ['install', '--on-close=limp'],
    ['install', '--user=root'],
    ['install', '--user=Bad Name'],
    ['install', '--serial=ttyUSB0'],
    ['install', '--host=a b'],
    ['install', '--robot=nao'],
    ['install', '--robot=torso'],
    ['install', '--nope'],
    ['status', '--all'],
  ])
    it(`a bad command line is one line and exit 2, nothing run or written: ${words.join(' ') || '(none)'}`, async () => {
      const m = machine(root);
      expect(await serviceCommand(words, m)).to.equal(2);
      expect(m.err, m.err.join('\n')).to.have.lengthOf(1);
      expect(m.err[0]).to.match(/^error: /);
      expect(m.calls.filter((c) => c !== 'systemctl --version')).to.deep.equal([]);
      expect(m.file(UNIT_PATH)).to.equal(undefined);
    });

  it('from the command line (npx poppy-twin service ...): a bad flag is one line on stderr, exit 2', () => {
    const r = spawnSync(
      process.execPath,
      [path.join(ROOT, 'bin/poppy-twin.js'), 'service', 'install', '--port=abc'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: '' },
      },
    );
    expect(r.status).to.equal(2);
    // (A line saying dist/ was rebuilt may come first, when src/ changed since the build.)
    expect(
      r.stderr
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('poppy-twin: built')),
    ).to.deep.equal([
      "error: option '--port <n>' argument 'abc' is invalid. must be an integer from 0 to 65535",
    ]);
    expect(r.stdout).to.equal('');
    const status = spawnSync(process.execPath, [path.join(ROOT, 'dist/service.js'), 'status', '--all'], {
      encoding: 'utf8',
    });
    expect([status.status, status.stderr.trim()]).to.deep.equal([2, "error: unknown option '--all'"]);
  });
});

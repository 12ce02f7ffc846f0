/**
 * `npm run emulator` as users run it and stop it: npm execs the emulator (no shell or tsx process between them), and
 * SIGTERM to the PID they started leaves no process behind, with either wire (node-pty's, or a socat relay).
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A process's parent and start time (field 22 of /proc/<pid>/stat), or undefined once it is gone. */
function stat(pid: number): { ppid: number; start: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields that follow start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');

/** Every process below `root`, with its start time (so that a recycled PID is not taken for a survivor). */
function descendants(root: number): Map<number, string> {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    const s = Number.isInteger(pid) ? stat(pid) : undefined;
    if (s) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  }
  const found = new Map<number, string>();
  const visit = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      const s = stat(child);
      if (!s) continue;
      found.set(child, s.start);
      visit(child);
    }
  };
  visit(root);
  return found;
}

describe('npm run emulator: one process to stop', function () {
  this.timeout(60000);

  for (const wire of ['native', 'socat']) {
    it(`${wire} wire: npm execs the emulator, and SIGTERM to npm's PID leaves no process behind`, async () => {
      const npm = spawn('npm', ['run', 'emulator', '--', '--robot=ergo-jr', `--wire=${wire}`], {
        cwd: ROOT,
        env: { ...process.env, NODE_OPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      npm.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      npm.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      // 'exit', not 'close': a process left behind would hold npm's output pipes open.
      const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
      const tree = new Map<number, string>();
      try {
        await until(
          'the device path and the ready line',
          async () => {
            if (npm.exitCode !== null) throw new Error(`npm exited ${npm.exitCode}: ${out}\n${err}`);
            return /^\/dev\/\S+$/m.test(out) && /--serial=/.test(err) ? true : undefined;
          },
          40000,
          50,
        );
        for (const [pid, start] of descendants(npm.pid!)) tree.set(pid, start);
        const lines = [...tree.keys()].map((pid) => `${pid} ${commandLine(pid)}`);
        const direct = [...tree.keys()].filter((pid) => stat(pid)?.ppid === npm.pid);
        const emulator = direct.length === 1 ? commandLine(direct[0]!) : '';

        npm.kill('SIGTERM');
        const code = await exited;
        const alive = () => [...tree].filter(([pid, start]) => stat(pid)?.start === start);
        await until(
          'every process npm started to be gone',
          async () => (alive().length ? undefined : true),
          5000,
          50,
        ).catch(() => {
          throw new Error(
            `still running after npm ended:\n${alive()
              .map(([pid]) => commandLine(pid))
              .join('\n')}`,
          );
        });
        expect(code, `npm's exit code\n${err}`).to.equal(0);
        // npm's child was the emulator itself (exec): no sh, no tsx CLI relaying signals to another node.
        expect(direct, lines.join('\n')).to.have.length(1);
        expect(emulator, lines.join('\n')).to.match(/node .*src\/emulator\/main\.ts/);
        const relays = lines.filter((l) => /^\d+ socat /.test(l));
        expect(relays, lines.join('\n')).to.have.length(wire === 'socat' ? 1 : 0);
        expect(err).to.include(wire === 'socat' ? 'relayed by socat' : 'emulating ergo-jr');
      } finally {
        // Whatever the outcome, nothing this test started outlives it.
        for (const [pid, start] of tree) if (stat(pid)?.start === start) process.kill(pid, 'SIGKILL');
        if (npm.exitCode === null) npm.kill('SIGKILL');
      }
    });
  }
});

/** The bus emulator in a process of its own, for the shadow and guard tests. */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { until } from '../helpers.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * `npm run emulator -- --console` in a process of its own, as users run it: the robot's stand-in keeps its own time
 * whatever this process (the server, its twin, the test) is busy with, as servos on their microcontrollers do.
 * Fault lines go to its console; each resolves with the emulator's answer.
 */
export class EmulatorProcess {
  #err = '';
  #seen = 0;
  private constructor(readonly child: ChildProcessByStdio<Writable, Readable, Readable>) {
    child.stderr.setEncoding('utf8').on('data', (d: string) => (this.#err += d));
  }

  static async start(args: string[]): Promise<{ emulator: EmulatorProcess; device: string }> {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src/emulator/main.ts'), '--console', ...args],
      { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const emulator = new EmulatorProcess(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const device = await until(
      'the device path the emulator prints',
      async () => {
        if (child.exitCode !== null) throw new Error(`the emulator exited: ${emulator.#err}`);
        return /^(\/\S+)\n/.exec(out)?.[1];
      },
      30000,
      50,
    );
    // Its hint line comes once it is ready; console answers come after it.
    await until(
      'the emulator ready',
      async () => (/--serial=/.test(emulator.#err) ? true : undefined),
      30000,
      50,
    );
    emulator.#seen = emulator.#err.length;
    return { emulator, device };
  }

  /** Sends one console line; resolves with the emulator's answer line. */
  async send(line: string): Promise<string> {
    this.child.stdin.write(line + '\n');
    return until(
      `the emulator to answer ${line}`,
      async () => {
        const rest = this.#err.slice(this.#seen);
        const end = rest.indexOf('\n');
        if (end < 0) return undefined;
        this.#seen += end + 1;
        return rest.slice(0, end);
      },
      10000,
      10,
    );
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const gone = new Promise((resolve) => this.child.once('close', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
}

/** Everyday gotos of the Ergo Jr, [motor, position, duration s]: shadow mode must raise no event through them. */
export const EVERYDAY_GOTOS: readonly (readonly [string, number, number])[] = [
  ['m1', 40, 1],
  ['m3', 10, 0.8],
  ['m1', -30, 1.2],
  ['m4', 45, 0.6],
  ['m5', 20, 1],
  ['m2', -30, 1],
  ['m6', 20, 0.5],
  ['m1', 0, 0.7],
  ['m4', 0, 1],
  ['m3', 35, 1],
  ['m2', -60, 1],
  ['m5', 55, 0.8],
];

/** The Ergo Jr's server on the real backend with its twin beside it, over an emulator process, listening on HTTP. */
export interface ShadowRig {
  readonly emulator: EmulatorProcess;
  readonly server: RobotServer;
  /** Warnings and errors logged (and info lines, with `infoLogs`). */
  readonly logs: string[];
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function startShadowRig(opts: {
  readonly faults?: string;
  readonly guard?: boolean;
  readonly infoLogs?: boolean;
  readonly recordsDir: string;
}): Promise<ShadowRig> {
  const started = await EmulatorProcess.start([
    '--robot',
    'ergo-jr',
    ...(opts.faults ? ['--faults', opts.faults] : []),
  ]);
  const logs: string[] = [];
  const keep = (m: string) => logs.push(m);
  const server = await createRobotServer({
    backend: 'real',
    robot: 'ergo-jr',
    real: { serial: started.device },
    shadow: true,
    guard: opts.guard,
    recordsDir: opts.recordsDir,
    logger: { info: opts.infoLogs ? keep : () => {}, warn: keep, error: keep },
  }).catch(async (err: unknown) => {
    await started.emulator.close();
    throw err;
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = server.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    emulator: started.emulator,
    server,
    logs,
    async call(method, p, body) {
      const res = await fetch(url + p, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async close() {
      await server.close();
      await started.emulator.close();
    },
  };
}

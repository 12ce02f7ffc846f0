/**
 * What the examples of one Markdown page run against: the server its text starts (`npm start -- <flags>` in any of
 * its blocks, else the default one), built lazily as a sim twin on a stepped clock listening on a free port, and a
 * scratch working directory with the repository's example folders in it. Programs the examples start (curl, node)
 * run as child processes while the twin's clock advances, as a `wait: true` request needs.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ServerOptions } from '../../../src/server.ts';
import { type TestServer, simServer } from '../../helpers.ts';

export const ROOT = path.resolve(import.meta.dirname, '../../..');

/** Folders an example may read (`cp examples/primitives/sinus.ts ...`), linked into the scratch directory. */
const SHARED = ['examples', 'scenarios', 'robots', 'test'];

/** Server flags an example may use, and what they become; `null`: no effect on what the examples see. */
const HONOURED: Record<string, ((v: string, cwd: string) => Partial<ServerOptions>) | null> = {
  '--robot': (v) => ({ robot: v }),
  '--records-dir': (v, cwd) => ({ recordsDir: path.resolve(cwd, v) }),
  '--primitives-dir': (v, cwd) => ({ primitivesDir: path.resolve(cwd, v) }),
  '--compat': (v) => ({ compat: v as 'pypot' }),
  '--seed': (v) => ({ seed: Number(v) }),
  '--camera-realism': (v) => ({ cameraRealism: v !== 'off' }),
  '--backend': (v) => {
    if (v !== 'sim') throw new Error(`--backend=${v}: the examples' server is the twin`);
    return {};
  },
  // The twin's clock is stepped by the test and its port is picked free: these change nothing an example sees.
  '--port': null,
  '--host': null,
  '--speed': null,
  '--physics': null,
  '--log-level': null,
};

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Sim seconds the twin advanced while it ran. */
  readonly simSeconds: number;
}

export class Page {
  readonly file: string;
  #cwd: string | undefined;
  #flags: [string, string | true][] = [];
  #server: Promise<{ twin: TestServer; port: number }> | undefined;
  readonly #retired: Promise<{ twin: TestServer; port: number }>[] = [];

  constructor(file: string) {
    this.file = file;
  }

  /** The scratch directory examples run in (created on first use). */
  async cwd(): Promise<string> {
    if (!this.#cwd) {
      this.#cwd = await mkdtemp(path.join(os.tmpdir(), 'poppy-doc-'));
      for (const dir of SHARED) await symlink(path.join(ROOT, dir), path.join(this.#cwd, dir));
      await mkdir(path.join(this.#cwd, 'records'));
    }
    return this.#cwd;
  }

  /** What the examples' server cannot stand in for among `flags`. */
  unhonoured(flags: readonly [string, string | true][]): string[] {
    return flags
      .filter(([f]) => !(f in HONOURED))
      .map(([f]) => `${f} is not honoured by the examples' server`);
  }

  /** A server line of the page: the server its later examples talk to. */
  setServer(flags: [string, string | true][]): void {
    this.#flags = flags;
    // A server already started with other flags is replaced by the one this line describes.
    if (this.#server) this.#retired.push(this.#server);
    this.#server = undefined;
  }

  /** The page's server, started on first use. */
  server(): Promise<{ twin: TestServer; port: number }> {
    this.#server ??= (async () => {
      const cwd = await this.cwd();
      let opts: Partial<ServerOptions> & { robot: string } = {
        robot: 'ergo-jr',
        recordsDir: path.join(cwd, 'records'),
      };
      for (const [flag, value] of this.#flags) {
        const to = HONOURED[flag];
        if (to && typeof value === 'string') opts = { ...opts, ...to(value, cwd) };
      }
      const { robot, ...rest } = opts;
      const twin = await simServer(robot, rest);
      await twin.app.listen({ port: 0, host: '127.0.0.1' });
      return { twin, port: (twin.app.server.address() as { port: number }).port };
    })();
    return this.#server;
  }

  /** `text` with the documented address (port 8080) replaced by the page server's. */
  async local(text: string): Promise<string> {
    if (!/(?:127\.0\.0\.1|localhost):8080\b/.test(text)) return text;
    const { port } = await this.server();
    return text.replace(/(?:127\.0\.0\.1|localhost):8080\b/g, `127.0.0.1:${port}`);
  }

  /** Lets sim time pass on the page's server. */
  async advance(seconds: number): Promise<void> {
    await (await this.server()).twin.advance(seconds);
  }

  /**
   * Runs a program to its end; meanwhile the page's server (when `withServer`) steps its clock 20 ms at a time, so a
   * request that waits for a motion is answered. Killed after 120 s of sim time or 60 s of wall time.
   */
  async run(cmd: string, args: readonly string[], opts: { cwd: string; withServer: boolean }): Promise<Ran> {
    const twin = opts.withServer ? (await this.server()).twin : undefined;
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    let code: number | null | undefined;
    const closed = new Promise<void>((resolve) => {
      child.on('error', (err) => {
        stderr +=
          (err as NodeJS.ErrnoException).code === 'ENOENT'
            ? `${cmd} is not installed: sudo apt-get install ${cmd} (.ci/run does)`
            : err.message;
        code = null;
        resolve();
      });
      child.on('close', (c) => {
        code = c;
        resolve();
      });
    });
    const started = performance.now();
    let simSeconds = 0;
    while (code === undefined) {
      if (simSeconds > 120 || performance.now() - started > 60000) {
        child.kill('SIGKILL');
        stderr += `\n(killed after ${simSeconds.toFixed(1)} sim s)`;
        break;
      }
      if (twin) {
        await twin.advance(0.02);
        simSeconds += 0.02;
      }
      await new Promise((r) => setTimeout(r, twin ? 0 : 10));
    }
    await closed;
    return { code: code ?? null, stdout, stderr, simSeconds };
  }

  async close(): Promise<void> {
    for (const started of [...this.#retired, this.#server]) {
      const server = await started?.catch(() => undefined);
      await server?.twin.close();
    }
    if (this.#cwd) await rm(this.#cwd, { recursive: true, force: true });
  }
}

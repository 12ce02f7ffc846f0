/**
 * The emulator's end of the wire: a pseudo-terminal whose slave the host opens as its serial port. The emulator holds
 * the master itself (node-pty's native openpty), one kernel hop from the host; where that binary is missing it falls
 * back to socat relaying the pty over pipes, two hops more (docs/decisions/0028-the-pty-relay.md has the figures).
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Readable, Writable } from 'node:stream';
import tty from 'node:tty';
import { ConfigError } from '../core/errors.ts';

export interface PtyWire {
  /** The slave's path: the host's serial port. */
  readonly path: string;
  /** 'native': this process holds the master; 'socat': a relay process does. */
  readonly kind: 'native' | 'socat';
  /** The relay process, when there is one (its scheduling may be raised). */
  readonly relayPid: number | undefined;
  /** Calls `listener` with the bytes the host writes. */
  onData(listener: (bytes: Buffer) => void): void;
  /** Sends bytes to the host. */
  write(bytes: Uint8Array): void;
  close(): Promise<void>;
}

interface NativePty {
  open(cols: number, rows: number): { master: number; slave: number; pty: string };
}

/** node-pty's native module for this platform (its prebuilt binary ships in the npm package), or undefined. */
function nativePty(): NativePty | undefined {
  try {
    const require = createRequire(import.meta.url);
    return require(`@lydell/node-pty-${process.platform}-${process.arch}/pty.node`) as NativePty;
  } catch {
    return undefined;
  }
}

/** A raw pty for the host: held natively when node-pty's binary loads (unless `prefer` says socat), else through socat. */
export async function openPty(prefer: PtyWire['kind'] = 'native'): Promise<PtyWire> {
  const native = prefer === 'native' ? nativePty() : undefined;
  return native ? openNative(native) : openSocat();
}

function openNative(native: NativePty): PtyWire {
  const { master, slave, pty } = native.open(80, 24);
  // The slave stays open here, never read: without it the master would see a hang-up each time the host closes its
  // port, and the host's termios (raw, its baud rate) would be lost between two opens.
  const wire = new tty.ReadStream(master);
  wire.on('error', () => {});
  return {
    path: pty,
    kind: 'native',
    relayPid: undefined,
    onData: (listener) => void wire.on('data', listener),
    write: (bytes) => {
      if (wire.writable) wire.write(bytes);
    },
    close: async () => {
      wire.destroy();
      try {
        closeSync(slave);
      } catch {
        // already closed
      }
    },
  };
}

function openSocat(): Promise<PtyWire> {
  return new Promise((resolve, reject) => {
    let socat: ChildProcessByStdio<Writable, Readable, Readable>;
    try {
      socat = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      reject(err as Error);
      return;
    }
    let path: string | undefined;
    let text = '';
    let ready = false;
    const fail = (why: string) => {
      socat.kill();
      reject(
        new ConfigError(
          'socat',
          `${why} (the bus emulator needs node-pty's binary for this platform, or socat: apt-get install socat)`,
        ),
      );
    };
    socat.on('error', (err) => fail(err.message));
    socat.on('exit', (code) => {
      if (!ready) fail(`socat exited with code ${code}: ${text.trim().split('\n').pop() ?? ''}`);
    });
    socat.stdin.on('error', () => {});
    socat.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      path ??= /PTY is (\S+)/.exec(text)?.[1];
      if (!path || !/starting data transfer loop/.test(text)) return;
      ready = true;
      socat.stderr.removeAllListeners('data');
      socat.stderr.resume();
      resolve({
        path,
        kind: 'socat',
        relayPid: socat.pid,
        onData: (listener) => void socat.stdout.on('data', listener),
        write: (bytes) => {
          if (socat.stdin.writable) socat.stdin.write(bytes);
        },
        close: async () => {
          if (socat.exitCode !== null || socat.signalCode !== null) return;
          const exited = new Promise<void>((done) => socat.once('exit', () => done()));
          socat.kill();
          await exited;
        },
      });
    });
  });
}

/**
 * The serial seam: what the bus link needs of a port, after node-serialport's BindingInterface (open with a path, a
 * baud rate and a lock; write; close), with the bytes pushed to a listener rather than pulled by read() calls. In
 * production, nodeSerialBinding (serialport, plus Node's own tty stream on Linux); in unit tests, a binding onto the
 * emulated bus in memory (src/emulator/memory-binding.ts), so that the driver and the sync loop run without socat.
 */
import fs from 'node:fs';
import tty from 'node:tty';
import type { SerialPort as SerialPortType } from 'serialport';

export interface SerialOpenOptions {
  readonly path: string;
  readonly baudRate: number;
  /** Exclusive lock: a second process on the bus would garble both. */
  readonly lock: boolean;
}

/** An open port. */
export interface SerialConnection {
  /** Resolves once the bytes are handed to the device (sent before anything written after them). */
  write(bytes: Uint8Array): Promise<void>;
  /** Bytes as they arrive, in order. One listener. */
  onData(listener: (chunk: Uint8Array) => void): void;
  close(): Promise<void>;
}

export interface SerialBinding {
  /** Rejects with the device's reason (not found, permission denied, locked). */
  open(options: SerialOpenOptions): Promise<SerialConnection>;
}

/**
 * serialport's binding. On Linux, once serialport has opened and set up the device (baud, raw mode, its exclusive
 * lock), the bytes go through Node's own tty stream on a second descriptor of the same device: read and written on
 * the event loop's thread, where serialport hands each read and write to libuv's thread pool. Over the bus emulator
 * this took a transaction's mean from 2.3 to 1.9 ms (the wire time is 1.2 ms). serialport keeps its own descriptor,
 * which holds the lock (libuv reopens a tty it is given, so the lock could not live on the stream's). Elsewhere, or if
 * the device is not a tty, serialport does the I/O.
 */
export const nodeSerialBinding: SerialBinding = {
  async open({ path, baudRate, lock }) {
    // Loaded on the first open: a twin never pays for serialport and its native binding (13 ms of a start).
    const { SerialPort } = await import('serialport');
    const port: SerialPortType = new SerialPort({ path, baudRate, autoOpen: false, lock });
    // A port error outside a transaction (unplugged adapter) must not take the process down; transactions time out.
    port.on('error', () => {});
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    const fd = (port.port as { fd?: unknown } | undefined)?.fd;
    let own: number | undefined;
    if (process.platform === 'linux' && typeof fd === 'number' && tty.isatty(fd)) {
      try {
        const { O_RDWR, O_NOCTTY, O_NONBLOCK } = fs.constants;
        own = fs.openSync(path, O_RDWR | O_NOCTTY | O_NONBLOCK);
      } catch {
        own = undefined; // serialport's I/O then
      }
    }
    let stream: tty.ReadStream | undefined;
    if (own !== undefined) {
      // `writable`: one handle both ways (two on one descriptor would each close it).
      stream = new tty.ReadStream(own, { writable: true } as ConstructorParameters<typeof tty.ReadStream>[1]);
      stream.on('error', () => {});
    }
    return {
      write(bytes) {
        return new Promise<void>((resolve) => {
          if (stream) stream.write(Buffer.from(bytes), () => resolve());
          else {
            port.write(Buffer.from(bytes));
            port.drain(() => resolve());
          }
        });
      },
      onData(listener) {
        if (stream) stream.on('data', listener);
        else port.on('data', listener);
      },
      async close() {
        const s = stream;
        stream = undefined;
        if (s && !s.closed) await new Promise<void>((resolve) => s.once('close', () => resolve()).destroy());
        await new Promise<void>((resolve) => port.close(() => resolve()));
      },
    };
  },
};

/**
 * The serial seam: what the bus link needs of a port, after node-serialport's BindingInterface (open with a path, a
 * baud rate and a lock; write; close), with the bytes pushed to a listener rather than pulled by read() calls. In
 * production, nodeSerialBinding (serialport, plus Node's own tty stream on Linux); in unit tests, a binding onto the
 * emulated bus in memory (src/emulator/memory-binding.ts), so that the driver and the sync loop run without socat.
 */
import fs from 'node:fs';
import type net from 'node:net';
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
  /**
   * Bytes as they arrive, in order. One listener. A chunk may be a view on the binding's read buffer, valid until the
   * listener returns: a listener keeps a copy of what it keeps.
   */
  onData(listener: (chunk: Uint8Array) => void): void;
  close(): Promise<void>;
}

export interface SerialBinding {
  /** Rejects with the device's reason (not found, permission denied, locked). */
  open(options: SerialOpenOptions): Promise<SerialConnection>;
}

/** The tty's reads land in a buffer this size (a reply of a whole bus is a few hundred bytes; more is read in turns). */
const READ_BUFFER_BYTES = 4096;

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
    let listener: ((chunk: Uint8Array) => void) | undefined;
    if (own !== undefined) {
      // `writable`: one handle both ways (two on one descriptor would each close it). `onread` (net.Socket's option,
      // which tty.ReadStream passes on): each read lands in one buffer of ours and goes straight to the listener,
      // without a Buffer allocated per read nor the Readable stream's push and 'data' event, nor its read-more tick.
      const options: net.SocketConstructorOpts & { onread: net.OnReadOpts } = {
        writable: true,
        onread: {
          buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
          callback: (n, buffer) => {
            listener?.(buffer.subarray(0, n));
            return true;
          },
        },
      };
      stream = new tty.ReadStream(own, options);
      stream.on('error', () => {});
    }
    return {
      write(bytes) {
        // Straight to the descriptor while the stream is open and holds nothing back (a tty takes a packet at once):
        // the same bytes in the same order, without the Writable's request, callback and tick. What the device does
        // not take at once (EAGAIN, a part, an error) goes through the stream, as everything did.
        if (stream && own !== undefined && !stream.destroyed && stream.writableLength === 0) {
          const done = writeNow(own, bytes);
          if (done === bytes.length) return Promise.resolve();
          bytes = bytes.subarray(done);
        }
        return new Promise<void>((resolve) => {
          if (stream) stream.write(Buffer.from(bytes), () => resolve());
          else {
            port.write(Buffer.from(bytes));
            port.drain(() => resolve());
          }
        });
      },
      onData(l) {
        // A stream made with `onread` starts reading once resumed (tty.ReadStream's start is manual).
        if (stream) {
          listener = l;
          stream.resume();
        } else port.on('data', l);
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

/** Writes to `fd` what it takes at once: the count of bytes taken (0 when none, as on EAGAIN or an error). */
function writeNow(fd: number, bytes: Uint8Array): number {
  try {
    return fs.writeSync(fd, bytes);
  } catch {
    return 0;
  }
}

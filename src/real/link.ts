/**
 * One serial line to a Dynamixel bus: sends an instruction packet and collects the status packets it expects, one
 * transaction at a time. Knows bytes and timeouts, not registers.
 */
import fs from 'node:fs';
import tty from 'node:tty';
import { SerialPort } from 'serialport';
import { type Packet, PacketParser, type Protocol } from '../dynamixel/packet.ts';
import { CorruptReplyError, StatusError, TimeoutError, type BusError } from '../dynamixel/errors.ts';

/** A reply timer this late (ms) says the process was busy: the line gets a grace before the servo counts silent. */
const LATE_TIMER_MS = 2;

export interface LinkOptions {
  readonly path: string;
  readonly baud: number;
  readonly protocol: Protocol;
  /** Wait for replies this long beyond their wire time, ms. */
  readonly timeoutMs?: number;
  /** Take an exclusive lock on the port (default true: a second process on the bus would garble both). */
  readonly lock?: boolean;
}

/** Replies of one transaction: a packet per id that answered, an error per id that did not (or answered an error). */
export interface Replies {
  readonly packets: Map<number, Packet>;
  readonly errors: Map<number, BusError>;
}

export class SerialLink {
  readonly protocol: Protocol;
  readonly timeoutMs: number;
  readonly #port: SerialPort;
  /**
   * On Linux, once serialport has opened and set up the device (baud, raw mode, its exclusive lock), the bytes go
   * through Node's own tty stream on a second descriptor of the same device: read and written on the event loop's
   * thread, where serialport hands each read and write to libuv's thread pool. Over the bus emulator this took a
   * transaction's mean from 2.3 to 1.9 ms (the wire time is 1.2 ms). serialport keeps its own descriptor, which
   * holds the lock (libuv reopens a tty it is given, so the lock could not live on the stream's). Elsewhere, or if
   * the device is not a tty, serialport does the I/O.
   */
  #tty: tty.ReadStream | undefined;
  #open = false;
  readonly #parser: PacketParser;
  #chain: Promise<unknown> = Promise.resolve();
  #onPackets: ((packets: Packet[]) => void) | undefined;
  /** Transactions done, bytes sent and received (the benchmark's figures). */
  readonly stats = { transactions: 0, sent: 0, received: 0 };

  constructor(readonly opts: LinkOptions) {
    this.protocol = opts.protocol;
    this.timeoutMs = opts.timeoutMs ?? 20;
    this.#parser = new PacketParser(opts.protocol, true);
    this.#port = new SerialPort({
      path: opts.path,
      baudRate: opts.baud,
      autoOpen: false,
      lock: opts.lock ?? true,
    });
    // A port error outside a transaction (unplugged adapter) must not take the process down; transactions time out.
    this.#port.on('error', () => {});
  }

  #receive = (chunk: Buffer) => {
    this.stats.received += chunk.length;
    const packets = this.#parser.push(chunk);
    if (packets.length) this.#onPackets?.(packets);
  };

  async open(): Promise<void> {
    if (this.#open) return;
    await new Promise<void>((resolve, reject) => this.#port.open((err) => (err ? reject(err) : resolve())));
    const fd = (this.#port.port as { fd?: unknown } | undefined)?.fd;
    let own: number | undefined;
    if (process.platform === 'linux' && typeof fd === 'number' && tty.isatty(fd)) {
      try {
        const { O_RDWR, O_NOCTTY, O_NONBLOCK } = fs.constants;
        own = fs.openSync(this.opts.path, O_RDWR | O_NOCTTY | O_NONBLOCK);
      } catch {
        own = undefined; // serialport's I/O then
      }
    }
    if (own !== undefined) {
      // `writable`: one handle both ways (two on one descriptor would each close it).
      this.#tty = new tty.ReadStream(own, { writable: true } as ConstructorParameters<
        typeof tty.ReadStream
      >[1]);
      this.#tty.on('data', this.#receive);
      this.#tty.on('error', () => {});
    } else this.#port.on('data', this.#receive);
    this.#open = true;
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    const stream = this.#tty;
    if (stream) {
      this.#tty = undefined;
      if (!stream.closed)
        await new Promise<void>((resolve) => stream.once('close', () => resolve()).destroy());
    }
    await new Promise<void>((resolve) => this.#port.close(() => resolve()));
  }

  get isOpen(): boolean {
    return this.#open;
  }

  /**
   * Sends `packet` and waits for one status packet from each of `expect` (in any order), until the last one arrives
   * or the timeout (`timeoutMs` beyond the wire time; default the link's). Runs after every transaction queued before
   * it.
   */
  transact(packet: Uint8Array, expect: readonly number[], timeoutMs = this.timeoutMs): Promise<Replies> {
    const run = () => this.#transact(packet, expect, timeoutMs);
    const p = this.#chain.then(run, run);
    this.#chain = p.catch(() => {});
    return p;
  }

  #transact(packet: Uint8Array, expect: readonly number[], timeoutMs: number): Promise<Replies> {
    this.stats.transactions++;
    this.#parser.reset();
    this.#parser.issues.length = 0;
    const packets = new Map<number, Packet>();
    const errors = new Map<number, BusError>();
    const wanted = new Set(expect);
    const replyBytes = expect.length * (this.protocol === 1 ? 12 : 16);
    const wireMs = (((packet.length + replyBytes) * 10) / this.opts.baud) * 1000;
    return new Promise<Replies>((resolve) => {
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        this.#onPackets = undefined;
        const corrupt = this.#parser.issues.length > 0;
        for (const id of wanted) {
          if (packets.has(id)) continue;
          errors.set(
            id,
            corrupt
              ? new CorruptReplyError(id, `motor ${id}: corrupt reply (checksum)`)
              : new TimeoutError(id, `motor ${id} did not answer`),
          );
        }
        resolve({ packets, errors });
      };
      const limit = timeoutMs + wireMs;
      const due = performance.now() + limit;
      // A timeout that fires late means this process was busy (HTTP load, a GC), not that the servo was silent: the
      // reply may be waiting in the port. Two more turns of the event loop let it be read (the port's poll, then its
      // read on the thread pool) before the servo is counted silent.
      const onTimer = () => {
        if (performance.now() - due > LATE_TIMER_MS) setImmediate(() => setImmediate(finish));
        else finish();
      };
      const timer = expect.length ? setTimeout(onTimer, limit) : undefined;
      this.#onPackets = (got) => {
        for (const p of got) {
          if (!wanted.has(p.id) || packets.has(p.id) || errors.has(p.id)) continue;
          if (p.error) errors.set(p.id, new StatusError(p.id, this.protocol, p.error));
          packets.set(p.id, p);
        }
        if ([...wanted].every((id) => packets.has(id))) finish();
      };
      this.stats.sent += packet.length;
      if (this.#tty) {
        // Handed to the kernel, which sends it before anything written after it.
        this.#tty.write(Buffer.from(packet), () => {
          if (!expect.length) finish();
        });
      } else {
        this.#port.write(Buffer.from(packet));
        // Nothing to wait for (sync write): let the bytes leave before the next transaction.
        if (!expect.length) this.#port.drain(() => finish());
      }
    });
  }
}

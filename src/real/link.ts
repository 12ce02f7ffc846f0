/**
 * One serial line to a Dynamixel bus: sends an instruction packet and collects the status packets it expects, one
 * transaction at a time. Knows bytes and timeouts, not registers.
 */
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
    this.#port.on('data', (chunk: Buffer) => {
      this.stats.received += chunk.length;
      const packets = this.#parser.push(chunk);
      if (packets.length) this.#onPackets?.(packets);
    });
    // A port error outside a transaction (unplugged adapter) must not take the process down; transactions time out.
    this.#port.on('error', () => {});
  }

  open(): Promise<void> {
    if (this.#port.isOpen) return Promise.resolve();
    return new Promise((resolve, reject) => this.#port.open((err) => (err ? reject(err) : resolve())));
  }

  close(): Promise<void> {
    if (!this.#port.isOpen) return Promise.resolve();
    return new Promise((resolve) => this.#port.close(() => resolve()));
  }

  get isOpen(): boolean {
    return this.#port.isOpen;
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
      this.#port.write(Buffer.from(packet));
      if (!expect.length) {
        // Nothing to wait for (sync write): let the bytes leave before the next transaction.
        this.#port.drain(() => finish());
      }
    });
  }
}

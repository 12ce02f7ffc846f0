/**
 * One serial line to a Dynamixel bus: sends an instruction packet and collects the status packets it expects, one
 * transaction at a time. Knows bytes and timeouts, not registers.
 */
import { type Packet, PacketParser, type Protocol } from '../dynamixel/packet.ts';
import { CorruptReplyError, StatusError, TimeoutError, type BusError } from '../dynamixel/errors.ts';
import { type SerialBinding, type SerialConnection, nodeSerialBinding } from './serial-binding.ts';

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
  /** The port's binding (default: serialport's, src/real/serial-binding.ts). */
  readonly binding?: SerialBinding;
}

/** Replies of one transaction: a packet per id that answered, an error per id that did not (or answered an error). */
export interface Replies {
  readonly packets: Map<number, Packet>;
  readonly errors: Map<number, BusError>;
}

export class SerialLink {
  readonly protocol: Protocol;
  readonly timeoutMs: number;
  #port: SerialConnection | undefined;
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
  }

  #receive = (chunk: Uint8Array) => {
    this.stats.received += chunk.length;
    const packets = this.#parser.push(chunk);
    if (packets.length) this.#onPackets?.(packets);
  };

  async open(): Promise<void> {
    if (this.#open) return;
    const binding = this.opts.binding ?? nodeSerialBinding;
    const port = await binding.open({
      path: this.opts.path,
      baudRate: this.opts.baud,
      lock: this.opts.lock ?? true,
    });
    port.onData(this.#receive);
    this.#port = port;
    this.#open = true;
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    const port = this.#port;
    this.#port = undefined;
    await port?.close();
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
        // Only the wanted ids are kept, once each: all are in when the counts meet.
        if (packets.size === wanted.size) finish();
      };
      this.stats.sent += packet.length;
      if (!this.#port) {
        finish();
        return;
      }
      // Nothing to wait for (sync write): done once the bytes are handed over, before the next transaction.
      void this.#port.write(packet).then(() => {
        if (!expect.length) finish();
      });
    });
  }
}

/**
 * The emulated Dynamixel bus: parses instruction packets from the host and answers as the servos would, byte for
 * byte (status return level, return delay, the order of sync/bulk read replies), spending the wire time of the baud
 * rate, with faults injected on request.
 */
import { mulberry32 } from '../core/prng.ts';
import {
  BROADCAST_ID,
  Instruction,
  type Packet,
  PacketParser,
  type Protocol,
  encodeStatus,
  fromBytes,
} from '../dynamixel/packet.ts';
import type { EmulatedServo, ServoRefusal } from './servo.ts';
import type { PhysicalFaults } from '../sim/physical-faults.ts';

/**
 * The faults of the line (drop, corrupt, missing, error bits, latency), and of the physical world (block, weak, push:
 * the twin's physics behind the servos; offset: the servo reports its angle shifted, a slipped horn).
 */
export interface Faults extends PhysicalFaults {
  /** Share of replies never sent (0..1). */
  dropRate: number;
  /** Share of replies sent with a broken checksum/CRC (0..1). */
  corruptRate: number;
  /** Ids that neither answer nor take writes (a servo off the bus). */
  missing: Set<number>;
  /** Error byte bits every reply of this id carries (protocol 1: 0x20 overload, 0x04 overheating; 2: 0x80 alert). */
  errorBits: Map<number, number>;
  /** Extra delay before each reply, ms. */
  latencyMs: number;
  block: ReadonlyMap<number, number>;
  weak: ReadonlyMap<number, number>;
  push: ReadonlyMap<number, number>;
  /** Degrees added to the present position each servo reports, per id. */
  offset: ReadonlyMap<number, number>;
}

export const noFaults = (): Faults => ({
  dropRate: 0,
  corruptRate: 0,
  missing: new Set(),
  errorBits: new Map(),
  latencyMs: 0,
  block: new Map(),
  weak: new Map(),
  push: new Map(),
  offset: new Map(),
});

/** What the emulator saw, for tests and the benchmark. */
export interface BusStats {
  instructions: number;
  replies: number;
  dropped: number;
  corrupted: number;
  /** Garbage and bad-checksum byte runs from the host. */
  badInput: number;
}

export interface EmulatedBusOptions {
  readonly protocol: Protocol;
  readonly baud: number;
  readonly servos: ReadonlyMap<number, EmulatedServo>;
  readonly faults?: Faults;
  readonly seed?: number;
}

/** Wall time of `bytes` on the wire: 10 bits per byte (start, 8 data, stop). */
export const wireSeconds = (bytes: number, baud: number) => (bytes * 10) / baud;

export class EmulatedBus {
  readonly faults: Faults;
  readonly stats: BusStats = { instructions: 0, replies: 0, dropped: 0, corrupted: 0, badInput: 0 };
  readonly #rand: () => number;
  #queue: Promise<void> = Promise.resolve();
  /** performance.now() (ms) when the bus is next idle. */
  #busFreeAt = 0;
  #closed = false;

  constructor(private readonly opts: EmulatedBusOptions) {
    this.faults = opts.faults ?? noFaults();
    this.#rand = mulberry32(opts.seed ?? 1);
  }

  /**
   * A host on the bus: returns the function that takes its bytes; replies go to `send`. Several hosts (ptys) may
   * share the servos (the tests open a second backend while the first is open); their packets take turns.
   */
  connect(send: (bytes: Uint8Array) => void): (chunk: Uint8Array) => void {
    const parser = new PacketParser(this.opts.protocol, false);
    return (chunk) => {
      const arrived = performance.now();
      const packets = parser.push(chunk);
      this.stats.badInput += parser.issues.splice(0).length;
      for (const p of packets)
        this.#queue = this.#queue.then(() => this.#handle(p, arrived, send)).catch(() => {});
    };
  }

  close(): void {
    this.#closed = true;
  }

  get #p(): Protocol {
    return this.opts.protocol;
  }

  #servo(id: number): EmulatedServo | undefined {
    return this.faults.missing.has(id) ? undefined : this.opts.servos.get(id);
  }

  #errorByte(servo: EmulatedServo, refusal?: ServoRefusal): number {
    let e = this.faults.errorBits.get(servo.id) ?? 0;
    if (refusal) e |= this.#p === 1 ? (refusal === 'range' ? 0x08 : 0x40) : refusal === 'range' ? 0x04 : 0x07;
    return e;
  }

  async #handle(p: Packet, arrived: number, send: (bytes: Uint8Array) => void): Promise<void> {
    if (this.#closed) return;
    this.stats.instructions++;
    const inBytes = (this.#p === 1 ? 6 : 10) + p.params.length;
    // The instruction occupies the wire first (the pty delivered it at once).
    let t = Math.max(arrived, this.#busFreeAt) + wireSeconds(inBytes, this.opts.baud) * 1000;
    const replies = await this.#answer(p);
    for (const { servo, error, params } of replies) {
      t += servo.returnDelayUs / 1000 + this.faults.latencyMs;
      const bytes = encodeStatus(this.#p, servo.id, error, params);
      t += wireSeconds(bytes.length, this.opts.baud) * 1000;
      await waitUntil(t);
      if (this.#closed) return;
      if (this.#rand() < this.faults.dropRate) {
        this.stats.dropped++;
        continue;
      }
      if (this.#rand() < this.faults.corruptRate) {
        bytes[bytes.length - 1]! ^= 0x5a;
        this.stats.corrupted++;
      }
      this.stats.replies++;
      send(bytes);
    }
    this.#busFreeAt = Math.max(t, performance.now());
  }

  async #answer(p: Packet): Promise<{ servo: EmulatedServo; error: number; params: Uint8Array }[]> {
    const proto = this.#p;
    const a = p.params;
    const word = (i: number) => fromBytes(a, i, 2);
    const out: { servo: EmulatedServo; error: number; params: Uint8Array }[] = [];
    const readOne = async (servo: EmulatedServo, address: number, length: number) => {
      const r = await servo.read(address, length, this.faults.offset.get(servo.id) ?? 0);
      if (typeof r === 'string')
        out.push({ servo, error: this.#errorByte(servo, r), params: new Uint8Array(0) });
      else out.push({ servo, error: this.#errorByte(servo), params: r });
    };
    switch (p.instruction) {
      case Instruction.ping: {
        const ids =
          p.id === BROADCAST_ID && proto === 2 ? [...this.opts.servos.keys()].sort((x, y) => x - y) : [p.id];
        for (const id of ids) {
          const servo = this.#servo(id);
          if (!servo) continue;
          const params =
            proto === 2
              ? Uint8Array.of(servo.spec.modelNumber & 0xff, servo.spec.modelNumber >> 8, servo.memory[2]!)
              : new Uint8Array(0);
          out.push({ servo, error: this.#errorByte(servo), params });
        }
        return out;
      }
      case Instruction.read: {
        const servo = this.#servo(p.id);
        if (!servo || servo.statusReturnLevel < 1) return out;
        const [address, length] = proto === 1 ? [a[0]!, a[1]!] : [word(0), word(2)];
        await readOne(servo, address, length);
        return out;
      }
      case Instruction.write: {
        const [address, data] = proto === 1 ? [a[0]!, a.subarray(1)] : [word(0), a.subarray(2)];
        const ids = p.id === BROADCAST_ID ? [...this.opts.servos.keys()] : [p.id];
        for (const id of ids) {
          const servo = this.#servo(id);
          if (!servo) continue;
          const refusal = await servo.write(address, data);
          if (p.id !== BROADCAST_ID && servo.statusReturnLevel >= 2)
            out.push({ servo, error: this.#errorByte(servo, refusal), params: new Uint8Array(0) });
        }
        return out;
      }
      case Instruction.syncWrite: {
        const [address, length, from] = proto === 1 ? [a[0]!, a[1]!, 2] : [word(0), word(2), 4];
        for (let i = from; i + 1 + length <= a.length; i += 1 + length) {
          const servo = this.#servo(a[i]!);
          if (servo) await servo.write(address, a.subarray(i + 1, i + 1 + length));
        }
        return out;
      }
      case Instruction.syncRead: {
        if (proto !== 2) return out;
        const [address, length] = [word(0), word(2)];
        for (const id of a.subarray(4)) {
          const servo = this.#servo(id);
          if (servo && servo.statusReturnLevel >= 1) await readOne(servo, address, length);
        }
        return out;
      }
      case Instruction.bulkRead: {
        const entries: [number, number, number][] = [];
        if (proto === 1)
          for (let i = 1; i + 3 <= a.length; i += 3) entries.push([a[i + 1]!, a[i + 2]!, a[i]!]);
        else for (let i = 0; i + 5 <= a.length; i += 5) entries.push([a[i]!, word(i + 1), word(i + 3)]);
        for (const [id, address, length] of entries) {
          const servo = this.#servo(id);
          // Protocol 1.0 bulk read is an MX feature; the AX-12A ignores it.
          if (!servo || servo.statusReturnLevel < 1 || (proto === 1 && servo.spec.name === 'AX-12')) continue;
          await readOne(servo, address, length);
        }
        return out;
      }
      default: {
        const servo = this.#servo(p.id);
        if (servo && p.id !== BROADCAST_ID)
          out.push({
            servo,
            error: this.#errorByte(servo) | (proto === 1 ? 0x40 : 0x02),
            params: new Uint8Array(0),
          });
        return out;
      }
    }
  }
}

/** A word to sleep on (Atomics.wait): the emulator's sub-millisecond waits block without spinning a core. */
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** A timed Atomics.wait wakes this late (measured here: 78-113 µs, p10-p90); the rest is spun, not slept. */
const WAKE_SLACK_MS = 0.15;

/**
 * Waits until performance.now() reaches `t` (ms): a timer for the bulk, then, under 2 ms, a blocking sleep and a short
 * spin for the precision of the wire time. Spinning on the event loop instead (setImmediate turns) kept one of the
 * two cores busy during every transaction, which the host and socat then waited for.
 */
export async function waitUntil(t: number): Promise<void> {
  let left = t - performance.now();
  if (left > 2) {
    await new Promise((r) => setTimeout(r, left - 1.5));
    left = t - performance.now();
  }
  if (left > WAKE_SLACK_MS) Atomics.wait(sleeper, 0, 0, left - WAKE_SLACK_MS);
  while (performance.now() < t) {
    // spin the last few tens of microseconds
  }
}

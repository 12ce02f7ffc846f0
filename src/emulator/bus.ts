// Over 400 lines: one switch over the instruction set, each case as the servos' manuals describe it.
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
  /** Ids that ignore sync and bulk reads (an adapter or firmware without them) but answer single reads. */
  nosync: Set<number>;
  /** Per id, how many of the next instructions addressed to it the servo misses (noise on the line: no effect, no reply). */
  deaf: Map<number, number>;
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
  nosync: new Set(),
  deaf: new Map(),
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
  /** The servos, by the id they start at (an id write moves a servo to another id). */
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
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #list: readonly EmulatedServo[];
  /** performance.now() (ms) when the bus is next idle. */
  #busFreeAt = 0;
  #closed = false;

  constructor(private readonly opts: EmulatedBusOptions) {
    this.faults = opts.faults ?? noFaults();
    this.#list = [...opts.servos.values()];
    this.#rand = mulberry32(opts.seed ?? 1);
  }

  /**
   * A host on the bus: returns the function that takes its bytes; replies go to `send`. Several hosts (ptys) may
   * share the servos (the tests open a second backend while the first is open); their packets take turns.
   * `hostBaud` reads the rate the host's port is set to (a pty carries it in its termios): a servo at another rate
   * neither hears nor answers it. It is asked whenever a servo's rate differs from the last answer (after a baud
   * write), and otherwise every HOST_BAUD_POLL_MS; without it, the host is taken to be at the bus's rate.
   */
  connect(send: (bytes: Uint8Array) => void, hostBaud?: () => Promise<number>): (chunk: Uint8Array) => void {
    const parser = new PacketParser(this.opts.protocol, false);
    const host = { baud: this.opts.baud, send };
    const refresh = async () => {
      if (hostBaud) host.baud = await hostBaud().catch(() => host.baud);
    };
    if (hostBaud) {
      const timer = setInterval(() => void refresh(), HOST_BAUD_POLL_MS);
      timer.unref();
      this.#timers.push(timer);
    }
    return (chunk) => {
      const arrived = performance.now();
      const packets = parser.push(chunk);
      const work: (Packet | { bad: { id: number; instruction: number } })[] = [...packets];
      for (const issue of parser.issues.splice(0)) {
        this.stats.badInput++;
        // A whole packet with a bad checksum/CRC: the servo it names answers with the checksum/CRC error.
        if (issue.packet) work.push({ bad: issue.packet });
      }
      for (const w of work)
        this.#queue = this.#queue
          .then(async () => {
            if (hostBaud && this.#servos.some((sv) => !sameRate(sv.baud, host.baud))) await refresh();
            await this.#handle(w, arrived, host);
          })
          .catch(() => {});
    };
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
  }

  get #p(): Protocol {
    return this.opts.protocol;
  }

  get #servos(): readonly EmulatedServo[] {
    return this.#list;
  }

  /** The servos at `id` that hear the host (on the bus, at its rate); a deaf one misses this instruction instead. */
  #at(id: number, host: Host): EmulatedServo[] {
    return this.#servos.filter((sv) => {
      if (
        (id !== BROADCAST_ID && sv.id !== id) ||
        this.faults.missing.has(sv.id) ||
        !sameRate(sv.baud, host.baud)
      )
        return false;
      const deaf = this.faults.deaf.get(sv.id) ?? 0;
      if (deaf <= 0) return true;
      if (deaf === 1) this.faults.deaf.delete(sv.id);
      else this.faults.deaf.set(sv.id, deaf - 1);
      return false;
    });
  }

  #errorByte(servo: EmulatedServo, refusal?: ServoRefusal | 'instruction' | 'crc'): number {
    let e = this.faults.errorBits.get(servo.id) ?? 0;
    if (this.#p === 1) {
      if (servo.angleLimitError) e |= 0x02;
      if (refusal) e |= ERROR_1[refusal];
    } else {
      if (servo.hardwareError) e |= 0x80;
      if (refusal) e = (e & 0x80) | ERROR_2[refusal];
    }
    return e;
  }

  /** Protocol 2.0: an injected alert (bit 7) latches the servo's hardware error, which only a REBOOT clears. */
  async #latchAlerts(): Promise<void> {
    if (this.#p !== 2) return;
    for (const [id, bits] of this.faults.errorBits) {
      if (!(bits & 0x80)) continue;
      for (const sv of this.#servos.filter((x) => x.id === id)) if (!sv.hardwareError) await sv.alert(0x01);
      if (bits & 0x7f) this.faults.errorBits.set(id, bits & 0x7f);
      else this.faults.errorBits.delete(id);
    }
  }

  async #handle(
    w: Packet | { bad: { id: number; instruction: number } },
    arrived: number,
    host: Host,
  ): Promise<void> {
    if (this.#closed) return;
    this.stats.instructions++;
    await this.#latchAlerts();
    const inBytes = 'bad' in w ? 0 : (this.#p === 1 ? 6 : 10) + w.params.length;
    // The instruction occupies the wire first (the pty delivered it at once).
    let t = Math.max(arrived, this.#busFreeAt) + wireSeconds(inBytes, this.opts.baud) * 1000;
    const replies = 'bad' in w ? this.#badPacket(w.bad, host) : await this.#answer(w, host);
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
      host.send(bytes);
    }
    this.#busFreeAt = Math.max(t, performance.now());
    for (const after of replies.flatMap((r) => (r.after ? [r.after] : []))) await after();
  }

  /** Whether `servo` answers `instruction` at its status return level (0: ping only, 1: and reads, 2: all). */
  #answers(servo: EmulatedServo, instruction: number): boolean {
    const level = servo.statusReturnLevel;
    if (instruction === Instruction.ping) return true;
    if (instruction === Instruction.read) return level >= 1;
    return level >= 2;
  }

  #badPacket(bad: { id: number; instruction: number }, host: Host): Reply[] {
    if (bad.id === BROADCAST_ID) return [];
    return this.#at(bad.id, host)
      .filter((servo) => this.#answers(servo, bad.instruction))
      .map((servo) => ({ servo, error: this.#errorByte(servo, 'crc'), params: new Uint8Array(0) }));
  }

  async #answer(p: Packet, host: Host): Promise<Reply[]> {
    const proto = this.#p;
    const a = p.params;
    const word = (i: number) => fromBytes(a, i, 2);
    const out: Reply[] = [];
    const none = new Uint8Array(0);
    const unicast = p.id !== BROADCAST_ID;
    const readOne = async (servo: EmulatedServo, address: number, length: number) => {
      const r = await servo.read(address, length, this.faults.offset.get(servo.id) ?? 0);
      if (typeof r === 'string') out.push({ servo, error: this.#errorByte(servo, r), params: none });
      else out.push({ servo, error: this.#errorByte(servo), params: r });
    };
    const status = (servo: EmulatedServo, refusal?: ServoRefusal | 'instruction' | 'crc') => {
      if (unicast && this.#answers(servo, p.instruction))
        out.push({ servo, error: this.#errorByte(servo, refusal), params: none });
    };
    switch (p.instruction) {
      case Instruction.ping: {
        // A broadcast ping (2.0) is answered by every servo in id order; 1.0 has no broadcast ping answer.
        if (!unicast && proto === 1) return out;
        for (const servo of this.#at(p.id, host).sort((x, y) => x.id - y.id)) {
          const params =
            proto === 2
              ? Uint8Array.of(servo.spec.modelNumber & 0xff, servo.spec.modelNumber >> 8, servo.memory[2]!)
              : none;
          out.push({ servo, error: this.#errorByte(servo), params });
        }
        return out;
      }
      case Instruction.read: {
        if (!unicast) return out;
        const [address, length] = proto === 1 ? [a[0]!, a[1]!] : [word(0), word(2)];
        for (const servo of this.#at(p.id, host))
          if (this.#answers(servo, p.instruction)) await readOne(servo, address, length);
        return out;
      }
      case Instruction.write:
      case Instruction.regWrite: {
        const [address, data] = proto === 1 ? [a[0]!, a.subarray(1)] : [word(0), a.subarray(2)];
        for (const servo of this.#at(p.id, host)) {
          const oldId = servo.id;
          const refusal =
            p.instruction === Instruction.write
              ? await servo.write(address, data)
              : await servo.regWrite(address, data);
          // An id change takes effect after its status packet, which goes out from the old id (a baud change
          // likewise: the reply is already chosen, the servo listens at its new rate from the next packet).
          const newId = servo.id;
          servo.id = oldId;
          status(servo, refusal);
          const reply = out.at(-1);
          const apply = () => {
            servo.id = newId;
          };
          if (reply?.servo === servo) reply.after = apply;
          else apply();
        }
        return out;
      }
      case Instruction.action: {
        for (const servo of this.#at(p.id, host)) {
          const had = await servo.action();
          // 1.0: ACTION without a REG_WRITE is an Instruction Error (e-manual).
          status(servo, !had && proto === 1 ? 'instruction' : undefined);
        }
        return out;
      }
      case Instruction.reboot: {
        if (proto !== 2) break;
        for (const servo of this.#at(p.id, host)) {
          status(servo);
          const reply = out.at(-1);
          const restart = () => servo.reboot();
          if (reply?.servo === servo) reply.after = restart;
          else await restart();
        }
        return out;
      }
      case Instruction.syncWrite: {
        const [address, length, from] = proto === 1 ? [a[0]!, a[1]!, 2] : [word(0), word(2), 4];
        for (let i = from; i + 1 + length <= a.length; i += 1 + length)
          for (const servo of this.#at(a[i]!, host))
            await servo.write(address, a.subarray(i + 1, i + 1 + length));
        return out;
      }
      case Instruction.bulkWrite: {
        if (proto !== 2) break;
        for (let i = 0; i + 5 <= a.length;) {
          const [id, address, length] = [a[i]!, word(i + 1), word(i + 3)];
          const data = a.subarray(i + 5, i + 5 + length);
          i += 5 + length;
          if (data.length !== length) break;
          for (const servo of this.#at(id, host)) await servo.write(address, data);
        }
        return out;
      }
      case Instruction.syncRead: {
        if (proto !== 2) break;
        const [address, length] = [word(0), word(2)];
        for (const id of a.subarray(4))
          for (const servo of this.#at(id, host))
            if (servo.statusReturnLevel >= 1 && !this.faults.nosync.has(servo.id))
              await readOne(servo, address, length);
        return out;
      }
      case Instruction.bulkRead: {
        const entries: [number, number, number][] = [];
        if (proto === 1)
          for (let i = 1; i + 3 <= a.length; i += 3) entries.push([a[i + 1]!, a[i + 2]!, a[i]!]);
        else for (let i = 0; i + 5 <= a.length; i += 5) entries.push([a[i]!, word(i + 1), word(i + 3)]);
        for (const [id, address, length] of entries)
          for (const servo of this.#at(id, host)) {
            // Protocol 1.0 bulk read is an MX feature; the AX-12A ignores it.
            if (servo.statusReturnLevel < 1 || (proto === 1 && servo.spec.name === 'AX-12')) continue;
            if (this.faults.nosync.has(servo.id)) continue;
            await readOne(servo, address, length);
          }
        return out;
      }
    }
    // Anything else (FACTORY_RESET, pypot's USB2AX SYNC_READ 0x84 on 1.0...): Instruction Error.
    for (const servo of this.#at(p.id, host)) status(servo, 'instruction');
    return out;
  }
}

interface Host {
  baud: number;
  readonly send: (bytes: Uint8Array) => void;
}

interface Reply {
  readonly servo: EmulatedServo;
  readonly error: number;
  readonly params: Uint8Array;
  /** Runs once the reply is on the wire (an id or baud change, a reboot). */
  after?: () => void | Promise<void>;
}

/** How often a host's port rate is looked at when no servo's rate differs from it. */
const HOST_BAUD_POLL_MS = 250;

/** Two rates a UART pair tolerates (within 3 %). */
const sameRate = (a: number, b: number) => Math.abs(a - b) / b < 0.03;

/** Protocol 1.0 error bits (e-manual): angle limit 0x02, range 0x08, checksum 0x10, instruction 0x40. */
const ERROR_1: Record<ServoRefusal | 'instruction' | 'crc', number> = {
  angle_limit: 0x02,
  range: 0x08,
  crc: 0x10,
  instruction: 0x40,
  // 1.0 has no access or length error: a write to a read-only item is answered as a range error.
  access: 0x08,
  length: 0x08,
};

/** Protocol 2.0 error numbers (e-manual): 2 instruction, 3 CRC, 4 data range, 5 data length, 7 access. */
const ERROR_2: Record<ServoRefusal | 'instruction' | 'crc', number> = {
  instruction: 0x02,
  crc: 0x03,
  range: 0x04,
  length: 0x05,
  access: 0x07,
  angle_limit: 0x04,
};

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

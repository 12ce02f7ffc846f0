/**
 * Dynamixel packets, protocol 1.0 (checksum) and 2.0 (CRC-16, byte stuffing), as bytes (docs/reference/dynamixel.md 8.1-8.2).
 * Both directions: the real backend encodes instructions and parses status packets; the bus emulator does the
 * reverse. Multi-byte values are little-endian.
 */

export type Protocol = 1 | 2;

export const BROADCAST_ID = 0xfe;

export const Instruction = {
  ping: 0x01,
  read: 0x02,
  write: 0x03,
  regWrite: 0x04,
  action: 0x05,
  factoryReset: 0x06,
  reboot: 0x08,
  status: 0x55,
  syncRead: 0x82,
  syncWrite: 0x83,
  bulkRead: 0x92,
  bulkWrite: 0x93,
} as const;

/** An instruction (host -> servo) or status (servo -> host) packet, decoded. */
export interface Packet {
  readonly id: number;
  /** Instruction code; for status packets 0x55 (protocol 2 carries it; protocol 1 has none and we use 0x55 too). */
  readonly instruction: number;
  /** Status packets only: the error byte. */
  readonly error: number;
  readonly params: Uint8Array;
}

// --- protocol 1.0 ---

export function checksum1(bytes: ArrayLike<number>, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += bytes[i]!;
  return ~sum & 0xff;
}

function encode1(id: number, code: number, params: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(params.length + 6);
  out[0] = 0xff;
  out[1] = 0xff;
  out[2] = id;
  out[3] = params.length + 2;
  out[4] = code;
  out.set(params as ArrayLike<number>, 5);
  out[out.length - 1] = checksum1(out, 2, out.length - 1);
  return out;
}

// --- protocol 2.0 ---

const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** CRC-16 (polynomial 0x8005, initial 0, unreflected) of bytes[from, to). */
export function crc16(bytes: ArrayLike<number>, from = 0, to = bytes.length): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!) & 0xffff;
  return crc;
}

/** Inserts an 0xFD after every FF FF FD in the instruction/params region, as the e-manual's byte stuffing asks. */
export function stuff(body: ArrayLike<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < body.length; i++) {
    out.push(body[i]!);
    const n = out.length;
    if (n >= 3 && out[n - 3] === 0xff && out[n - 2] === 0xff && out[n - 1] === 0xfd) out.push(0xfd);
  }
  return out;
}

/**
 * Whether body[i] is an 0xFD stuff() put there: one that follows FF FF FD in the bytes as received (not in the bytes
 * kept: data FF FF FD FD is sent FF FF FD FD FD, and its own FD stays).
 */
const stuffedAt = (body: ArrayLike<number>, i: number): boolean =>
  i >= 3 && body[i] === 0xfd && body[i - 1] === 0xfd && body[i - 2] === 0xff && body[i - 3] === 0xff;

/** Removes the 0xFD stuff() put after each FF FF FD. */
export function unstuff(body: ArrayLike<number>): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < body.length; i++) if (!stuffedAt(body, i)) out.push(body[i]!);
  return Uint8Array.from(out);
}

function encode2(id: number, body: ArrayLike<number>): Uint8Array {
  const stuffed = stuff(body);
  const len = stuffed.length + 2;
  const out = new Uint8Array(7 + len);
  out.set([0xff, 0xff, 0xfd, 0x00, id, len & 0xff, len >> 8]);
  out.set(stuffed, 7);
  const crc = crc16(out, 0, out.length - 2);
  out[out.length - 2] = crc & 0xff;
  out[out.length - 1] = crc >> 8;
  return out;
}

// --- both ---

export function encodeInstruction(
  protocol: Protocol,
  id: number,
  instruction: number,
  params: ArrayLike<number> = [],
): Uint8Array {
  return protocol === 1
    ? encode1(id, instruction, params)
    : encode2(id, [instruction, ...Array.from(params)]);
}

export function encodeStatus(
  protocol: Protocol,
  id: number,
  error: number,
  params: ArrayLike<number> = [],
): Uint8Array {
  return protocol === 1 ? encode1(id, error, params) : encode2(id, [0x55, error, ...Array.from(params)]);
}

export const le16 = (v: number): [number, number] => [v & 0xff, (v >> 8) & 0xff];

/** Little-endian bytes of `value` over `size` bytes. */
export function toBytes(value: number, size: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < size; i++) out.push((value >> (8 * i)) & 0xff);
  return out;
}

export function fromBytes(bytes: ArrayLike<number>, offset: number, size: number): number {
  let v = 0;
  for (let i = size - 1; i >= 0; i--) v = v * 256 + bytes[offset + i]!;
  return v;
}

/** Instruction builders: the parameters of each instruction as the e-manual lays them out. */
export const instructions = {
  ping: (p: Protocol, id: number) => encodeInstruction(p, id, Instruction.ping),
  read: (p: Protocol, id: number, address: number, length: number) =>
    encodeInstruction(
      p,
      id,
      Instruction.read,
      p === 1 ? [address, length] : [...le16(address), ...le16(length)],
    ),
  write: (p: Protocol, id: number, address: number, data: ArrayLike<number>) =>
    encodeInstruction(p, id, Instruction.write, [
      ...(p === 1 ? [address] : le16(address)),
      ...Array.from(data),
    ]),
  /** One packet writing `length` bytes at `address` on every listed servo (no reply). */
  syncWrite: (
    p: Protocol,
    address: number,
    length: number,
    entries: readonly (readonly [number, ArrayLike<number>])[],
  ) => {
    const params: number[] = p === 1 ? [address, length] : [...le16(address), ...le16(length)];
    for (const [id, data] of entries) {
      if (data.length !== length)
        throw new RangeError(`sync write: ${data.length} bytes for id ${id}, expected ${length}`);
      params.push(id, ...Array.from(data));
    }
    return encodeInstruction(p, BROADCAST_ID, Instruction.syncWrite, params);
  },
  /** Protocol 2.0 only: one status packet per id, in the listed order. */
  syncRead: (address: number, length: number, ids: readonly number[]) =>
    encodeInstruction(2, BROADCAST_ID, Instruction.syncRead, [...le16(address), ...le16(length), ...ids]),
  /** Bulk read: each servo answers its own (address, length) after the previous one. */
  bulkRead: (p: Protocol, entries: readonly { id: number; address: number; length: number }[]) => {
    const params: number[] = p === 1 ? [0x00] : [];
    for (const e of entries)
      if (p === 1) params.push(e.length, e.id, e.address);
      else params.push(e.id, ...le16(e.address), ...le16(e.length));
    return encodeInstruction(p, BROADCAST_ID, Instruction.bulkRead, params);
  },
  /** Protocol 2.0 only: each servo writes its own (address, data); no reply. */
  bulkWrite: (entries: readonly { id: number; address: number; data: ArrayLike<number> }[]) => {
    const params: number[] = [];
    for (const e of entries)
      params.push(e.id, ...le16(e.address), ...le16(e.data.length), ...Array.from(e.data));
    return encodeInstruction(2, BROADCAST_ID, Instruction.bulkWrite, params);
  },
  /** A write held by the servo until ACTION. */
  regWrite: (p: Protocol, id: number, address: number, data: ArrayLike<number>) =>
    encodeInstruction(p, id, Instruction.regWrite, [
      ...(p === 1 ? [address] : le16(address)),
      ...Array.from(data),
    ]),
  action: (p: Protocol, id = BROADCAST_ID) => encodeInstruction(p, id, Instruction.action),
  /** Protocol 2.0 only: the servo restarts (RAM back to its initial values, a hardware error cleared). */
  reboot: (id: number) => encodeInstruction(2, id, Instruction.reboot),
};

/** A byte-level problem noticed while parsing (the parser skips the packet and resynchronises). */
export interface ParseIssue {
  readonly kind: 'checksum' | 'garbage';
  readonly bytes: number;
  /**
   * Instruction side only: a whole packet whose checksum/CRC fails, with the id and instruction it carries (a servo
   * answers it with the checksum or CRC error).
   */
  readonly packet?: { readonly id: number; readonly instruction: number };
}

type Taken =
  | 'incomplete'
  | 'bad'
  | { packet: Packet; end: number }
  | { badPacket: { id: number; instruction: number }; end: number };

/** No bytes held: shared, as nothing writes into a parser's held bytes. */
const NOTHING = new Uint8Array(0);

/**
 * Streaming packet parser: feed it whatever the port delivers (split packets, several packets, noise); it returns
 * every complete packet whose checksum/CRC holds and resynchronises on the next header after anything else.
 * `status` says whether it reads status packets (host side) or instruction packets (servo side). A reply's parse
 * allocates its packet and a copy of its params, little else: the bus loop parses every cycle, and its garbage is
 * what stalls it on a small board.
 */
export class PacketParser {
  #buf = NOTHING;
  readonly issues: ParseIssue[] = [];

  constructor(
    readonly protocol: Protocol,
    readonly status: boolean,
  ) {}

  /** Drops buffered bytes (before a new transaction, so a late reply cannot be taken for the next one). */
  reset(): void {
    this.#buf = NOTHING;
  }

  /** The packets complete with `chunk`; the bytes of one still partial are kept (a copy: `chunk` may be reused). */
  push(chunk: Uint8Array): Packet[] {
    // The held bytes and the chunk, or the chunk where it lies as a plain view: a Buffer's slice() would be a view
    // too, and the params below must be copies.
    let buf: Uint8Array;
    if (this.#buf.length) {
      buf = new Uint8Array(this.#buf.length + chunk.length);
      buf.set(this.#buf);
      buf.set(chunk, this.#buf.length);
    } else buf = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: Packet[] = [];
    let pos = 0;
    for (;;) {
      const start = this.#findHeader(buf, pos);
      if (start < 0) {
        // Keep a trailing partial header (FF, FF FF, FF FF FD) for the next chunk.
        let keep = buf.length;
        while (keep > pos && buf.length - keep < 3 && (buf[keep - 1] === 0xff || buf[keep - 1] === 0xfd))
          keep--;
        if (keep > pos) this.issues.push({ kind: 'garbage', bytes: keep - pos });
        pos = keep;
        break;
      }
      if (start > pos) this.issues.push({ kind: 'garbage', bytes: start - pos });
      const r = this.protocol === 1 ? this.#take1(buf, start) : this.#take2(buf, start);
      if (r === 'incomplete') {
        pos = start;
        break;
      }
      if (r === 'bad') {
        this.issues.push({ kind: 'checksum', bytes: 2 });
        pos = start + 2;
        continue;
      }
      if ('badPacket' in r) {
        // A servo reads LEN bytes, then checks them: the whole packet is gone, and it is answered.
        this.issues.push({ kind: 'checksum', bytes: r.end - start, packet: r.badPacket });
        pos = r.end;
        continue;
      }
      out.push(r.packet);
      pos = r.end;
    }
    this.#buf = pos < buf.length ? buf.slice(pos) : NOTHING;
    return out;
  }

  #findHeader(buf: Uint8Array, from: number): number {
    for (let i = from; i + 1 < buf.length; i++) {
      if (buf[i] !== 0xff || buf[i + 1] !== 0xff) continue;
      if (this.protocol === 1) {
        // FF FF FF ... : the header is the last two FFs before the id.
        if (i + 2 < buf.length && buf[i + 2] === 0xff) continue;
        return i;
      }
      if (i + 2 >= buf.length) return i;
      if (buf[i + 2] === 0xfd && (i + 3 >= buf.length || buf[i + 3] === 0x00)) return i;
    }
    return -1;
  }

  #take1(buf: Uint8Array, s: number): Taken {
    if (s + 4 > buf.length) return 'incomplete';
    const len = buf[s + 3]!;
    if (len < 2 || buf[s + 2] === 0xff) return 'bad';
    const end = s + 4 + len;
    if (end > buf.length) return 'incomplete';
    const code = buf[s + 4]!;
    if (checksum1(buf, s + 2, end - 1) !== buf[end - 1])
      return this.status ? 'bad' : { badPacket: { id: buf[s + 2]!, instruction: code }, end };
    const packet: Packet = this.status
      ? { id: buf[s + 2]!, instruction: Instruction.status, error: code, params: buf.slice(s + 5, end - 1) }
      : { id: buf[s + 2]!, instruction: code, error: 0, params: buf.slice(s + 5, end - 1) };
    return { packet, end };
  }

  #take2(buf: Uint8Array, s: number): Taken {
    if (s + 7 > buf.length) return 'incomplete';
    const len = buf[s + 5]! | (buf[s + 6]! << 8);
    if (len < 3 || len > 1000) return 'bad';
    const end = s + 7 + len;
    if (end > buf.length) return 'incomplete';
    const crc = buf[end - 2]! | (buf[end - 1]! << 8);
    if (crc16(buf, s, end - 2) !== crc)
      return this.status || buf[s + 7] === Instruction.status
        ? 'bad'
        : { badPacket: { id: buf[s + 4]!, instruction: buf[s + 7]! }, end };
    // A view when nothing was stuffed: the params below are copied out of it.
    const raw = buf.subarray(s + 7, end - 2);
    let body: Uint8Array = raw;
    for (let i = 3; i < raw.length; i++)
      if (stuffedAt(raw, i)) {
        body = unstuff(raw);
        break;
      }
    const id = buf[s + 4]!;
    const instruction = body[0]!;
    if (this.status) {
      if (instruction !== Instruction.status || body.length < 2) return 'bad';
      return { packet: { id, instruction, error: body[1]!, params: body.slice(2) }, end };
    }
    if (instruction === Instruction.status) return 'bad';
    return { packet: { id, instruction, error: 0, params: body.slice(1) }, end };
  }
}

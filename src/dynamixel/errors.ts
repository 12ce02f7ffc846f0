/** What can go wrong on a Dynamixel bus, as typed errors (the real backend counts them per motor). */
import type { Protocol } from './packet.ts';

/** Protocol 1.0 error bits (docs/reference/dynamixel.md 8.1), bit 0 first. */
export const ERROR_BITS_1 = [
  'input_voltage',
  'angle_limit',
  'overheating',
  'range',
  'checksum',
  'overload',
  'instruction',
] as const;

/** Protocol 2.0 error numbers in bits 0-6 (docs/reference/dynamixel.md 8.2); bit 7 is the hardware alert. */
export const ERROR_NUMBERS_2: Readonly<Record<number, string>> = {
  1: 'result_fail',
  2: 'instruction',
  3: 'crc',
  4: 'data_range',
  5: 'data_length',
  6: 'data_limit',
  7: 'access',
};

/** Names of the conditions an error byte reports; empty when it is 0. */
export function decodeErrorByte(protocol: Protocol, error: number): string[] {
  if (protocol === 1) return ERROR_BITS_1.filter((_, bit) => error & (1 << bit));
  const out: string[] = [];
  const n = error & 0x7f;
  if (n) out.push(ERROR_NUMBERS_2[n] ?? `error_${n}`);
  if (error & 0x80) out.push('hardware_alert');
  return out;
}

export abstract class BusError extends Error {
  abstract readonly kind: 'timeout' | 'corrupt' | 'status';
  constructor(
    readonly id: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** No (complete) answer within the timeout. */
export class TimeoutError extends BusError {
  readonly kind = 'timeout';
}

/** Bytes came back but no valid packet from this id (checksum/CRC, wrong id, wrong length). */
export class CorruptReplyError extends BusError {
  readonly kind = 'corrupt';
}

/** The servo answered with error bits set. */
export class StatusError extends BusError {
  readonly kind = 'status';
  readonly conditions: readonly string[];
  constructor(
    id: number,
    readonly protocol: Protocol,
    readonly error: number,
  ) {
    const conditions = decodeErrorByte(protocol, error);
    super(id, `servo ${id} reports ${conditions.join(', ')}`);
    this.conditions = conditions;
  }

  /** Errors about the instruction itself (the value was refused), not about the servo's health. */
  get refused(): boolean {
    return this.conditions.some((c) =>
      ['range', 'angle_limit', 'instruction', 'data_range', 'data_limit', 'data_length', 'access'].includes(
        c,
      ),
    );
  }
}

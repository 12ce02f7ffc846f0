/**
 * One emulated servo's control table: bytes at the addresses of src/dynamixel/control-table.ts. The registers the twin
 * simulates (positions, speeds, gains, torque...) live in the sim's servo behind its MotorBus; the others (return
 * delay, status return level, limits...) in this memory.
 */
import type { MotorBus } from '../core/backend.ts';
import {
  type BusLayout,
  type ControlTable,
  controlTable,
  decodeBusValue,
  encodeBusValue,
  invalidBusValue,
} from '../dynamixel/control-table.ts';
import { type BusRegister, type ModelSpec, degToPosition, positionToDeg } from '../dynamixel/registers.ts';

/** A refused access: 'range' for a value out of range, 'access' for a read-only item or an address past the table. */
export type ServoRefusal = 'range' | 'access';

export class EmulatedServo {
  readonly table: ControlTable;
  readonly memory: Uint8Array;
  readonly #layouts: [BusRegister, BusLayout][];

  constructor(
    readonly id: number,
    readonly spec: ModelSpec,
    private readonly sim: MotorBus,
  ) {
    this.table = controlTable(spec);
    this.memory = new Uint8Array(this.table.size);
    for (const it of this.table.items)
      for (let b = 0; b < it.size; b++) this.memory[it.address + b] = ((it.init ?? 0) >> (8 * b)) & 0xff;
    this.memory[this.table.item('id').address] = id;
    this.#layouts = Object.entries(this.table.bus) as [BusRegister, BusLayout][];
  }

  get returnDelayUs(): number {
    return 2 * this.memory[this.table.item('return_delay_time').address]!;
  }

  get statusReturnLevel(): number {
    return this.memory[this.table.item('status_return_level').address]!;
  }

  #overlapping(address: number, length: number): [BusRegister, BusLayout][] {
    return this.#layouts.filter(
      ([, l]) => l.address < address + length && l.address + l.size * l.count > address,
    );
  }

  /** Reads the bytes; `offsetDeg` shifts the present position reported (the offset fault: a slipped horn). */
  async read(address: number, length: number, offsetDeg = 0): Promise<Uint8Array | ServoRefusal> {
    if (length < 1 || address + length > this.table.size) return 'access';
    for (const [reg, layout] of this.#overlapping(address, length)) {
      let value = (await this.sim.read([this.id], reg)).get(this.id)!;
      if (offsetDeg !== 0 && reg === 'present_position' && typeof value === 'number')
        value = Math.min(
          this.spec.positionSteps - 1,
          Math.max(0, degToPosition(this.spec, positionToDeg(this.spec, value) + offsetDeg)),
        );
      this.memory.set(encodeBusValue(layout, value), layout.address);
    }
    return this.memory.slice(address, address + length);
  }

  /** Writes all of `data` or nothing, as the firmware does. */
  async write(address: number, data: Uint8Array): Promise<ServoRefusal | undefined> {
    if (data.length < 1 || address + data.length > this.table.size) return 'access';
    const next = this.memory.slice();
    next.set(data, address);
    const touched = this.table.itemsIn(address, data.length);
    for (const it of touched) {
      if (it.access !== 'RW') return 'access';
      let v = 0;
      for (let b = it.size - 1; b >= 0; b--) v = v * 256 + next[it.address + b]!;
      if (v < it.min || v > it.max) return 'range';
    }
    const writes: [BusRegister, number | number[]][] = [];
    for (const [reg, layout] of this.#overlapping(address, data.length)) {
      const value = decodeBusValue(layout, next, layout.address);
      if (invalidBusValue(layout, value)) return 'range';
      writes.push([reg, value]);
    }
    for (const [reg, value] of writes) {
      try {
        await this.sim.write(reg, new Map([[this.id, value]]));
      } catch {
        return 'range';
      }
    }
    this.memory.set(data, address);
    return undefined;
  }
}

/**
 * One emulated servo's control table: bytes at the addresses of src/dynamixel/control-table.ts. The registers the twin
 * simulates (positions, speeds, gains, torque...) live in the sim's servo behind its MotorBus; the others (return
 * delay, status return level, limits, id, baud...) in this memory. What the e-manuals say of each item's behaviour
 * and where this follows them: docs/emulator.md, "What the emulator models".
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

/**
 * A refused access: 'range' for a value out of range, 'access' for a read-only item, an address past the table or
 * (XL-320) an EEPROM item while torque is on, 'length' (protocol 2.0) for a write covering part of a 2-byte item,
 * 'angle_limit' (protocol 1.0) for a goal outside the CW/CCW angle limits.
 */
export type ServoRefusal = 'range' | 'access' | 'length' | 'angle_limit';

/** XL-320 baud register values (e-manual): 0 = 9600, 1 = 57600, 2 = 115200, 3 = 1 Mbps. */
const XL320_BAUDS = [9600, 57_600, 115_200, 1_000_000] as const;
/** The first RAM item's address (AX, MX, XL-320): what a reboot resets and EEPROM locking spares. */
const RAM_START = 24;

/** The baud register value of `baud` for this model (AX/MX: 2 Mbps / (value + 1); XL-320: its table). */
export function baudRegister(spec: ModelSpec, baud: number): number {
  if (spec.name === 'XL-320') {
    const i = XL320_BAUDS.findIndex((b) => Math.abs(b - baud) / b < 0.03);
    return i < 0 ? 3 : i;
  }
  return Math.max(0, Math.min(254, Math.round(2_000_000 / baud - 1)));
}

/** The rate (bps) a baud register value selects. */
export function baudOfRegister(spec: ModelSpec, value: number): number {
  if (spec.name === 'XL-320') return XL320_BAUDS[value] ?? 1_000_000;
  // MX extras (e-manual): 250 = 2.25 Mbps, 251 = 2.5 Mbps, 252 = 3 Mbps.
  if (spec.name !== 'AX-12' && value >= 250 && value <= 252)
    return [2_250_000, 2_500_000, 3_000_000][value - 250]!;
  return 2_000_000 / (value + 1);
}

export class EmulatedServo {
  readonly table: ControlTable;
  readonly memory: Uint8Array;
  readonly #layouts: [BusRegister, BusLayout][];
  /** The id it answers at: the id register, which a write changes (the twin's motor stays `simId`). */
  id: number;
  /** Address of the Registered (AX/MX) or Registered Instruction (XL-320) item. */
  readonly #registeredAt: number;
  /** A REG_WRITE waiting for ACTION. */
  #registered: { address: number; data: Uint8Array } | undefined;
  /** Protocol 1.0: a goal was written outside the angle limits; every status carries the Angle Limit bit until a good one. */
  angleLimitError = false;
  /** Protocol 2.0: Hardware Error Status (non-zero: the alert bit in every status, torque off until REBOOT). */
  hardwareError = 0;

  constructor(
    readonly simId: number,
    readonly spec: ModelSpec,
    private readonly sim: MotorBus,
    /** The bus's rate: the baud register's power-on value. */
    baud = 1_000_000,
  ) {
    this.id = simId;
    this.table = controlTable(spec);
    this.memory = new Uint8Array(this.table.size);
    for (const it of this.table.items)
      for (let b = 0; b < it.size; b++) this.memory[it.address + b] = ((it.init ?? 0) >> (8 * b)) & 0xff;
    this.memory[this.table.item('id').address] = simId;
    this.memory[this.table.item('baud_rate').address] = baudRegister(spec, baud);
    this.#layouts = Object.entries(this.table.bus) as [BusRegister, BusLayout][];
    this.#registeredAt = this.table.items.find((i) => i.name.startsWith('registered'))!.address;
  }

  #byte(name: string): number {
    return this.memory[this.table.item(name).address]!;
  }

  get returnDelayUs(): number {
    return 2 * this.#byte('return_delay_time');
  }

  get statusReturnLevel(): number {
    return this.#byte('status_return_level');
  }

  /** The rate it listens and answers at. */
  get baud(): number {
    return baudOfRegister(this.spec, this.#byte('baud_rate'));
  }

  #overlapping(address: number, length: number): [BusRegister, BusLayout][] {
    return this.#layouts.filter(
      ([, l]) => l.address < address + length && l.address + l.size * l.count > address,
    );
  }

  async #simValue(reg: BusRegister): Promise<number> {
    return (await this.sim.read([this.simId], reg)).get(this.simId) as number;
  }

  /** Reads the bytes; `offsetDeg` shifts the present position reported (the offset fault: a slipped horn). */
  async read(address: number, length: number, offsetDeg = 0): Promise<Uint8Array | ServoRefusal> {
    if (length < 1 || address + length > this.table.size) return 'access';
    for (const [reg, layout] of this.#overlapping(address, length)) {
      let value = (await this.sim.read([this.simId], reg)).get(this.simId)!;
      if (offsetDeg !== 0 && reg === 'present_position' && typeof value === 'number')
        value = Math.min(
          this.spec.positionSteps - 1,
          Math.max(0, degToPosition(this.spec, positionToDeg(this.spec, value) + offsetDeg)),
        );
      this.memory.set(encodeBusValue(layout, value), layout.address);
    }
    const moving = this.table.item('moving');
    if (moving.address >= address && moving.address < address + length)
      // The shaft turns: Moving is 1 (e-manual: "goal position command execution is in progress").
      this.memory[moving.address] = (await this.#simValue('present_speed')) % 1024 > 0 ? 1 : 0;
    this.memory[this.#registeredAt] = this.#registered ? 1 : 0;
    if (this.spec.protocol === 2)
      this.memory[this.table.item('hardware_error_status').address] = this.hardwareError;
    return this.memory.slice(address, address + length);
  }

  /** What a write of `data` at `address` would be refused for, and the bus registers it changes. */
  async #check(
    address: number,
    data: Uint8Array,
  ): Promise<{ refusal: ServoRefusal } | { writes: [BusRegister, number | number[]][] }> {
    if (data.length < 1 || address + data.length > this.table.size) return { refusal: 'access' };
    const limits = this.table.bus.angle_limit!;
    this.memory.set(
      encodeBusValue(limits, (await this.sim.read([this.simId], 'angle_limit')).get(this.simId)!),
      limits.address,
    );
    const next = this.memory.slice();
    next.set(data, address);
    const touched = this.table.itemsIn(address, data.length);
    for (const it of touched) {
      if (it.access !== 'RW') return { refusal: 'access' };
      // Protocol 2.0 refuses a write covering part of an item (Data Length Error); 1.0 takes the byte.
      if (this.spec.protocol === 2 && (it.address < address || it.address + it.size > address + data.length))
        return { refusal: 'length' };
      let v = 0;
      for (let b = it.size - 1; b >= 0; b--) v = v * 256 + next[it.address + b]!;
      if (v < it.min || v > it.max) return { refusal: 'range' };
    }
    // XL-320: the EEPROM area is locked while torque is on (Access Error).
    if (this.spec.name === 'XL-320' && address < RAM_START && (await this.#simValue('torque_enable')) === 1)
      return { refusal: 'access' };
    const writes: [BusRegister, number | number[]][] = [];
    for (const [reg, layout] of this.#overlapping(address, data.length)) {
      const value = decodeBusValue(layout, next, layout.address);
      if (invalidBusValue(layout, value)) return { refusal: 'range' };
      writes.push([reg, value]);
    }
    const goal = writes.find(([reg]) => reg === 'goal_position');
    if (goal && this.spec.protocol === 1) {
      const [cw, ccw] = [
        fromMemory(next, this.table.item('cw_angle_limit').address),
        fromMemory(next, this.table.item('ccw_angle_limit').address),
      ];
      const wheel = cw === 0 && ccw === 0;
      if (!wheel && ((goal[1] as number) < cw || (goal[1] as number) > ccw))
        return { refusal: 'angle_limit' };
    }
    return { writes };
  }

  /** Writes all of `data` or nothing, as the firmware does. */
  async write(address: number, data: Uint8Array): Promise<ServoRefusal | undefined> {
    const checked = await this.#check(address, data);
    if ('refusal' in checked) {
      // The goal is not taken; the Angle Limit bit stays in its status packets until a goal inside the limits.
      if (checked.refusal === 'angle_limit') this.angleLimitError = true;
      return checked.refusal;
    }
    for (const [reg, value] of checked.writes) {
      if (reg === 'goal_position') this.angleLimitError = false;
      // In hardware error the torque stays off until a reboot (e-manual, Hardware Error Status / Shutdown).
      if (reg === 'torque_enable' && value === 1 && this.hardwareError) continue;
      try {
        await this.sim.write(reg, new Map([[this.simId, value]]));
      } catch {
        return 'range';
      }
    }
    this.memory.set(data, address);
    this.id = this.#byte('id');
    return undefined;
  }

  /** REG_WRITE: checked now, held until ACTION (the Registered item reads 1 meanwhile). */
  async regWrite(address: number, data: Uint8Array): Promise<ServoRefusal | undefined> {
    const checked = await this.#check(address, data);
    if ('refusal' in checked) return checked.refusal;
    this.#registered = { address, data: data.slice() };
    return undefined;
  }

  /** ACTION: runs the held REG_WRITE; false when there was none (protocol 1.0 answers Instruction Error). */
  async action(): Promise<boolean> {
    const held = this.#registered;
    if (!held) return false;
    this.#registered = undefined;
    await this.write(held.address, held.data);
    return true;
  }

  /** Protocol 2.0 hardware alert: Hardware Error Status set and torque off, until a reboot. */
  async alert(status: number): Promise<void> {
    this.hardwareError = status;
    await this.sim.write('torque_enable', new Map([[this.simId, 0]]));
    this.memory[this.table.item('torque_enable').address] = 0;
  }

  /**
   * REBOOT: the RAM area back to its power-on values (torque off, LED off, gains, torque limit = max torque, goal =
   * where it stands), the EEPROM area kept, a hardware error cleared.
   */
  async reboot(): Promise<void> {
    this.hardwareError = 0;
    this.#registered = undefined;
    this.angleLimitError = false;
    const image = this.memory.slice();
    for (const it of this.table.items)
      if (it.address >= RAM_START && it.access === 'RW' && it.init !== undefined)
        for (let b = 0; b < it.size; b++) image[it.address + b] = (it.init >> (8 * b)) & 0xff;
    const maxTorque = this.table.item('max_torque').address;
    image.set(this.memory.subarray(maxTorque, maxTorque + 2), this.table.item('torque_limit').address);
    const present = await this.#simValue('present_position');
    image.set(
      encodeBusValue(this.table.bus.goal_position!, present),
      this.table.item('goal_position').address,
    );
    for (const [reg, layout] of this.#layouts) {
      if (layout.address < RAM_START || layout.items.some((i) => i.access !== 'RW')) continue;
      await this.sim
        .write(reg, new Map([[this.simId, decodeBusValue(layout, image, layout.address)]]))
        .catch(() => {});
    }
    this.memory.set(image);
  }
}

function fromMemory(bytes: Uint8Array, address: number): number {
  return bytes[address]! | (bytes[address + 1]! << 8);
}

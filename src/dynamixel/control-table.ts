/**
 * The servos' control tables (docs/reference/dynamixel.md 8.3): every item's address, size, access, initial value and range, per model,
 * and where each bus register (src/dynamixel/registers.ts BusRegister) lives in them. The real backend encodes its packets
 * from these tables, the bus emulator answers from them, and the model facts they need (model number, encoder steps)
 * come from the ModelSpec, so sim and real share one description of the servos.
 */
import { type BusRegister, type ModelSpec, MODELS } from './registers.ts';

export interface ControlItem {
  /** ROBOTIS item name in snake case. */
  readonly name: string;
  readonly address: number;
  readonly size: 1 | 2;
  readonly access: 'R' | 'RW';
  /** Value after power-on (undefined: depends on the servo's state). */
  readonly init?: number;
  /** Accepted range of a write (the servo's Range error outside it). */
  readonly min: number;
  readonly max: number;
  /** Which raw <-> SI conversion of registers.ts applies (docs/reference/dynamixel.md 8.5). */
  readonly unit?:
    | 'position'
    | 'speed'
    | 'load'
    | 'torque_percent'
    | 'voltage'
    | 'celsius'
    | 'current'
    | 'pid_gain'
    | 'return_delay';
}

/** Where one bus register sits: `count` consecutive items of `size` bytes from `address` (pid is D, I, P). */
export interface BusLayout {
  readonly address: number;
  readonly size: 1 | 2;
  readonly count: number;
  readonly items: readonly ControlItem[];
}

export interface ControlTable {
  readonly model: ModelSpec['name'];
  readonly items: readonly ControlItem[];
  /** The bus registers this model has. */
  readonly bus: Readonly<Partial<Record<BusRegister, BusLayout>>>;
  /** Address just past the last item. */
  readonly size: number;
  item(name: string): ControlItem;
  /** The items a [address, address + length) range touches. */
  itemsIn(address: number, length: number): ControlItem[];
}

type ItemRow = [
  name: string,
  address: number,
  size: 1 | 2,
  access: 'R' | 'RW',
  init: number | undefined,
  min: number,
  max: number,
  unit?: ControlItem['unit'],
];

/** AX-12A: the protocol 1.0 layout the MX-28/64 start from. */
function ax12Rows(spec: ModelSpec): ItemRow[] {
  const top = spec.positionSteps - 1;
  return [
    ['model_number', 0, 2, 'R', spec.modelNumber, 0, 65535],
    ['firmware_version', 2, 1, 'R', 24, 0, 255],
    ['id', 3, 1, 'RW', 1, 0, 253],
    ['baud_rate', 4, 1, 'RW', 1, 0, 254],
    ['return_delay_time', 5, 1, 'RW', 250, 0, 254, 'return_delay'],
    ['cw_angle_limit', 6, 2, 'RW', 0, 0, top, 'position'],
    ['ccw_angle_limit', 8, 2, 'RW', top, 0, top, 'position'],
    ['temperature_limit', 11, 1, 'RW', spec.maxTemperature, 0, 150, 'celsius'],
    ['min_voltage_limit', 12, 1, 'RW', 60, 50, 250, 'voltage'],
    ['max_voltage_limit', 13, 1, 'RW', 140, 50, 250, 'voltage'],
    ['max_torque', 14, 2, 'RW', 1023, 0, 1023, 'torque_percent'],
    ['status_return_level', 16, 1, 'RW', 2, 0, 2],
    ['alarm_led', 17, 1, 'RW', 36, 0, 127],
    ['shutdown', 18, 1, 'RW', 36, 0, 127],
    ['torque_enable', 24, 1, 'RW', 0, 0, 1],
    ['led', 25, 1, 'RW', 0, 0, 1],
    ['cw_compliance_margin', 26, 1, 'RW', 1, 0, 255],
    ['ccw_compliance_margin', 27, 1, 'RW', 1, 0, 255],
    ['cw_compliance_slope', 28, 1, 'RW', 32, 0, 254],
    ['ccw_compliance_slope', 29, 1, 'RW', 32, 0, 254],
    ['goal_position', 30, 2, 'RW', undefined, 0, top, 'position'],
    ['moving_speed', 32, 2, 'RW', 0, 0, 2047, 'speed'],
    ['torque_limit', 34, 2, 'RW', 1023, 0, 1023, 'torque_percent'],
    ['present_position', 36, 2, 'R', undefined, 0, top, 'position'],
    ['present_speed', 38, 2, 'R', 0, 0, 2047, 'speed'],
    ['present_load', 40, 2, 'R', 0, 0, 2047, 'load'],
    ['present_voltage', 42, 1, 'R', undefined, 0, 255, 'voltage'],
    ['present_temperature', 43, 1, 'R', undefined, 0, 255, 'celsius'],
    ['registered', 44, 1, 'R', 0, 0, 1],
    ['moving', 46, 1, 'R', 0, 0, 1],
    ['lock', 47, 1, 'RW', 0, 0, 1],
    ['punch', 48, 2, 'RW', 32, 0, 1023],
  ];
}

function mxRows(spec: ModelSpec): ItemRow[] {
  const replaced = new Map<string, ItemRow>([
    ['baud_rate', ['baud_rate', 4, 1, 'RW', 34, 0, 254]],
    ['max_voltage_limit', ['max_voltage_limit', 13, 1, 'RW', 160, 50, 250, 'voltage']],
    ['cw_compliance_margin', ['d_gain', 26, 1, 'RW', 0, 0, 254, 'pid_gain']],
    ['ccw_compliance_margin', ['i_gain', 27, 1, 'RW', 0, 0, 254, 'pid_gain']],
    ['cw_compliance_slope', ['p_gain', 28, 1, 'RW', 32, 0, 254, 'pid_gain']],
    ['punch', ['punch', 48, 2, 'RW', 0, 0, 1023]],
  ]);
  const rows = ax12Rows(spec)
    .filter(([name]) => name !== 'ccw_compliance_slope' && name !== 'led')
    .map((row) => replaced.get(row[0]) ?? row);
  rows.push(
    ['led', 25, 1, 'RW', 0, 0, 1],
    ['multi_turn_offset', 20, 2, 'RW', 0, 0, 65535],
    ['resolution_divider', 22, 1, 'RW', 1, 1, 4],
    ['realtime_tick', 50, 2, 'R', 0, 0, 32767],
    ['goal_acceleration', 73, 1, 'RW', 0, 0, 254],
  );
  if (spec.name === 'MX-64')
    rows.push(
      ['current', 68, 2, 'RW', 2048, 0, 4095, 'current'],
      ['torque_control_mode_enable', 70, 1, 'RW', 0, 0, 1],
      ['goal_torque', 71, 2, 'RW', 0, 0, 2047],
    );
  return rows;
}

function xl320Rows(spec: ModelSpec): ItemRow[] {
  const top = spec.positionSteps - 1;
  return [
    ['model_number', 0, 2, 'R', spec.modelNumber, 0, 65535],
    ['firmware_version', 2, 1, 'R', 29, 0, 255],
    ['id', 3, 1, 'RW', 1, 0, 252],
    ['baud_rate', 4, 1, 'RW', 3, 0, 3],
    ['return_delay_time', 5, 1, 'RW', 250, 0, 254, 'return_delay'],
    ['cw_angle_limit', 6, 2, 'RW', 0, 0, top, 'position'],
    ['ccw_angle_limit', 8, 2, 'RW', top, 0, top, 'position'],
    ['control_mode', 11, 1, 'RW', 2, 1, 2],
    ['temperature_limit', 12, 1, 'RW', spec.maxTemperature, 0, 150, 'celsius'],
    ['min_voltage_limit', 13, 1, 'RW', 60, 50, 250, 'voltage'],
    ['max_voltage_limit', 14, 1, 'RW', 90, 50, 250, 'voltage'],
    ['max_torque', 15, 2, 'RW', 1023, 0, 1023, 'torque_percent'],
    ['status_return_level', 17, 1, 'RW', 2, 0, 2],
    ['shutdown', 18, 1, 'RW', 3, 0, 7],
    ['torque_enable', 24, 1, 'RW', 0, 0, 1],
    ['led', 25, 1, 'RW', 0, 0, 7],
    ['d_gain', 27, 1, 'RW', 0, 0, 254, 'pid_gain'],
    ['i_gain', 28, 1, 'RW', 0, 0, 254, 'pid_gain'],
    ['p_gain', 29, 1, 'RW', 32, 0, 254, 'pid_gain'],
    ['goal_position', 30, 2, 'RW', undefined, 0, top, 'position'],
    ['moving_speed', 32, 2, 'RW', 0, 0, 2047, 'speed'],
    ['torque_limit', 35, 2, 'RW', 1023, 0, 1023, 'torque_percent'],
    ['present_position', 37, 2, 'R', undefined, 0, top, 'position'],
    ['present_speed', 39, 2, 'R', 0, 0, 2047, 'speed'],
    ['present_load', 41, 2, 'R', 0, 0, 2047, 'load'],
    ['present_voltage', 45, 1, 'R', undefined, 0, 255, 'voltage'],
    ['present_temperature', 46, 1, 'R', undefined, 0, 255, 'celsius'],
    ['registered_instruction', 47, 1, 'R', 0, 0, 1],
    ['moving', 49, 1, 'R', 0, 0, 1],
    ['hardware_error_status', 50, 1, 'R', 0, 0, 255],
    ['punch', 51, 2, 'RW', 32, 0, 1023],
  ];
}

/** Bus register -> the control-table items holding it, in wire order. */
const BUS_ITEMS: Readonly<Record<BusRegister, readonly string[]>> = {
  torque_enable: ['torque_enable'],
  goal_position: ['goal_position'],
  moving_speed: ['moving_speed'],
  torque_limit: ['torque_limit'],
  present_position: ['present_position'],
  present_speed: ['present_speed'],
  present_load: ['present_load'],
  present_voltage: ['present_voltage'],
  present_temperature: ['present_temperature'],
  present_current: ['current'],
  pid: ['d_gain', 'i_gain', 'p_gain'],
  compliance_margin: ['cw_compliance_margin', 'ccw_compliance_margin'],
  compliance_slope: ['cw_compliance_slope', 'ccw_compliance_slope'],
  led: ['led'],
  control_mode: ['control_mode'],
  angle_limit: ['cw_angle_limit', 'ccw_angle_limit'],
};

function buildTable(spec: ModelSpec): ControlTable {
  const rows =
    spec.name === 'XL-320' ? xl320Rows(spec) : spec.name === 'AX-12' ? ax12Rows(spec) : mxRows(spec);
  const items: ControlItem[] = rows
    .map(([name, address, size, access, init, min, max, unit]) => ({
      name,
      address,
      size,
      access,
      init,
      min,
      max,
      unit,
    }))
    .sort((a, b) => a.address - b.address);
  const byName = new Map(items.map((i) => [i.name, i]));
  const bus: Partial<Record<BusRegister, BusLayout>> = {};
  for (const [reg, names] of Object.entries(BUS_ITEMS) as [BusRegister, readonly string[]][]) {
    const found = names.map((n) => byName.get(n));
    if (found.some((i) => !i)) continue;
    const layoutItems = found as ControlItem[];
    const first = layoutItems[0]!;
    // Sanity of the table itself: the items of one register are contiguous and of one size.
    layoutItems.forEach((it, k) => {
      if (it.address !== first.address + k * first.size || it.size !== first.size)
        throw new Error(`${spec.name} control table: ${reg} items are not contiguous`);
    });
    bus[reg] = { address: first.address, size: first.size, count: layoutItems.length, items: layoutItems };
  }
  const last = items[items.length - 1]!;
  return {
    model: spec.name,
    items,
    bus,
    size: last.address + last.size,
    item(name) {
      const it = byName.get(name);
      if (!it) throw new Error(`${spec.name} has no control-table item "${name}"`);
      return it;
    },
    itemsIn(address, length) {
      return items.filter((it) => it.address < address + length && it.address + it.size > address);
    },
  };
}

const TABLES: ReadonlyMap<ModelSpec['name'], ControlTable> = new Map(
  Object.values(MODELS).map((spec) => [spec.name, buildTable(spec)]),
);

export function controlTable(spec: ModelSpec): ControlTable {
  return TABLES.get(spec.name)!;
}

/** The model a `model_number` read or ping reports. */
export function modelByNumber(modelNumber: number): ModelSpec | undefined {
  return Object.values(MODELS).find((m) => m.modelNumber === modelNumber);
}

/** Bytes of a bus register's value (a number, or one number per item for pid/compliance/angle limits). */
export function encodeBusValue(layout: BusLayout, value: number | readonly number[]): number[] {
  const values = typeof value === 'number' ? [value] : value;
  const out: number[] = [];
  for (const v of values) for (let b = 0; b < layout.size; b++) out.push((v >> (8 * b)) & 0xff);
  return out;
}

export function decodeBusValue(layout: BusLayout, bytes: ArrayLike<number>, offset = 0): number | number[] {
  const values: number[] = [];
  for (let k = 0; k < layout.count; k++) {
    let v = 0;
    for (let b = layout.size - 1; b >= 0; b--) v = v * 256 + bytes[offset + k * layout.size + b]!;
    values.push(v);
  }
  return layout.count === 1 ? values[0]! : values;
}

/** Why a value cannot be written to this register, or undefined when it can (integers inside every item's range). */
export function invalidBusValue(layout: BusLayout, value: unknown): string | undefined {
  const values =
    typeof value === 'number' ? [value] : Array.isArray(value) ? (value as unknown[]) : undefined;
  if (!values || values.length !== layout.count || (layout.count > 1 && typeof value === 'number'))
    return layout.count === 1 ? 'needs one integer' : `needs ${layout.count} integers`;
  for (const [k, v] of values.entries()) {
    const it = layout.items[k]!;
    if (it.access !== 'RW') return `${it.name} is read-only`;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < it.min || v > it.max)
      return `${it.name} must be an integer from ${it.min} to ${it.max}`;
  }
  return undefined;
}

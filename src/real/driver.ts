// Over 400 lines: the driver's reads, writes, retries and health are one state machine per bus.
/**
 * The Dynamixel bus itself, owned by the bus process (src/real/bus-process.ts): pings at start-up, register reads and
 * writes turned into as few packets as the protocol allows, per-motor health.
 * - present position, speed and load come from one sync read (2.0) or bulk read (MX on 1.0) of the 6-byte block,
 *   the speed and load parts served from that block to the reads that follow in the same cycle;
 * - a write is one sync write per register (and per address, where models differ);
 * - a reply missing or corrupt is retried once, then counted against the motor; a motor silent for LOST_AFTER reads
 *   in a row is "lost" (left out of reads, so its routes answer 503; the others keep working) until it answers
 *   again, when everything written to it meanwhile is sent again, so no command is dropped.
 */
import {
  type BusLayout,
  controlTable,
  decodeBusValue,
  encodeBusValue,
  invalidBusValue,
} from '../dynamixel/control-table.ts';
import { ConfigError, RobotError, badRequest, hardwareError } from '../core/errors.ts';
import {
  type BusRegister,
  type ModelSpec,
  type RawValue,
  degToPosition,
  modelSpec,
} from '../dynamixel/registers.ts';
import type { MotorModelName } from '../dynamixel/registers.ts';
import { type Protocol, instructions, fromBytes } from '../dynamixel/packet.ts';
import { type BusError, StatusError, decodeErrorByte } from '../dynamixel/errors.ts';
import { type Replies, SerialLink } from './link.ts';
import type { SerialBinding } from './serial-binding.ts';

/** Consecutive failed reads after which a motor counts as gone. */
const LOST_AFTER = 5;
/** Torque-off writes at close, each read back (the first is the one that counts on a clean line). */
const CLOSE_ATTEMPTS = 3;
/** Bytes of the present position + speed + load block. */
const BLOCK = 6;
/** Pings per motor at start-up before it counts as missing. */
const PING_ATTEMPTS = 3;
/**
 * How long a start-up ping waits for its reply beyond wire time, ms (at least the link's timeout). A servo answers
 * within a millisecond; the margin is for the host: a Raspberry Pi or a busy machine compiling the server's code at
 * start may not read the port for tens of ms, and a servo that is there must not be reported missing for that. A
 * missing servo costs PING_ATTEMPTS times this, once.
 */
const PING_TIMEOUT_MS = 150;
/** How long a rebooted servo may take to answer a ping again, ms (the XL-320 boots in well under this). */
const REBOOT_WAIT_MS = 1000;
/**
 * Error-byte conditions about the servo's state (kept per motor while its replies carry them), as opposed to those
 * about one instruction (range, instruction, checksum...), which are counted but not kept.
 */
const SERVO_CONDITIONS: ReadonlySet<string> = new Set([
  'input_voltage',
  'angle_limit',
  'overheating',
  'overload',
  'hardware_alert',
]);
/** A lost motor is asked again every PROBE_EVERY reads (not every read: each costs a timeout). */
const PROBE_EVERY = 25;
/** The speed/load of a position read serve the reads that follow within this many ms (same cycle). */
const BLOCK_REUSE_MS = 8;

/** What the bus needs to know of the robot: plain data, so that it crosses to the bus worker. */
export interface BusSetup {
  readonly path: string;
  readonly baud: number;
  readonly protocol: Protocol;
  readonly motors: readonly {
    readonly id: number;
    readonly name: string;
    readonly model: MotorModelName;
    readonly angleLimit: readonly [number, number];
  }[];
  /** Serve the motors that answer at start-up instead of stopping. */
  readonly allowMissing?: boolean;
  /** Reply timeout beyond wire time, ms. */
  readonly timeoutMs?: number;
  /** Exclusive lock on the serial port (default true). */
  readonly lock?: boolean;
}

/** Per-motor health, as GET /bus/health.json shows it. */
export interface MotorHealth {
  readonly id: number;
  readonly name: string;
  readonly model: string;
  /** Answering now. */
  online: boolean;
  timeouts: number;
  corrupt: number;
  statusErrors: number;
  /** Reads that failed twice (after the retry). */
  failedReads: number;
  lastError: string | null;
  consecutiveFailures: number;
  /** What its latest status packet reports of its state: overload, overheating, input_voltage, angle_limit... */
  conditions: string[];
  /** How the sync loop reads it: in the sync read (2.0), the bulk read (MX on 1.0), or one read of its own. */
  read: ReadMode;
}

export type ReadMode = 'sync' | 'bulk' | 'single';

/** How a motor of this model is read on this protocol until start-up finds otherwise. */
export function defaultReadMode(protocol: Protocol, model: MotorModelName): ReadMode {
  if (protocol === 2) return 'sync';
  return modelSpec(model).name === 'AX-12' ? 'single' : 'bulk';
}

/** A motor's health before its first exchange: offline until it answers, nothing counted. */
export function freshHealth(
  motor: {
    readonly id: number;
    readonly name: string;
    readonly model: MotorModelName;
  },
  protocol: Protocol,
): MotorHealth {
  return {
    id: motor.id,
    name: motor.name,
    model: modelSpec(motor.model).name,
    online: false,
    timeouts: 0,
    corrupt: 0,
    statusErrors: 0,
    failedReads: 0,
    lastError: null,
    consecutiveFailures: 0,
    conditions: [],
    read: defaultReadMode(protocol, motor.model),
  };
}

/** The layout of `reg` on motor `id`'s model; a bad request when its model has no such register. */
export function busLayout(models: ReadonlyMap<number, ModelSpec>, id: number, reg: BusRegister): BusLayout {
  const spec = models.get(id)!;
  const layout = controlTable(spec).bus[reg];
  if (!layout) throw badRequest(`motor ${id} (${spec.name}) has no ${reg} register`);
  return layout;
}

/** Unknown ids reject the whole read or write (nothing is sent). */
export function checkIds(models: ReadonlyMap<number, ModelSpec>, ids: Iterable<number>): void {
  for (const id of ids)
    if (!models.has(id))
      throw hardwareError(`motor ${id} is not on the bus`, 'check the motor ids in the robot config');
}

/** Throws what a write of `values` to `reg` would be refused for, before anything is sent. */
export function checkWrite(
  models: ReadonlyMap<number, ModelSpec>,
  reg: BusRegister,
  values: ReadonlyMap<number, RawValue>,
): void {
  checkIds(models, values.keys());
  for (const [id, v] of values) {
    const why = invalidBusValue(busLayout(models, id, reg), v);
    if (why) throw new RobotError('bad_request', `motor ${id}: ${reg} ${JSON.stringify(v)} refused: ${why}`);
  }
}

interface Block {
  readonly at: number;
  readonly values: Map<number, { speed: number; load: number }>;
}

export class BusDriver {
  readonly link: SerialLink;
  readonly models: ReadonlyMap<number, ModelSpec>;
  readonly health = new Map<number, MotorHealth>();
  /** Goes up whenever `health` changes: the sync loop reports health only then. */
  healthVersion = 0;
  #block: Block | undefined;
  #reads = 0;
  /**
   * Last good bytes per motor and (address, length), keyed address * 1024 + length (a length is under 1024): a motor
   * that misses one cycle keeps its previous values.
   */
  readonly #last = new Map<number, Map<number, Uint8Array>>();
  /** Last value written per register and motor, sent again when a lost motor comes back. */
  readonly #written = new Map<number, Map<BusRegister, RawValue>>();

  constructor(
    readonly setup: BusSetup,
    private readonly log: (line: string) => void = () => {},
    binding?: SerialBinding,
  ) {
    this.models = new Map(setup.motors.map((m) => [m.id, modelSpec(m.model)]));
    for (const m of setup.motors) this.health.set(m.id, freshHealth(m, setup.protocol));
    this.link = new SerialLink({
      path: setup.path,
      baud: setup.baud,
      protocol: setup.protocol,
      timeoutMs: setup.timeoutMs,
      lock: setup.lock,
      binding,
    });
  }

  /** Opens the port, pings every motor, sets return delay 0 and writes the configured angle limits. */
  async open(): Promise<void> {
    const { setup } = this;
    try {
      await this.link.open();
    } catch (err) {
      const msg = (err as Error).message;
      const hint = /denied|EACCES/i.test(msg)
        ? ' (add the user to the dialout group, then log in again)'
        : '';
      throw new ConfigError('--serial', `cannot open ${setup.path}: ${msg}${hint}`);
    }
    const p = this.link.protocol;
    const missing: string[] = [];
    const pingMs = Math.max(this.link.timeoutMs, PING_TIMEOUT_MS);
    for (const m of setup.motors) {
      let r = await this.link.transact(instructions.ping(p, m.id), [m.id], pingMs);
      for (let attempt = 1; attempt < PING_ATTEMPTS && !r.packets.has(m.id); attempt++)
        r = await this.link.transact(instructions.ping(p, m.id), [m.id], pingMs);
      const h = this.health.get(m.id)!;
      if (r.packets.has(m.id)) {
        h.online = true;
        const params = r.packets.get(m.id)!.params;
        const spec = this.models.get(m.id)!;
        if (p === 2 && params.length >= 2 && fromBytes(params, 0, 2) !== spec.modelNumber)
          this.log(
            `warning: motor ${m.name} (id ${m.id}) reports model number ${fromBytes(params, 0, 2)}, the config says ${spec.name}`,
          );
      } else {
        missing.push(`${m.name} (id ${m.id})`);
        h.lastError = 'no answer to ping at start-up';
      }
    }
    if (missing.length) {
      const line = `no answer from ${missing.length} of ${setup.motors.length} motors on ${setup.path}: ${missing.join(', ')}`;
      if (!setup.allowMissing) {
        await this.link.close();
        throw new ConfigError(
          '--serial',
          `${line} (check power and cables, or start with --allow-missing-motors)`,
        );
      }
      this.log(`${line}; serving the others, 503 for these`);
    }
    this.healthVersion++;
    const online = setup.motors.filter((m) => this.health.get(m.id)!.online).map((m) => m.id);
    await this.#configure(online);
    await this.#probeGroupReads(online);
  }

  /** Return delay 0 (pypot does the same: the reply follows the instruction at once) and the configured angle limits. */
  async #configure(ids: readonly number[]): Promise<void> {
    const p = this.link.protocol;
    const returnDelay = new Map<number, { address: number; ids: [number, number[]][] }>();
    for (const id of ids) {
      const address = controlTable(this.models.get(id)!).item('return_delay_time').address;
      const g = returnDelay.get(address) ?? { address, ids: [] };
      g.ids.push([id, [0]]);
      returnDelay.set(address, g);
    }
    for (const g of returnDelay.values())
      await this.link.transact(instructions.syncWrite(p, g.address, 1, g.ids), []);
    const motors = this.setup.motors.filter((m) => ids.includes(m.id));
    if (motors.length)
      await this.write(
        'angle_limit',
        new Map(
          motors.map((m) => {
            const spec = this.models.get(m.id)!;
            return [m.id, [degToPosition(spec, m.angleLimit[0]), degToPosition(spec, m.angleLimit[1])]];
          }),
        ),
      );
  }

  /**
   * Start-up: the motors the sync read (2.0) or bulk read (1.0) leaves unanswered while they answer a read of their
   * own (an adapter or firmware without it; pypot enables sync read only on FTDI adapters) are read one at a time
   * from then on, and one log line says so.
   */
  async #probeGroupReads(online: readonly number[]): Promise<void> {
    const p = this.link.protocol;
    const group = online.filter((id) => this.health.get(id)!.read !== 'single');
    if (!group.length) return;
    const address = (id: number) => this.#layout(id, 'present_position').address;
    const silent = new Set(group);
    for (let attempt = 0; attempt < 2 && silent.size; attempt++) {
      const asked = group.filter((id) => silent.has(id));
      const packet =
        p === 2
          ? instructions.syncRead(address(asked[0]!), BLOCK, asked)
          : instructions.bulkRead(
              1,
              asked.map((id) => ({ id, address: address(id), length: BLOCK })),
            );
      const r = await this.link.transact(packet, asked, Math.max(this.link.timeoutMs, PING_TIMEOUT_MS));
      for (const id of r.packets.keys()) silent.delete(id);
    }
    const single: number[] = [];
    for (const id of silent) {
      const r = await this.link.transact(
        instructions.read(p, id, address(id), BLOCK),
        [id],
        Math.max(this.link.timeoutMs, PING_TIMEOUT_MS),
      );
      if (r.packets.has(id)) single.push(id);
    }
    if (!single.length) return;
    for (const id of single) this.health.get(id)!.read = 'single';
    this.healthVersion++;
    const names = single.map((id) => `${this.health.get(id)!.name} (id ${id})`).join(', ');
    this.log(
      `the ${p === 2 ? 'sync' : 'bulk'} read gets no answer from ${names}, which answer single reads: reading ${single.length === 1 ? 'it' : 'them'} one at a time (slower cycles)`,
    );
  }

  /**
   * Reboots motor `id` (protocol 2.0: a servo in hardware error comes back with its torque off), waits for it to
   * answer again, then configures it as at start-up and sends it again everything written to it (torque, goal...),
   * so that it is as before. Resolves whether it answers again.
   */
  async reboot(id: number): Promise<boolean> {
    checkIds(this.models, [id]);
    const h = this.health.get(id)!;
    if (this.link.protocol !== 2)
      throw badRequest(`motor ${h.name} (id ${id}) speaks protocol 1.0, which has no reboot instruction`);
    await this.link.transact(instructions.reboot(id), [id], Math.max(this.link.timeoutMs, PING_TIMEOUT_MS));
    const end = performance.now() + REBOOT_WAIT_MS;
    let back = false;
    while (!back && performance.now() < end)
      back = (await this.link.transact(instructions.ping(2, id), [id], this.link.timeoutMs)).packets.has(id);
    if (!back) {
      this.log(`motor ${h.name} (id ${id}) did not answer after its reboot`);
      return false;
    }
    await this.#configure([id]);
    const regs = this.#written.get(id);
    if (regs)
      for (const [reg, value] of regs)
        if (reg !== 'angle_limit') await this.#syncWrite(reg, new Map([[id, value]]));
    h.conditions = [];
    h.online = true;
    h.consecutiveFailures = 0;
    this.healthVersion++;
    this.log(`motor ${h.name} (id ${id}) rebooted and configured again`);
    return true;
  }

  /** Leaves the servos limp (`compliant`) or holding, then closes the port. */
  async close(onClose: 'compliant' | 'hold' = 'compliant'): Promise<void> {
    if (!this.link.isOpen) return;
    if (onClose === 'compliant' && this.models.size) await this.#leaveLimp();
    await this.link.close();
  }

  /**
   * Torque off to every configured motor, lost ones included (a sync write waits for no reply, and a motor counted
   * lost under load may still hear it), then read back: a motor that missed it (noise on the line) or did not answer
   * gets it again. Leaving one stiff is the failure that matters here.
   */
  async #leaveLimp(): Promise<void> {
    let stiff = [...this.models.keys()];
    for (let attempt = 1; attempt <= CLOSE_ATTEMPTS && stiff.length; attempt++) {
      // Remembered too: a motor that answers again after missed reads is written what it was last given.
      const limp = new Map(stiff.map((id) => [id, 0]));
      this.#remember('torque_enable', limp);
      await this.#syncWrite('torque_enable', limp).catch(() => {});
      // Fresh answers only: a stale value kept from before the torque went on must not pass for limp.
      const read = await this.#readBytes(
        stiff,
        (id) => this.#layout(id, 'torque_enable').address,
        1,
        false,
      ).catch(() => new Map<number, Uint8Array>());
      stiff = stiff.filter((id) => read.get(id)?.[0] !== 0);
    }
    if (stiff.length)
      this.log(
        `closing: ${stiff.map((id) => this.health.get(id)!.name).join(', ')} did not confirm torque off after ${CLOSE_ATTEMPTS} tries`,
      );
  }

  /** Every motor's health, copied (to send to the server). */
  healthSnapshot(): MotorHealth[] {
    return [...this.health.values()].map((h) => ({ ...h }));
  }

  /** Counts one bad exchange with motor `id` (every one, retried or not). */
  #countError(id: number, err: BusError): void {
    const h = this.health.get(id);
    if (!h) return;
    this.healthVersion++;
    if (err.kind === 'timeout') h.timeouts++;
    else if (err.kind === 'corrupt') h.corrupt++;
    else h.statusErrors++;
    h.lastError = err.message;
  }

  /** A read that failed after its retry: counts towards losing the motor. */
  #readFailed(id: number, err: BusError): void {
    const h = this.health.get(id)!;
    this.healthVersion++;
    h.failedReads++;
    h.consecutiveFailures++;
    if (h.online && h.consecutiveFailures >= LOST_AFTER) {
      h.online = false;
      this.log(
        `motor ${h.name} (id ${id}) stopped answering (${err.message}); its routes answer 503 until it is back`,
      );
    }
  }

  #layout(id: number, reg: BusRegister): BusLayout {
    return busLayout(this.models, id, reg);
  }

  /** Reads `reg` of `ids`; lost motors are left out of the answer. */
  async read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    checkIds(this.models, ids);
    for (const id of ids) this.#layout(id, reg);
    if ((reg === 'present_speed' || reg === 'present_load') && this.#block) {
      const block = this.#block;
      const covered = ids.every((id) => block.values.has(id) || !this.health.get(id)!.online);
      if (performance.now() - block.at < BLOCK_REUSE_MS && covered) {
        if (reg === 'present_load') this.#block = undefined;
        const out = new Map<number, RawValue>();
        for (const id of ids) {
          const v = block.values.get(id);
          if (v) out.set(id, reg === 'present_speed' ? v.speed : v.load);
        }
        return out;
      }
    }
    if (reg === 'present_position') {
      const bytes = await this.#readBytes(ids, (id) => this.#layout(id, reg).address, BLOCK);
      const block: Block = { at: performance.now(), values: new Map() };
      const out = new Map<number, RawValue>();
      for (const [id, b] of bytes) {
        out.set(id, fromBytes(b, 0, 2));
        block.values.set(id, { speed: fromBytes(b, 2, 2), load: fromBytes(b, 4, 2) });
      }
      this.#block = block;
      return out;
    }
    const first = this.#layout(ids[0]!, reg);
    const bytes = await this.#readBytes(ids, (id) => this.#layout(id, reg).address, first.size * first.count);
    const out = new Map<number, RawValue>();
    for (const [id, b] of bytes) out.set(id, decodeBusValue(this.#layout(id, reg), b));
    return out;
  }

  /**
   * Reads `length` bytes at each motor's address in as few transactions as the protocol allows and retries the
   * failed ones once. A motor that still fails gives its last good value (unless `lastGood` is false; the failure is
   * counted); a lost motor is probed only now and then and left out of the answer until it replies.
   */
  async #readBytes(
    ids: readonly number[],
    addressOf: (id: number) => number,
    length: number,
    lastGood = true,
  ): Promise<Map<number, Uint8Array>> {
    const p = this.link.protocol;
    const probe = this.#reads++ % PROBE_EVERY === 0;
    const asked = ids.filter((id) => probe || this.health.get(id)!.online);
    const out = new Map<number, Uint8Array>();
    const failed = new Map<number, BusError>();
    const grouped = asked.filter((id) => this.health.get(id)!.read !== 'single');
    let singles = asked.filter((id) => this.health.get(id)!.read === 'single');
    if (p === 2) {
      const byAddress = new Map<number, number[]>();
      for (const id of grouped) byAddress.set(addressOf(id), [...(byAddress.get(addressOf(id)) ?? []), id]);
      for (const [address, group] of byAddress) {
        const r = await this.link.transact(instructions.syncRead(address, length, group), group);
        this.#collect(r, length, out, failed);
      }
    } else if (grouped.length > 1) {
      const entries = grouped.map((id) => ({ id, address: addressOf(id), length }));
      this.#collect(
        await this.link.transact(instructions.bulkRead(1, entries), grouped),
        length,
        out,
        failed,
      );
    } else singles = asked;
    for (const id of singles)
      this.#collect(
        await this.link.transact(instructions.read(p, id, addressOf(id), length), [id]),
        length,
        out,
        failed,
      );
    // One retry each, one motor at a time (lost motors are not retried: they had their probe).
    for (const id of [...failed.keys()]) {
      if (!this.health.get(id)!.online) continue;
      const retry = new Map<number, BusError>();
      this.#collect(
        await this.link.transact(instructions.read(p, id, addressOf(id), length), [id]),
        length,
        out,
        retry,
      );
      if (!retry.has(id)) failed.delete(id);
    }
    for (const [id, err] of failed) this.#readFailed(id, err);
    for (const id of out.keys()) {
      const h = this.health.get(id)!;
      if (!h.online || h.consecutiveFailures > 0) await this.#recovered(id);
    }
    for (const id of asked) {
      const key = addressOf(id) * 1024 + length;
      let last = this.#last.get(id);
      if (!last) this.#last.set(id, (last = new Map()));
      const fresh = out.get(id);
      if (fresh) last.set(key, fresh);
      else if (lastGood && this.health.get(id)!.online && last.has(key)) out.set(id, last.get(key)!);
    }
    return out;
  }

  #collect(r: Replies, length: number, out: Map<number, Uint8Array>, failed: Map<number, BusError>): void {
    for (const [id, err] of r.errors) {
      this.#countError(id, err);
      if (!(err instanceof StatusError)) failed.set(id, err);
    }
    for (const [id, packet] of r.packets) {
      this.#conditions(id, packet.error);
      // The data of a reply carrying error bits (overload, a hardware alert...) is the servo's: a motor that
      // reports a problem is not a silent one.
      if (packet.params.length === length) {
        out.set(id, packet.params);
        failed.delete(id);
        continue;
      }
      const err = r.errors.get(id);
      if (err instanceof StatusError && err.refused) continue;
      failed.set(id, err ?? new StatusError(id, this.link.protocol, 0));
    }
  }

  /** Keeps the servo-state conditions its status reports, and logs when they change. */
  #conditions(id: number, error: number): void {
    const h = this.health.get(id);
    if (!h || (error === 0 && h.conditions.length === 0)) return;
    const now = decodeErrorByte(this.link.protocol, error).filter((c) => SERVO_CONDITIONS.has(c));
    if (now.join() === h.conditions.join()) return;
    h.conditions = now;
    this.healthVersion++;
    this.log(
      now.length
        ? `motor ${h.name} (id ${id}) reports ${now.join(', ')}`
        : `motor ${h.name} (id ${id}) reports no error any more`,
    );
  }

  /** A motor answered: if it was failing, send it everything written meanwhile. */
  async #recovered(id: number): Promise<void> {
    const h = this.health.get(id)!;
    const wasOffline = !h.online;
    const hadFailures = h.consecutiveFailures > 0;
    if (wasOffline || hadFailures) this.healthVersion++;
    h.consecutiveFailures = 0;
    if (wasOffline) {
      h.online = true;
      this.log(`motor ${h.name} (id ${id}) answers again`);
    }
    if (!wasOffline && !hadFailures) return;
    const regs = this.#written.get(id);
    if (!regs) return;
    for (const [reg, value] of regs) await this.#syncWrite(reg, new Map([[id, value]]));
  }

  async write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void> {
    checkWrite(this.models, reg, values);
    this.#remember(reg, values);
    const online = new Map([...values].filter(([id]) => this.health.get(id)!.online));
    if (online.size) await this.#syncWrite(reg, online);
  }

  /** What a motor that comes back (after failed reads, maybe a brown-out) is written again (#recovered). */
  #remember(reg: BusRegister, values: ReadonlyMap<number, RawValue>): void {
    for (const [id, v] of values) {
      let regs = this.#written.get(id);
      if (!regs) this.#written.set(id, (regs = new Map()));
      regs.set(reg, v);
    }
  }

  /** One sync write per address (one, unless models with different tables share the bus). */
  async #syncWrite(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void> {
    const groups = new Map<number, { layout: BusLayout; entries: [number, number[]][] }>();
    for (const [id, v] of values) {
      const layout = this.#layout(id, reg);
      let g = groups.get(layout.address);
      if (!g) groups.set(layout.address, (g = { layout, entries: [] }));
      g.entries.push([id, encodeBusValue(layout, v)]);
    }
    for (const { layout, entries } of groups.values())
      await this.link.transact(
        instructions.syncWrite(this.link.protocol, layout.address, layout.size * layout.count, entries),
        [],
      );
  }
}

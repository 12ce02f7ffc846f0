/** The messages between RealBackend (the server's process) and the bus process (src/real/bus-process.ts). */
import { ConfigError, RobotError } from '../core/errors.ts';
import type { BusRegister, RawValue } from '../dynamixel/registers.ts';
import type { BusSetup, MotorHealth } from './driver.ts';
import type { CycleReport, LinkStats } from './sync-loop.ts';

export interface BusProcessSetup extends BusSetup {
  /** The sync loop's rate. */
  readonly hz: number;
  /** What the servos do when the bus closes or the server dies. */
  readonly onClose: 'compliant' | 'hold';
  /** SCHED_FIFO priority for the bus process (1-99), tried first; 0: none. */
  readonly realtimePriority: number;
  /** The bus process's nice value if real time is refused (negative: ahead of the rest); 0 leaves it. */
  readonly nice: number;
}

/** An error as it crosses to the other process; rebuilt as the same class there. */
export type WireError =
  | { readonly kind: 'config'; readonly field: string; readonly problem: string }
  | {
      readonly kind: 'robot';
      readonly code: RobotError['code'];
      readonly message: string;
      readonly tip: string;
      readonly details: string;
    }
  | { readonly kind: 'other'; readonly message: string };

export type ToBus =
  | { readonly t: 'open'; readonly setup: BusProcessSetup }
  | { readonly t: 'start' }
  | { readonly t: 'read'; readonly req: number; readonly ids: number[]; readonly reg: BusRegister }
  | { readonly t: 'write'; readonly reg: BusRegister; readonly values: [number, RawValue][] }
  | { readonly t: 'reboot'; readonly req: number; readonly id: number }
  | { readonly t: 'close'; readonly onClose: 'compliant' | 'hold' };

export type FromBus =
  | { readonly t: 'log'; readonly line: string }
  | { readonly t: 'opened'; readonly error?: WireError; readonly health: MotorHealth[] }
  | {
      readonly t: 'read';
      readonly req: number;
      readonly values?: [number, RawValue][];
      readonly error?: WireError;
      readonly health: MotorHealth[];
      readonly stats: LinkStats;
    }
  | {
      readonly t: 'rebooted';
      readonly req: number;
      /** It answered again after its reboot (and was configured as before). */
      readonly back?: boolean;
      readonly error?: WireError;
      readonly health: MotorHealth[];
      readonly stats: LinkStats;
    }
  | ({ readonly t: 'cycle' } & CycleReport);

export function toWire(err: unknown): WireError {
  if (err instanceof ConfigError && !err.file)
    return { kind: 'config', field: err.field, problem: err.message.slice(err.field.length + 2) };
  if (err instanceof RobotError)
    return { kind: 'robot', code: err.code, message: err.message, tip: err.tip, details: err.details };
  return { kind: 'other', message: err instanceof Error ? err.message : String(err) };
}

export function fromWire(err: WireError): Error {
  if (err.kind === 'config') return new ConfigError(err.field, err.problem);
  if (err.kind === 'robot') return new RobotError(err.code, err.message, err.tip, err.details);
  return new Error(err.message);
}

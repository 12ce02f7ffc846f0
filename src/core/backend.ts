import type { Clock } from './clock.ts';
import type { BusRegister, ModelSpec, RawValue } from '../dynamixel/registers.ts';

/**
 * The motor bus: values cross in raw register units (counts); conversion lives in src/dynamixel/registers.ts.
 * Reads and writes may reject with a RobotError of code 'hardware' when a motor does not answer.
 */
export interface MotorBus {
  /** Reads one register of several motors. Missing motors reject the whole read. */
  read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>>;
  /** Writes one register of several motors (a sync write on a real bus). */
  write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void>;
}

export interface Frame {
  readonly width: number;
  readonly height: number;
  /** RGB, 3 bytes per pixel, row-major. */
  readonly rgb: Uint8Array;
}

export interface Camera {
  readonly resolution: readonly [number, number];
  readonly fps: number;
  grab(): Promise<Frame>;
}

export interface Backend {
  readonly kind: 'sim' | 'real';
  readonly clock: Clock;
  readonly bus: MotorBus;
  readonly camera?: Camera;
  /** The servo models on the bus, by id. */
  readonly models: ReadonlyMap<number, ModelSpec>;
  open(): Promise<void>;
  /** Begins background work once the server is ready (the sim's stepping); optional, idempotent. */
  start?(): void;
  /**
   * A backend whose bus runs its own loop (the real one) paces the Robot's control cycles with it: resolves with the
   * bus's cycle count once it is past `after` (at once if it already is), so that each Robot cycle works on fresh
   * values and several cycles that arrived meanwhile make one Robot cycle. Rejects with an AbortError on `signal`.
   */
  waitForCycle?(after: number, signal: AbortSignal): Promise<number>;
  /** Idempotent. */
  close(): Promise<void>;
}

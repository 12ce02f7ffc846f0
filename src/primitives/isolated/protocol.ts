/**
 * Messages between the server and a custom primitive's worker thread. Plain data only (structured clone).
 * The server sends the robot's state at every control tick; the worker answers with the primitive's requests.
 */
import type { MotorCommands, MotorState } from '../../robot/motor.ts';
import type { ErrorCode } from '../../core/errors.ts';
import type { ParamSpec, PrimitiveState, ResolvedRequest, ValueType } from '../primitive.ts';

export interface MotorSnapshot {
  readonly name: string;
  readonly state: MotorState;
  readonly commands: MotorCommands;
}

export interface Declarations {
  readonly name: string;
  readonly properties: readonly { name: string; type: ValueType; readOnly: boolean }[];
  readonly methods: readonly { name: string; params: ParamSpec[] }[];
}

export type ToWorker =
  | { type: 'tick'; t: number; motors: MotorSnapshot[] }
  | { type: 'start' | 'stop' | 'pause' | 'resume'; id: number }
  | { type: 'get'; id: number; prop: string }
  | { type: 'set'; id: number; prop: string; value: unknown }
  | { type: 'call'; id: number; method: string; args: unknown[] }
  | { type: 'ping'; id: number };

export interface WireError {
  readonly code?: ErrorCode;
  readonly message: string;
  readonly tip?: string;
  readonly details?: string;
}

export type FromWorker =
  /** The worker's own code is loaded: the module's loading, under its time limit, starts now. */
  | { type: 'booted' }
  | { type: 'loaded'; declarations: Declarations }
  | { type: 'load-failed'; reason: string }
  | {
      type: 'tock';
      requests: ResolvedRequest[];
      state: PrimitiveState;
      lastError: string | undefined;
    }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: WireError }
  | { type: 'pong'; id: number }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; msg: string };

/** What the worker is given at start. */
export interface WorkerInput {
  readonly file: string;
  readonly config: unknown;
  readonly seed: number;
}

/**
 * Messages between a sharded classroom's main thread (src/classroom/shard-client.ts) and one shard's worker
 * (src/classroom/shard-host.ts). Everything in them is structured-clone data: no functions, no classes.
 */
import type { MetricsJSON } from '../http/metrics.ts';
import type { SharedOptions } from './classroom.ts';
import type { TwinSpec } from './roster.ts';
import type { ResetAnswer, TwinListing } from './twin.ts';

/** The worker's input (workerData). */
export interface ShardInput {
  /** This shard's number, and its slot in `times`. */
  readonly index: number;
  readonly twins: readonly TwinSpec[];
  /** Each of `twins`' index in the whole roster (errors name `twins.<i>`). */
  readonly rosterIndex: readonly number[];
  /** The server options every twin shares, without the logger (lines come back as messages). */
  readonly shared: Omit<SharedOptions, 'logger'>;
  readonly speed: number;
  readonly recordsDir: string;
  /** One Float64 slot per shard: each shard's scheduler time (src/sim/scheduler.ts PeerClock). */
  readonly times: SharedArrayBuffer;
  /** Sim seconds a shard may run ahead of the slowest other. */
  readonly slack: number;
}

/** What the main thread asks; each is answered by a reply with the same id. */
export type ShardRequest =
  | { readonly type: 'listen'; readonly id: number; readonly host: string }
  | { readonly type: 'start'; readonly id: number }
  | { readonly type: 'list'; readonly id: number }
  | { readonly type: 'reset'; readonly id: number; readonly name?: string }
  | { readonly type: 'metrics'; readonly id: number }
  | { readonly type: 'close'; readonly id: number };

/** The answer of each request type. */
export interface ShardAnswers {
  listen: { readonly ports: Record<string, number> };
  start: null;
  list: { readonly twins: TwinListing[]; readonly real_time_factor: number };
  reset: ResetAnswer[];
  /** Each registry of the shard (its classroom gauges, then every twin's). */
  metrics: MetricsJSON[];
  close: null;
}

/** A failure carried back: a ConfigError (start-up, listen) keeps its field; a RobotError its code and tip. */
export interface WireError {
  readonly message: string;
  readonly field?: string;
  readonly code?: string;
  readonly tip?: string;
}

export type ShardMessage =
  /** The twins are created (not yet listening, not stepping), or one could not be. */
  | { readonly type: 'started' }
  | { readonly type: 'start-failed'; readonly error: WireError }
  /** A twin's custom primitives are loaded (or reported): it is ready. */
  | { readonly type: 'ready'; readonly name: string }
  | { readonly type: 'log'; readonly level: 'info' | 'warn' | 'error' | 'debug'; readonly msg: string }
  | { readonly type: 'reply'; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly type: 'reply'; readonly id: number; readonly ok: false; readonly error: WireError };

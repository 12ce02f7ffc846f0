/**
 * The main thread's side of one shard: its worker thread (src/classroom/shard-host.ts), requests answered by id,
 * which of its twins are ready and on which ports, and its death. A shard that dies (a crash, process.exit in it,
 * terminate()) fails its pending requests and says so once through onDeath; nothing of it reaches the main port.
 */
import { Worker } from 'node:worker_threads';
import { ConfigError, RobotError, timedOut } from '../core/errors.ts';
import { entryModule } from '../core/entry.ts';
import type { Logger } from '../core/logger.ts';
import { workerBoot } from '../core/ts-worker.ts';
import type { ShardAnswers, ShardInput, ShardMessage, ShardRequest, WireError } from './shard-protocol.ts';

const ENTRY = entryModule(new URL('./shard-host.ts', import.meta.url), 'classroom-shard').href;

/** A request that takes longer than this (ms) fails; the shard is left to go on (a reset may wait on primitives). */
export const SHARD_REQUEST_MS = 10_000;

type Body<T extends ShardRequest['type']> = Omit<Extract<ShardRequest, { type: T }>, 'id' | 'type'>;

export class ShardClient {
  readonly index: number;
  readonly names: readonly string[];
  /** The worker thread (tests end it to see the classroom survive). */
  readonly worker: Worker;
  /** Resolves once every twin of the shard is created; rejects with the reason it could not be. */
  readonly started: Promise<void>;
  /** Why the shard is gone, once it is. */
  dead: string | undefined;
  onDeath: ((why: string) => void) | undefined;
  readonly #ready = new Set<string>();
  readonly #ports = new Map<string, number>();
  /** This shard's slot among the shards' scheduler times: NaN once it is gone, so it holds no one back. */
  readonly #times: Float64Array;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #ids = 0;
  #closing = false;

  constructor(input: ShardInput, logger: Logger) {
    this.index = input.index;
    this.names = input.twins.map((t) => t.name);
    this.#times = new Float64Array(input.times);
    this.worker = new Worker(workerBoot(ENTRY), { eval: true, workerData: input, execArgv: [] });
    let started!: () => void;
    let failed!: (e: Error) => void;
    this.started = new Promise<void>((resolve, reject) => ((started = resolve), (failed = reject)));
    this.started.catch(() => {});
    this.worker.on('message', (m: ShardMessage) => {
      switch (m.type) {
        case 'started':
          started();
          break;
        case 'start-failed':
          failed(fromWire(m.error));
          break;
        case 'ready':
          this.#ready.add(m.name);
          break;
        case 'log':
          // A logger without debug drops debug lines, as it does its own.
          logger[m.level]?.call(logger, m.msg);
          break;
        case 'reply': {
          const waiter = this.#pending.get(m.id);
          this.#pending.delete(m.id);
          if (m.ok) waiter?.resolve(m.value);
          else waiter?.reject(fromWire(m.error));
          break;
        }
      }
    });
    this.worker.on('error', (err) => this.#died(`its worker failed: ${err.stack ?? err.message}`));
    this.worker.on('exit', (code) => {
      this.#died(`its worker exited (code ${code})`);
      failed(new Error(`shard ${this.index} ended before its twins started (code ${code})`));
    });
  }

  /** Asks the shard; fails when it does not answer within `ms` or dies meanwhile. */
  request<T extends ShardRequest['type']>(
    type: T,
    body: Body<T>,
    ms = SHARD_REQUEST_MS,
  ): Promise<ShardAnswers[T]> {
    if (this.dead) return Promise.reject(this.offlineError());
    const id = ++this.#ids;
    return new Promise<ShardAnswers[T]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(timedOut(`shard ${this.index} did not answer "${type}" within ${ms / 1000} s`, 'ask again'));
      }, ms);
      this.#pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v as ShardAnswers[T])),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.worker.postMessage({ type, id, ...body } as ShardRequest);
    });
  }

  /** Listens on the shard's twins' ports; remembers the ports they got. */
  async listen(host: string): Promise<void> {
    const { ports } = await this.request('listen', { host });
    for (const [name, port] of Object.entries(ports)) this.#ports.set(name, port);
  }

  /** The port twin `name` listens on (undefined before listen). */
  port(name: string): number | undefined {
    return this.#ports.get(name);
  }

  /** Started, custom primitives loaded, and its shard alive. */
  ready(name: string): boolean {
    return !this.dead && this.#ready.has(name);
  }

  /** Closes the shard's twins; ends the worker after `ms` at most, whatever it is doing. */
  async close(ms: number): Promise<void> {
    this.#closing = true;
    if (!this.dead) await this.request('close', {}, ms).catch(() => undefined);
    await this.worker.terminate();
  }

  #died(why: string): void {
    if (this.dead) return;
    this.dead = why;
    this.#times[this.index] = NaN;
    const gone = this.offlineError();
    for (const w of this.#pending.values()) w.reject(gone);
    this.#pending.clear();
    if (!this.#closing) this.onDeath?.(why);
  }

  /** The 503 a request for one of its twins gets once the shard is gone. */
  offlineError(): RobotError {
    return new RobotError(
      'unavailable',
      `the twins of shard ${this.index} (${this.names.join(', ')}) are offline: ${this.dead}`,
      'the classroom must be restarted to bring them back; the other twins go on',
    );
  }
}

function fromWire(e: WireError): Error {
  if (e.field !== undefined) {
    // The shard's ConfigError already says "field: problem": keep its words, not "field: field: problem".
    const problem = e.message.startsWith(`${e.field}: `) ? e.message.slice(e.field.length + 2) : e.message;
    return new ConfigError(e.field, problem);
  }
  if (e.code) return new RobotError(e.code as RobotError['code'], e.message, e.tip ?? '');
  return new Error(e.message);
}

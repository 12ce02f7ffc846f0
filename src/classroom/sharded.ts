/**
 * A classroom whose twins step in worker threads, a shard of the class each (`--workers`): every shard has its own
 * scheduler, so the class uses every core. The main thread keeps the main port (src/classroom/main-port.ts): the
 * page, the list and resets by message, the shards' metrics merged, and each twin's requests forwarded to its own
 * port (src/classroom/forward.ts). The shards keep their sim times within SLACK_S of each other, so a CPU shortage
 * slows every twin alike (docs/decisions/0032-classroom-shards.md). A shard that dies leaves the rest serving.
 */
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ConfigError } from '../core/errors.ts';
import { type Logger, silentLogger } from '../core/logger.ts';
import { mergeMetricsJSON, refusedCounter } from '../http/metrics.ts';
import type { ClassroomOptions } from './classroom.ts';
import { Forwarder, loopbackFor } from './forward.ts';
import { buildMainApp, type ClassListing, unknownTwin } from './main-port.ts';
import { ShardClient } from './shard-client.ts';
import { type ResetAnswer, type TwinListing, round, shortOfCpu, twinsGauge } from './twin.ts';

/** Sim seconds a shard may run ahead of the slowest other: a few of the schedulers' 10 ms wakes. */
export const SLACK_S = 0.05;
/** At close, each shard may take this long (ms) to close its twins before its worker is ended. */
const SHARD_CLOSE_MS = 1000;

export interface ShardedOptions extends ClassroomOptions {
  /** Sim seconds per wall second (a sharded class runs in real time: tests at speed 'manual' use Classroom). */
  readonly speed: number;
  /** Worker threads (at most one per twin). */
  readonly workers: number;
}

/** `--workers=auto`: one shard per core, no more shards than twins. */
export function autoWorkers(twins: number): number {
  return Math.max(1, Math.min(os.availableParallelism(), twins));
}

export class ShardedClassroom {
  readonly app: FastifyInstance;
  readonly shards: readonly ShardClient[];
  readonly speed: number;
  readonly #shardOf = new Map<string, ShardClient>();
  /** Each twin's last line in the list: what the list shows of a shard that does not answer. */
  readonly #last = new Map<string, TwinListing>();
  readonly #order: string[];
  readonly #forwarder = new Forwarder();
  readonly #registry = new Registry();
  #host = '127.0.0.1';
  #closing: Promise<void> | undefined;

  private constructor(opts: ShardedOptions, shards: ShardClient[], logger: Logger) {
    this.shards = shards;
    this.speed = opts.speed;
    this.#order = opts.twins.map((t) => t.name);
    for (const shard of shards) for (const name of shard.names) this.#shardOf.set(name, shard);
    for (const spec of opts.twins)
      this.#last.set(spec.name, {
        name: spec.name,
        robot: spec.robot,
        port: spec.port,
        url: `/twins/${spec.name}/`,
        ready: false,
        online: true,
        real_time_factor: 0,
        sim_time: 0,
        running_primitives: [],
        last_request: null,
      });
    collectDefaultMetrics({ register: this.#registry });
    // The twins of dead shards, not ready; the live shards count their own.
    twinsGauge(this.#registry, () => {
      const offline = shards.filter((s) => s.dead).reduce((n, s) => n + s.names.length, 0);
      return { ready: 0, total: offline };
    });
    const shardOf = this.#shardOf;
    const refused = refusedCounter([this.#registry]);
    const tokens = new Map(opts.twins.map((t) => [t.name, t.token]));
    this.app = buildMainApp(
      {
        has: (name) => shardOf.has(name),
        list: () => this.classList(),
        reset: (name) => this.reset(name),
        resetAll: () => this.resetAll(),
        metrics: () => this.metrics(),
        waiting: () => this.#order.filter((name) => !shardOf.get(name)!.ready(name)),
        unavailable: (name) => {
          const shard = shardOf.get(name)!;
          return shard.dead ? shard.offlineError() : undefined;
        },
        serve: (name, req, res) => this.#forwarder.forward(this.#address(name), req, res),
        upgrade: (name, req, socket, head) => this.#forwarder.upgrade(this.#address(name), req, socket, head),
      },
      {
        logger,
        timeouts: opts.timeouts,
        access: opts.access,
        twinToken: (name) => tokens.get(name),
        onRefused: (reason) => refused.inc({ reason }),
      },
    );
  }

  /**
   * Starts the shards' workers (their twins in parallel) and, once every twin is created, their schedulers
   * together; when one cannot start, ends the others and throws naming the twin.
   */
  static async create(opts: ShardedOptions): Promise<ShardedClassroom> {
    const logger = opts.logger ?? silentLogger;
    const { twins, speed, recordsDir, workers, logger: _, ...shared } = opts;
    const n = Math.max(1, Math.min(workers, twins.length));
    const times = new SharedArrayBuffer(n * Float64Array.BYTES_PER_ELEMENT);
    new Float64Array(times).fill(NaN);
    const shards: ShardClient[] = [];
    for (let i = 0; i < n; i++) {
      // Contiguous parts, sizes differing by one at most: twin k is in shard floor(k * n / count).
      const rosterIndex = twins.map((_, k) => k).filter((k) => Math.floor((k * n) / twins.length) === i);
      shards.push(
        new ShardClient(
          {
            index: i,
            twins: rosterIndex.map((k) => twins[k]!),
            rosterIndex,
            shared,
            speed,
            recordsDir,
            times,
            slack: SLACK_S * speed,
          },
          logger,
        ),
      );
    }
    const started = await Promise.allSettled(shards.map((s) => s.started));
    const failures = started.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    if (failures.length) {
      await Promise.all(shards.map((s) => s.close(SHARD_CLOSE_MS)));
      // The first twin in the roster's order that could not start names the failure.
      const configError = failures
        .filter((e): e is ConfigError => e instanceof ConfigError)
        .sort((a, b) => fieldIndex(a.field) - fieldIndex(b.field))[0];
      throw configError ?? failures[0]!;
    }
    const room = new ShardedClassroom(opts, shards, logger);
    for (const shard of shards)
      shard.onDeath = (why) =>
        logger.error(`classroom: shard ${shard.index} (${shard.names.join(', ')}) is offline: ${why}`);
    await Promise.all(shards.map((s) => s.request('start', {})));
    return room;
  }

  /** Listens on the main port, then each shard on its twins' own; a port that cannot be had names the twin. */
  async listen(host: string, port: number): Promise<void> {
    try {
      await this.app.listen({ host, port });
    } catch (err) {
      throw new ConfigError('--port', `cannot listen on ${host}:${port}: ${(err as Error).message}`);
    }
    this.#host = loopbackFor(host);
    const listened = await Promise.allSettled(this.shards.map((s) => s.listen(host)));
    const failed = listened.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    if (failed.length) throw failed[0];
  }

  /** Resolves once every twin of every live shard is ready (tests, scripts); polls the shards' reports. */
  async loaded(deadlineMs = 60_000): Promise<void> {
    const until = performance.now() + deadlineMs;
    while (
      this.#order.some((name) => !this.#shardOf.get(name)!.ready(name) && !this.#shardOf.get(name)!.dead)
    ) {
      if (performance.now() > until) throw new Error('the twins did not all load their custom primitives');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  ready(): boolean {
    return this.#order.every((name) => this.#shardOf.get(name)!.ready(name));
  }

  /** Every twin's line, in the roster's order; a shard that does not answer shows its twins offline. */
  async classList(): Promise<ClassListing> {
    const answers = await Promise.all(
      this.shards.map((s) => s.request('list', {}, 2000).catch(() => undefined)),
    );
    let rtf = Infinity;
    for (const [i, answer] of answers.entries()) {
      const shard = this.shards[i]!;
      if (!answer) {
        for (const name of shard.names)
          this.#last.set(name, {
            ...this.#last.get(name)!,
            ready: false,
            online: false,
            real_time_factor: 0,
          });
        continue;
      }
      rtf = Math.min(rtf, answer.real_time_factor);
      for (const t of answer.twins) this.#last.set(t.name, t);
    }
    const classRtf = Number.isFinite(rtf) ? rtf : 0;
    return {
      twins: this.#order.map((name) => this.#last.get(name)!),
      real_time_factor: round(classRtf, 3),
      short_of_cpu: shortOfCpu(classRtf, this.speed),
    };
  }

  async reset(name: string): Promise<ResetAnswer> {
    const shard = this.#shardOf.get(name);
    if (!shard) throw unknownTwin(name);
    if (shard.dead) throw shard.offlineError();
    return (await shard.request('reset', { name }))[0]!;
  }

  /** Every live shard's twins (an offline shard's twins are left out of the answer). */
  async resetAll(): Promise<ResetAnswer[]> {
    const live = this.shards.filter((s) => !s.dead);
    const answers = await Promise.all(live.map((s) => s.request('reset', {})));
    return answers.flat();
  }

  /** The main thread's process metrics and every live shard's registries, merged (label `twin`). */
  async metrics(): Promise<string> {
    const parts = await Promise.all(this.shards.map((s) => s.request('metrics', {}, 5000).catch(() => [])));
    return mergeMetricsJSON([await this.#registry.getMetricsAsJSON(), ...parts.flat()]);
  }

  /** Closes the main port, then every shard (each ended within SHARD_CLOSE_MS); idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const cut = setTimeout(() => this.app.server.closeAllConnections(), 300);
      // First the connections to the twins: the main port's close then has nothing forwarded to wait for.
      this.#forwarder.close();
      try {
        await this.app.close();
      } finally {
        clearTimeout(cut);
      }
      await Promise.all(this.shards.map((s) => s.close(SHARD_CLOSE_MS)));
    })();
    return this.#closing;
  }

  #address(name: string): { host: string; port: number } {
    return { host: this.#host, port: this.#shardOf.get(name)!.port(name) ?? 0 };
  }
}

function fieldIndex(field: string): number {
  const m = /^twins\.(\d+)/.exec(field);
  return m ? Number(m[1]) : Infinity;
}

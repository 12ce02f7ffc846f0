/**
 * A classroom in one thread: many twins, one shared physics scheduler. Each twin is a whole robot server on a port
 * of its own and, on the main port (src/classroom/main-port.ts), under `/twins/<name>/`. Tests drive it at speed
 * 'manual' (advance()); a class that needs more than one core runs in shards instead (src/classroom/sharded.ts).
 */
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ConfigError } from '../core/errors.ts';
import { type Logger, silentLogger } from '../core/logger.ts';
import type { AccessOptions } from '../http/access.ts';
import { mergedMetrics, refusedCounter } from '../http/metrics.ts';
import { WorldScheduler } from '../sim/scheduler.ts';
import { type RobotServer, type ServerOptions, createRobotServer } from '../server.ts';
import { buildMainApp, type ClassListing, unknownTwin } from './main-port.ts';
import type { TwinSpec } from './roster.ts';
import {
  type ResetAnswer,
  type TwinListing,
  classroomGauges,
  listing,
  prefixed,
  resetTwin,
  round,
  shortOfCpu,
} from './twin.ts';

export { SHORT_OF_CPU_RTF, type TwinListing } from './twin.ts';

/** What every twin shares; the classroom sets the robot, speed, records folder and scheduler of each. */
export type SharedOptions = Omit<
  ServerOptions,
  'backend' | 'robot' | 'speed' | 'recordsDir' | 'scheduler' | 'metricsLabels' | 'phases'
>;

export interface ClassroomOptions extends SharedOptions {
  readonly twins: readonly TwinSpec[];
  /** Sim seconds per wall second for every twin, or 'manual' (tests: time moves through advance()). */
  readonly speed: number | 'manual';
  /** Each twin saves its moves in `<recordsDir>/<name>/`. */
  readonly recordsDir: string;
  readonly logger?: Logger;
}

export interface Twin {
  readonly spec: TwinSpec;
  readonly server: RobotServer;
  /** Started and its custom primitives loaded (or reported). */
  readonly ready: boolean;
}

/** The twins of `opts`, started in parallel on `scheduler`; when one cannot start, closes the others and throws. */
export async function startTwins(
  opts: ClassroomOptions,
  scheduler: WorldScheduler,
  /** Each twin's index in the whole roster (a shard starts part of it), for the error's field. */
  indexOf: (i: number) => number = (i) => i,
): Promise<Map<string, Twin & { ready: boolean }>> {
  const logger = opts.logger ?? silentLogger;
  const { twins: specs, speed, recordsDir, ...shared } = opts;
  const started = await Promise.allSettled(
    specs.map((spec) =>
      createRobotServer({
        ...shared,
        access: twinAccess(shared.access, spec),
        backend: 'sim',
        robot: spec.robot,
        speed,
        recordsDir: path.join(recordsDir, spec.name),
        scheduler,
        name: spec.name,
        metricsLabels: { twin: spec.name },
        logger: prefixed(logger, spec.name),
      }),
    ),
  );
  const failed = started.findIndex((r) => r.status === 'rejected');
  if (failed >= 0) {
    await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
    const err = (started[failed] as PromiseRejectedResult).reason as Error;
    throw new ConfigError(
      `twins.${indexOf(failed)}`,
      `twin ${specs[failed]!.name} cannot start: ${err.message}`,
    );
  }
  const twins = new Map<string, Twin & { ready: boolean }>();
  for (const [i, spec] of specs.entries()) {
    const server = (started[i] as PromiseFulfilledResult<RobotServer>).value;
    const twin = { spec, server, ready: false };
    twins.set(spec.name, twin);
    void server.primitives.customLoaded().finally(() => (twin.ready = true));
  }
  await Promise.all([...twins.values()].map((t) => t.server.app.ready()));
  return twins;
}

/** A twin's edge: the class's hosts and origins; its own token and the teacher's (docs/security.md). */
export function twinAccess(access: AccessOptions | undefined, spec: TwinSpec): AccessOptions {
  return { ...access, tokens: [...(spec.token ? [spec.token] : []), ...(access?.tokens ?? [])] };
}

/** Listens on each twin's own port; a port that cannot be had throws naming the twin. */
export async function listenTwins(
  twins: Iterable<Twin>,
  host: string,
  indexOf: (i: number) => number = (i) => i,
): Promise<void> {
  let i = 0;
  for (const twin of twins) {
    try {
      await twin.server.app.listen({ host, port: twin.spec.port });
    } catch (err) {
      throw new ConfigError(
        `twins.${indexOf(i)}.port`,
        `twin ${twin.spec.name}: cannot listen on ${host}:${twin.spec.port}: ${(err as Error).message}`,
      );
    }
    i++;
  }
}

export class Classroom {
  readonly scheduler: WorldScheduler;
  readonly app: FastifyInstance;
  readonly #twins: Map<string, Twin & { ready: boolean }>;
  readonly #logger: Logger;
  readonly #registry = new Registry();
  readonly #access: AccessOptions | undefined;
  #closing: Promise<void> | undefined;

  private constructor(
    scheduler: WorldScheduler,
    twins: Map<string, Twin & { ready: boolean }>,
    logger: Logger,
    access: AccessOptions | undefined,
  ) {
    this.scheduler = scheduler;
    this.#twins = twins;
    this.#logger = logger;
    this.#access = access;
    collectDefaultMetrics({ register: this.#registry });
    const refused = refusedCounter([this.#registry]);
    classroomGauges(this.#registry, scheduler, () => ({
      ready: [...twins.values()].filter((t) => t.ready).length,
      total: twins.size,
    }));
    this.app = buildMainApp(
      {
        has: (name) => twins.has(name),
        list: async () => this.classList(),
        reset: (name) => this.reset(name),
        resetAll: () => Promise.all([...twins.keys()].map((name) => this.reset(name))),
        metrics: () =>
          mergedMetrics([this.#registry, ...[...twins.values()].map((t) => t.server.metrics.registry)]),
        waiting: () => [...twins.values()].filter((t) => !t.ready).map((t) => t.spec.name),
        unavailable: () => undefined,
        serve: (name, req, res) => twins.get(name)!.server.app.routing(req, res),
        upgrade: (name, req, socket, head) =>
          twins.get(name)!.server.app.server.emit('upgrade', req, socket, head),
      },
      {
        logger,
        access,
        twinToken: (name) => twins.get(name)?.spec.token,
        onRefused: (reason) => refused.inc({ reason }),
      },
    );
  }

  /** Starts every twin (in parallel); when one cannot start, closes the others and throws naming it. */
  static async create(opts: ClassroomOptions): Promise<Classroom> {
    const scheduler = new WorldScheduler({ speed: opts.speed });
    const twins = await startTwins(opts, scheduler);
    const classroom = new Classroom(scheduler, twins, opts.logger ?? silentLogger, opts.access);
    scheduler.start();
    return classroom;
  }

  get twins(): ReadonlyMap<string, Twin> {
    return this.#twins;
  }

  /** The twin called `name`, or a 404 with a tip. */
  twin(name: string): Twin {
    const twin = this.#twins.get(name);
    if (!twin) throw unknownTwin(name);
    return twin;
  }

  /** Resolves once every twin's custom primitives are loaded or reported (tests, scripts). */
  async loaded(): Promise<void> {
    await Promise.all([...this.#twins.values()].map((t) => t.server.primitives.customLoaded()));
  }

  /** Every twin started and its custom primitives loaded: the main port's readiness. */
  ready(): boolean {
    for (const t of this.#twins.values()) if (!t.ready) return false;
    return true;
  }

  /** Shared real-time factor under SHORT_OF_CPU_RTF while running in real time. */
  shortOfCpu(): boolean {
    return shortOfCpu(this.scheduler.realTimeFactor(), this.scheduler.speed);
  }

  /** Listens on the main port and each twin's own; a port that cannot be had stops it all, naming the twin. */
  async listen(host: string, port: number): Promise<void> {
    try {
      await this.app.listen({ host, port });
    } catch (err) {
      throw new ConfigError('--port', `cannot listen on ${host}:${port}: ${(err as Error).message}`);
    }
    await listenTwins(this.#twins.values(), host);
  }

  list(): TwinListing[] {
    return [...this.#twins.values()].map(({ spec, server, ready }) => listing(spec, server, ready));
  }

  classList(): ClassListing {
    return {
      twins: this.list(),
      real_time_factor: round(this.scheduler.realTimeFactor(), 3),
      short_of_cpu: this.shortOfCpu(),
    };
  }

  /** The teacher's reset: running primitives stop, then the twin is as POST /sim/reset.json leaves it. */
  reset(name: string): Promise<ResetAnswer> {
    const twin = this.twin(name);
    return resetTwin(name, twin.server, twinAccess(this.#access, twin.spec).tokens?.[0]);
  }

  /** Steps every twin by `seconds` in lockstep (speed 'manual': tests). */
  advance(seconds: number): Promise<void> {
    return this.scheduler.advance(seconds);
  }

  /** Closes the main port, then every twin; idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const cut = setTimeout(() => this.app.server.closeAllConnections(), 300);
      try {
        await this.app.close();
      } finally {
        clearTimeout(cut);
      }
      await this.scheduler.stop();
      const closed = await Promise.allSettled([...this.#twins.values()].map((t) => t.server.close()));
      for (const [i, r] of closed.entries())
        if (r.status === 'rejected')
          this.#logger.error(
            `twin ${[...this.#twins.keys()][i]}: close failed: ${(r.reason as Error).message}`,
          );
    })();
    return this.#closing;
  }
}

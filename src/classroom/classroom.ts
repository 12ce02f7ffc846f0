// Over 400 lines: the classroom's start-up, mounting and teacher routes share one roster; the page and roster are apart.
/**
 * A classroom: many twins in one process, one shared physics scheduler. Each twin is a whole robot server on a port
 * of its own and, on the main port, under `/twins/<name>/`; the main port also has the teacher's landing page, the
 * list of twins, resets, merged metrics and the probes.
 */
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { z } from 'zod';
import { ConfigError, RobotError } from '../core/errors.ts';
import { type Logger, silentLogger } from '../core/logger.ts';
import { buildApp } from '../http/app.ts';
import { mergedMetrics, metricsRoute } from '../http/metrics.ts';
import { RawReply, type RouteSpec } from '../http/route.ts';
import { WorldScheduler } from '../sim/scheduler.ts';
import { PREFIX_HEADER } from '../ui/plugin.ts';
import { type RobotServer, type ServerOptions, createRobotServer } from '../server.ts';
import { landingPage } from './page.ts';
import type { TwinSpec } from './roster.ts';

/** Below this shared real-time factor the landing page says the machine is short of CPU. */
export const SHORT_OF_CPU_RTF = 0.99;

/** What every twin shares; the classroom sets the robot, speed, records folder and scheduler of each. */
export type SharedOptions = Omit<
  ServerOptions,
  'backend' | 'robot' | 'speed' | 'recordsDir' | 'scheduler' | 'metricsLabels'
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

export interface TwinListing {
  readonly name: string;
  readonly robot: string;
  readonly port: number;
  readonly url: string;
  readonly ready: boolean;
  readonly real_time_factor: number;
  readonly sim_time: number;
  readonly running_primitives: string[];
  readonly last_request: { method: string; url: string; status: number; at: string } | null;
}

const TWIN_URL = /^\/twins\/([^/?#]+)(\/[^?#]*)?(\?.*)?$/;
const LIST_TIP = 'GET /twins/list.json lists the twins of this classroom';

export class Classroom {
  readonly scheduler: WorldScheduler;
  readonly app: FastifyInstance;
  readonly #twins: Map<string, Twin & { ready: boolean }>;
  readonly #logger: Logger;
  readonly #registry = new Registry();
  #closing: Promise<void> | undefined;

  private constructor(
    scheduler: WorldScheduler,
    twins: Map<string, Twin & { ready: boolean }>,
    logger: Logger,
  ) {
    this.scheduler = scheduler;
    this.#twins = twins;
    this.#logger = logger;
    this.#registerGauges();
    this.app = this.#buildApp(logger);
  }

  /** Starts every twin (in parallel); when one cannot start, closes the others and throws naming it. */
  static async create(opts: ClassroomOptions): Promise<Classroom> {
    const logger = opts.logger ?? silentLogger;
    const scheduler = new WorldScheduler({ speed: opts.speed });
    const { twins: specs, speed, recordsDir, ...shared } = opts;
    const started = await Promise.allSettled(
      specs.map((spec) =>
        createRobotServer({
          ...shared,
          backend: 'sim',
          robot: spec.robot,
          speed,
          recordsDir: path.join(recordsDir, spec.name),
          scheduler,
          metricsLabels: { twin: spec.name },
          logger: prefixed(logger, spec.name),
        }),
      ),
    );
    const failed = started.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) {
      await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
      const err = (started[failed] as PromiseRejectedResult).reason as Error;
      throw new ConfigError(`twins.${failed}`, `twin ${specs[failed]!.name} cannot start: ${err.message}`);
    }
    const twins = new Map<string, Twin & { ready: boolean }>();
    for (const [i, spec] of specs.entries()) {
      const server = (started[i] as PromiseFulfilledResult<RobotServer>).value;
      const twin = { spec, server, ready: false };
      twins.set(spec.name, twin);
      void server.primitives.customLoaded().finally(() => (twin.ready = true));
    }
    const classroom = new Classroom(scheduler, twins, logger);
    await Promise.all([...twins.values()].map((t) => t.server.app.ready()));
    scheduler.start();
    return classroom;
  }

  get twins(): ReadonlyMap<string, Twin> {
    return this.#twins;
  }

  /** The twin called `name`, or a 404 with a tip. */
  twin(name: string): Twin {
    const twin = this.#twins.get(name);
    if (!twin)
      throw new RobotError(
        'not_found',
        `no twin called "${name}" in this classroom`,
        LIST_TIP,
        'unknown twin',
      );
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
    const rtf = this.scheduler.realTimeFactor();
    return (
      typeof this.scheduler.speed === 'number' && rtf > 0 && rtf < SHORT_OF_CPU_RTF * this.scheduler.speed
    );
  }

  /** Listens on the main port and each twin's own; a port that cannot be had stops it all, naming the twin. */
  async listen(host: string, port: number): Promise<void> {
    try {
      await this.app.listen({ host, port });
    } catch (err) {
      throw new ConfigError('--port', `cannot listen on ${host}:${port}: ${(err as Error).message}`);
    }
    let i = 0;
    for (const twin of this.#twins.values()) {
      try {
        await twin.server.app.listen({ host, port: twin.spec.port });
      } catch (err) {
        throw new ConfigError(
          `twins.${i}.port`,
          `twin ${twin.spec.name}: cannot listen on ${host}:${twin.spec.port}: ${(err as Error).message}`,
        );
      }
      i++;
    }
  }

  list(): TwinListing[] {
    return [...this.#twins.values()].map(({ spec, server, ready }) => {
      const addr = server.app.server.address();
      const last = server.metrics.lastRequest();
      return {
        name: spec.name,
        robot: server.config.name,
        port: typeof addr === 'object' && addr ? addr.port : spec.port,
        url: `/twins/${spec.name}/`,
        ready,
        real_time_factor: round(server.simulation?.realTimeFactor() ?? 0, 3),
        sim_time: round(server.robot.clock.now(), 3),
        running_primitives: server.primitives.runningList().map((p) => p.name),
        last_request: last
          ? { method: last.method, url: last.url, status: last.status, at: new Date(last.at).toISOString() }
          : null,
      };
    });
  }

  /** The teacher's reset: running primitives stop, then the twin is as POST /sim/reset.json leaves it. */
  async reset(name: string): Promise<{ name: string; sim_time: number }> {
    const { server } = this.twin(name);
    await Promise.all(server.primitives.runningList().map((p) => p.stop()));
    const answer = await server.app.inject({ method: 'POST', url: '/sim/reset.json' });
    if (answer.statusCode !== 200)
      throw new RobotError('internal', `twin ${name} could not reset: ${answer.body}`, 'see the server log');
    return { name, sim_time: (answer.json() as { sim_time: number }).sim_time };
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

  #registerGauges(): void {
    const registers = [this.#registry];
    const scheduler = this.scheduler;
    const twins = this.#twins;
    collectDefaultMetrics({ register: this.#registry });
    new Gauge({
      name: 'poppy_classroom_real_time_factor',
      help: "the shared scheduler's sim seconds per wall second (every twin alike)",
      registers,
      collect() {
        this.set(scheduler.realTimeFactor());
      },
    });
    new Gauge({
      name: 'poppy_classroom_dropped_sim_seconds',
      help: 'sim time given up because the machine was short of CPU (every twin alike)',
      registers,
      collect() {
        this.set(scheduler.droppedSeconds());
      },
    });
    new Gauge({
      name: 'poppy_classroom_twins',
      help: 'twins in the classroom, by readiness',
      labelNames: ['ready'],
      registers,
      collect() {
        const ready = [...twins.values()].filter((t) => t.ready).length;
        this.set({ ready: 'true' }, ready);
        this.set({ ready: 'false' }, twins.size - ready);
      },
    });
  }

  #buildApp(logger: Logger): FastifyInstance {
    const listing = z.object({
      name: z.string(),
      robot: z.string(),
      port: z.number(),
      url: z.string(),
      ready: z.boolean(),
      real_time_factor: z.number(),
      sim_time: z.number(),
      running_primitives: z.array(z.string()),
      last_request: z
        .object({ method: z.string(), url: z.string(), status: z.number(), at: z.string() })
        .nullable(),
    });
    const routes: RouteSpec[] = [
      {
        method: 'GET',
        path: '/twins/list.json',
        beyondV4: true,
        summary:
          'the twins: name, robot, port, real-time factor, running primitives, last request; and whether the ' +
          'machine is short of CPU',
        answer: z.object({
          twins: z.array(listing),
          real_time_factor: z.number(),
          short_of_cpu: z.boolean(),
        }),
        handler: () => ({
          twins: this.list(),
          real_time_factor: round(this.scheduler.realTimeFactor(), 3),
          short_of_cpu: this.shortOfCpu(),
        }),
      },
      {
        method: 'POST',
        path: '/twins/reset.json',
        beyondV4: true,
        summary: 'every twin back to its start pose, its primitives stopped (the teacher)',
        answer: z.object({ reset: z.array(z.object({ name: z.string(), sim_time: z.number() })) }),
        handler: async () => ({
          reset: await Promise.all([...this.#twins.keys()].map((name) => this.reset(name))),
        }),
      },
      {
        method: 'POST',
        path: '/twins/:name/reset.json',
        beyondV4: true,
        summary: 'one twin back to its start pose, its primitives stopped (the teacher)',
        answer: z.object({ name: z.string(), sim_time: z.number() }),
        handler: ({ params }) => this.reset(params.name!),
      },
      metricsRoute(() =>
        mergedMetrics([this.#registry, ...[...this.#twins.values()].map((t) => t.server.metrics.registry)]),
      ),
      ...probeRoutes(this),
    ];
    const app = buildApp({
      routes,
      logger,
      title: 'Poppy classroom',
      home: {
        summary: 'the classroom: every twin, live, with links to each view',
        handler: () => new RawReply('text/html; charset=utf-8', landingPage()),
      },
    });
    // A known twin's requests go to its own app before this one reads a body; unknown twins reach the 404 below.
    app.addHook('onRequest', (req, reply, done) => {
      const twin = this.#route(req.raw);
      if (!twin) return done();
      void reply.hijack();
      twin.server.app.routing(req.raw, reply.raw);
    });
    app.route({
      method: ['GET', 'POST'],
      url: '/twins/:name/*',
      schema: { hide: true },
      handler: (req) => {
        this.twin((req.params as { name: string }).name);
        throw new RobotError(
          'not_found',
          `no such endpoint: ${req.method} ${req.url}`,
          LIST_TIP,
          'unknown route',
        );
      },
    });
    app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const twin = this.#route(req);
      if (twin) twin.server.app.server.emit('upgrade', req, socket, head);
      else socket.destroy();
    });
    return app;
  }

  /** The twin a main-port request is for, its URL made the twin's own; undefined for the main port's routes. */
  #route(req: IncomingMessage): Twin | undefined {
    const m = TWIN_URL.exec(req.url ?? '');
    if (!m) return undefined;
    let name: string;
    try {
      name = decodeURIComponent(m[1]!);
    } catch {
      return undefined;
    }
    const twin = this.#twins.get(name);
    const rest = m[2] ?? '/';
    if (!twin || rest === '/reset.json') return undefined;
    req.url = rest + (m[3] ?? '');
    req.headers[PREFIX_HEADER] = `/twins/${name}`;
    return twin;
  }
}

/**
 * The main port's probes: alive while it answers; ready once every twin is. Each twin's own port has its own
 * probes (src/server.ts).
 */
function probeRoutes(classroom: Classroom): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      beyondV4: true,
      summary: 'alive: the classroom process answers',
      answer: z.object({ alive: z.boolean() }),
      handler: () => ({ alive: true }),
    },
    {
      method: 'GET',
      path: '/readyz',
      beyondV4: true,
      summary: 'ready (200) once every twin has started and loaded its custom primitives; 503 before',
      answer: z.object({ ready: z.boolean(), waiting: z.array(z.string()) }),
      handler: () => {
        const waiting = [...classroom.twins.values()].filter((t) => !t.ready).map((t) => t.spec.name);
        if (waiting.length)
          throw new RobotError(
            'unavailable',
            `not ready: ${waiting.length} twin(s) still starting (${waiting.slice(0, 5).join(', ')})`,
            'wait and ask again',
          );
        return { ready: true, waiting };
      },
    },
  ];
}

function prefixed(logger: Logger, name: string): Logger {
  const wrap = (f: ((line: string) => void) | undefined) =>
    f && ((line: string) => f.call(logger, `[${name}] ${line}`));
  return {
    ...logger,
    info: wrap(logger.info)!,
    warn: wrap(logger.warn)!,
    error: wrap(logger.error)!,
    debug: wrap(logger.debug),
  };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

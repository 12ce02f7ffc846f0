/**
 * A classroom's main port, whether its twins run in this thread or in shards: the landing page, the list, the
 * teacher's resets, the merged metrics, the probes, and each known twin's requests handed to it under
 * `/twins/<name>/` (its URL made its own, PREFIX_HEADER set so its web view's links stay under the prefix).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { RobotError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { AccessOptions, Refusal } from '../http/access.ts';
import { buildApp } from '../http/app.ts';
import { metricsRoute } from '../http/metrics.ts';
import { RawReply, type RouteSpec } from '../http/route.ts';
import type { HttpTimeouts } from '../http/timeouts.ts';
import { PREFIX_HEADER } from '../ui/plugin.ts';
import { landingPage } from './page.ts';
import type { ResetAnswer, TwinListing } from './twin.ts';

export interface ClassListing {
  readonly twins: TwinListing[];
  /** The class's sim seconds per wall second: the slowest shard's (every twin alike within a shard). */
  readonly real_time_factor: number;
  readonly short_of_cpu: boolean;
}

/** What the main port needs of a classroom. */
export interface ClassView {
  /** The twin's name is in the roster. */
  has(name: string): boolean;
  list(): Promise<ClassListing>;
  /** One twin's reset (a 404 for an unknown twin). */
  reset(name: string): Promise<ResetAnswer>;
  resetAll(): Promise<ResetAnswer[]>;
  metrics(): Promise<string>;
  /** Twins not ready (starting, or their shard gone): /readyz's 503 names them. */
  waiting(): string[];
  /** Why a known twin cannot answer now (its shard is gone), or undefined when it can. */
  unavailable(name: string): RobotError | undefined;
  /** Answers a request for twin `name`; req.url is already the twin's own. */
  serve(name: string, req: IncomingMessage, res: ServerResponse): void;
  /** Takes over a WebSocket upgrade for twin `name`; req.url is already the twin's own. */
  upgrade(name: string, req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

const TWIN_URL = /^\/twins\/([^/?#]+)(\/[^?#]*)?(\?.*)?$/;
export const LIST_TIP = 'GET /twins/list.json lists the twins of this classroom';

export function unknownTwin(name: string): RobotError {
  return new RobotError('not_found', `no twin called "${name}" in this classroom`, LIST_TIP, 'unknown twin');
}

export interface MainPortOptions {
  readonly logger: Logger;
  readonly timeouts?: Partial<HttpTimeouts>;
  /** The class's hosts and origins, and the teacher's token (which opens every twin too). */
  readonly access?: AccessOptions;
  /** A twin's own token: it opens that twin's URLs under `/twins/<name>/`, nothing else. */
  readonly twinToken?: (name: string) => string | undefined;
  /** Counts a refused request (the class's metrics). */
  readonly onRefused?: (kind: Refusal) => void;
}

export function buildMainApp(view: ClassView, opts: MainPortOptions): FastifyInstance {
  const teacher = opts.access?.tokens ?? [];
  const listing = z.object({
    name: z.string(),
    robot: z.string(),
    port: z.number(),
    url: z.string(),
    ready: z.boolean(),
    online: z.boolean(),
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
      handler: () => view.list(),
    },
    {
      method: 'POST',
      path: '/twins/reset.json',
      beyondV4: true,
      summary: 'every twin back to its start pose, its primitives stopped (the teacher)',
      answer: z.object({ reset: z.array(z.object({ name: z.string(), sim_time: z.number() })) }),
      handler: async () => ({ reset: await view.resetAll() }),
    },
    {
      method: 'POST',
      path: '/twins/:name/reset.json',
      beyondV4: true,
      summary: 'one twin back to its start pose, its primitives stopped (the teacher)',
      answer: z.object({ name: z.string(), sim_time: z.number() }),
      handler: ({ params }) => view.reset(params.name!),
    },
    metricsRoute(() => view.metrics()),
    ...probeRoutes(view),
  ];
  const app = buildApp({
    routes,
    logger: opts.logger,
    timeouts: opts.timeouts,
    access: opts.access,
    onRefused: opts.onRefused,
    // The teacher's token opens everything; a student's only their twin's URLs (which the twin checks again).
    tokensFor: (url) => {
      const name = twinNameOf(url);
      const own = name !== undefined && view.has(name) ? opts.twinToken?.(name) : undefined;
      return own ? [...teacher, own] : teacher;
    },
    title: 'Poppy classroom',
    home: {
      summary: 'the classroom: every twin, live, with links to each view',
      handler: () => new RawReply('text/html; charset=utf-8', landingPage()),
    },
  });
  // A known twin's requests go to it before this app reads a body; unknown twins reach the 404 below.
  app.addHook('onRequest', (req, reply, done) => {
    const name = twinOf(view, req.raw);
    if (name === undefined) return done();
    const why = view.unavailable(name);
    if (why) return done(why);
    void reply.hijack();
    view.serve(name, req.raw, reply.raw);
  });
  app.route({
    method: ['GET', 'POST'],
    url: '/twins/:name/*',
    schema: { hide: true },
    handler: (req) => {
      const { name } = req.params as { name: string };
      if (!view.has(name)) throw unknownTwin(name);
      throw new RobotError(
        'not_found',
        `no such endpoint: ${req.method} ${req.url}`,
        LIST_TIP,
        'unknown route',
      );
    },
  });
  // Upgraded connections (state streams) are no longer the HTTP server's: its close would wait for them forever.
  const upgraded = new Set<Duplex>();
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const name = twinOf(view, req);
    if (name === undefined || view.unavailable(name)) return void socket.destroy();
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    view.upgrade(name, req, socket, head);
  });
  app.addHook('preClose', (done) => {
    for (const socket of upgraded) socket.destroy();
    done();
  });
  return app;
}

/** The (decoded) twin name a `/twins/<name>/...` URL names, known or not. */
function twinNameOf(url: string): string | undefined {
  const m = TWIN_URL.exec(url);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return undefined;
  }
}

/** The twin a main-port request is for, its URL made the twin's own; undefined for the main port's routes. */
function twinOf(view: ClassView, req: IncomingMessage): string | undefined {
  const m = TWIN_URL.exec(req.url ?? '');
  const name = twinNameOf(req.url ?? '');
  if (!m || name === undefined) return undefined;
  const rest = m[2] ?? '/';
  if (!view.has(name) || rest === '/reset.json') return undefined;
  req.url = rest + (m[3] ?? '');
  req.headers[PREFIX_HEADER] = `/twins/${name}`;
  return name;
}

/**
 * The main port's probes: alive while it answers; ready once every twin is. Each twin's own port has its own
 * probes (src/server.ts).
 */
function probeRoutes(view: ClassView): RouteSpec[] {
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
      summary:
        'ready (200) once every twin has started and loaded its custom primitives; 503 before, or while a ' +
        "twin's shard is gone",
      answer: z.object({ ready: z.boolean(), waiting: z.array(z.string()) }),
      handler: () => {
        const waiting = view.waiting();
        if (waiting.length)
          throw new RobotError(
            'unavailable',
            `not ready: ${waiting.length} twin(s) starting or offline (${waiting.slice(0, 5).join(', ')})`,
            'wait and ask again; GET /twins/list.json says which twins are offline',
          );
        return { ready: true, waiting };
      },
    },
  ];
}

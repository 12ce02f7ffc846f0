/**
 * Builds the fastify app without listening (main.ts alone listens; tests use inject()).
 */
import type { ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { RobotError } from '../core/errors.ts';
import type { Logger } from '../robot/robot.ts';
import { parseBody, NO_BODY, type Body } from './body.ts';
import { makeErrorHandler } from './errors.ts';
import { RawReply, type RouteRequest, type RouteSpec, displayPath } from './route.ts';

export interface AppOptions {
  readonly routes: readonly RouteSpec[];
  readonly logger: Logger;
  /** Allowed CORS origins; '*' (default) allows any. */
  readonly corsOrigins?: '*' | readonly string[];
  /** Body size limit, bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  readonly title?: string;
  /** Log every request at debug level (method, URL, status, milliseconds). */
  readonly requestLog?: boolean;
  /** Connection timeouts (ms); see HttpTimeouts. */
  readonly timeouts?: Partial<HttpTimeouts>;
}

/** How long a client may take (ms): to send its headers, its whole request, and to stay idle between requests. */
export interface HttpTimeouts {
  readonly headers: number;
  readonly request: number;
  readonly idle: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { headers: 10_000, request: 30_000, idle: 5_000 };

const ALLOWED_HEADERS = 'Content-Type, Accept, Origin, X-Requested-With';

export function buildApp(opts: AppOptions): FastifyInstance {
  const bodyLimit = opts.bodyLimit ?? 1024 * 1024;
  const origins = opts.corsOrigins ?? '*';
  const commonHeaders = (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('Cache-Control', 'no-store');
    const origin = req.headers.origin;
    if (origins === '*') reply.header('Access-Control-Allow-Origin', '*');
    else if (origin && origins.includes(origin)) {
      reply.header('Access-Control-Allow-Origin', origin);
      reply.header('Vary', 'Origin');
    }
  };
  const errorHandler = makeErrorHandler(opts.logger);
  const timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
  const app = Fastify({
    logger: false,
    bodyLimit,
    // Idle keep-alive sockets close with the server; busy ones are closed by the server's close() after a grace.
    forceCloseConnections: 'idle',
    requestTimeout: timeouts.request,
    keepAliveTimeout: timeouts.idle,
    // Node checks the header and request timeouts at this interval (default 30 s): often enough to honour them.
    http: {
      headersTimeout: timeouts.headers,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, timeouts.headers / 4)),
    },
    routerOptions: { ignoreTrailingSlash: true, caseSensitive: true },
    // Errors the router raises before any hook runs (a malformed %-escape, an over-long segment): same JSON body.
    frameworkErrors: (err, req, reply) => {
      commonHeaders(req, reply);
      errorHandler(err, req, reply);
    },
  });
  const patterns = opts.routes.map((r) => ({ method: r.method, re: pathRegex(r.path) }));

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, text, done) => {
    done(null, parseBody(String(text), req.headers['content-type']));
  });

  app.addHook('onRequest', (req, reply, done) => {
    commonHeaders(req, reply);
    done();
  });

  app.setErrorHandler(errorHandler);

  const debug = opts.logger.debug;
  if (opts.requestLog && debug)
    app.addHook('onResponse', (req, reply, done) => {
      debug(`${req.method} ${req.url} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)} ms`);
      done();
    });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    const allowed = [...new Set(patterns.filter((p) => p.re.test(path)).map((p) => p.method))];
    if (allowed.length) {
      throw new RobotError(
        'method_not_allowed',
        `${req.method} is not allowed on ${path}`,
        `use ${allowed.join(' or ')}`,
        allowed.join(', '),
      );
    }
    void reply;
    throw new RobotError(
      'not_found',
      `no such endpoint: ${req.method} ${path}`,
      'GET / lists every endpoint',
      'unknown route',
    );
  });

  app.options('*', (req, reply) => {
    reply
      .code(204)
      .header('Access-Control-Allow-Methods', 'GET, POST, OPTIONS')
      .header(
        'Access-Control-Allow-Headers',
        req.headers['access-control-request-headers'] ?? ALLOWED_HEADERS,
      )
      .header('Access-Control-Max-Age', '600')
      .send();
  });

  const all: RouteSpec[] = [
    {
      method: 'GET',
      path: '/',
      summary: 'this page: every GET and POST path',
      handler: () => new RawReply('text/html; charset=utf-8', indexPage(opts.title ?? 'Robot', all)),
    },
    ...opts.routes,
  ];
  for (const route of all) {
    app.route({
      method: route.method,
      url: route.path,
      handler: async (req, reply) => {
        const body = route.getWithBody
          ? await readGetBody(req.raw, req.headers['content-type'], bodyLimit)
          : ((req.body as Body | undefined) ?? NO_BODY);
        const result = await route.handler(
          new IncomingRequest(
            req.params as Record<string, string>,
            req.query as Record<string, string>,
            body,
            reply.raw,
          ),
        );
        if (result instanceof RawReply) return reply.type(result.contentType).send(result.payload);
        return result;
      },
    });
  }
  return app;
}

/** A route's request; `clientGone` is made on first use only (a closure or getter per request costs throughput). */
class IncomingRequest implements RouteRequest {
  #gone: AbortController | undefined;
  constructor(
    readonly params: Readonly<Record<string, string>>,
    readonly query: Readonly<Record<string, string>>,
    readonly body: Body,
    readonly response: ServerResponse,
  ) {}

  get clientGone(): AbortSignal {
    if (!this.#gone) {
      const gone = (this.#gone = new AbortController());
      const response = this.response;
      response.once('close', () => {
        if (!response.writableFinished) gone.abort();
      });
    }
    return this.#gone.signal;
  }
}

async function readGetBody(
  stream: NodeJS.ReadableStream,
  contentType: string | undefined,
  limit: number,
): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Past the limit the rest is read and dropped (the request timeout bounds it): leaving the loop would destroy the
  // request stream, and the 413 could never be sent on the socket.
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size <= limit) chunks.push(buf);
  }
  if (size > limit)
    throw new RobotError('too_large', 'the request body is too large', `keep it under ${limit} bytes`);
  return parseBody(Buffer.concat(chunks).toString('utf8'), contentType);
}

function pathRegex(path: string): RegExp {
  const escaped = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}

function indexPage(title: string, routes: readonly RouteSpec[]): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const section = (method: 'GET' | 'POST') =>
    routes
      .filter((r) => r.method === method)
      .map((r) => `<li><code>${method} ${esc(displayPath(r.path))}</code> — ${esc(r.summary)}</li>`)
      .join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(title)} — REST API 4.0.0</title></head>
<body><h1>${esc(title)}</h1><p>REST API 4.0.0. JSON in, JSON out.</p>
<h2>GET</h2><ul>
${section('GET')}
</ul><h2>POST</h2><ul>
${section('POST')}
</ul></body></html>
`;
}

/**
 * Builds the fastify app without listening (main.ts alone listens; tests use inject()).
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { RobotError } from '../core/errors.ts';
import type { Logger } from '../robot/robot.ts';
import { parseBody, NO_BODY, type Body } from './body.ts';
import { makeErrorHandler } from './errors.ts';
import { RawReply, type RouteSpec, displayPath } from './route.ts';

export interface AppOptions {
  readonly routes: readonly RouteSpec[];
  readonly logger: Logger;
  /** Allowed CORS origins; '*' (default) allows any. */
  readonly corsOrigins?: '*' | readonly string[];
  /** Body size limit, bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  readonly title?: string;
  /** Where the web view is served, linked from the index page. */
  readonly viewPath?: string;
  /** Routes registered on the app by others (the web view's WebSocket), for the index page. */
  readonly alsoListed?: readonly Pick<RouteSpec, 'method' | 'path' | 'summary'>[];
}

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
  const app = Fastify({
    logger: false,
    bodyLimit,
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
      handler: () =>
        new RawReply(
          'text/html; charset=utf-8',
          indexPage(opts.title ?? 'Robot', [...all, ...(opts.alsoListed ?? [])], opts.viewPath),
        ),
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
        const result = await route.handler({
          params: req.params as Record<string, string>,
          query: req.query as Record<string, string>,
          body,
        });
        if (result instanceof RawReply) return reply.type(result.contentType).send(result.payload);
        return result;
      },
    });
  }
  return app;
}

async function readGetBody(
  stream: NodeJS.ReadableStream,
  contentType: string | undefined,
  limit: number,
): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size > limit)
      throw new RobotError('too_large', 'the request body is too large', `keep it under ${limit} bytes`);
    chunks.push(buf);
  }
  return parseBody(Buffer.concat(chunks).toString('utf8'), contentType);
}

function pathRegex(path: string): RegExp {
  const escaped = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}

function indexPage(
  title: string,
  routes: readonly Pick<RouteSpec, 'method' | 'path' | 'summary'>[],
  viewPath?: string,
): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const section = (method: 'GET' | 'POST') =>
    routes
      .filter((r) => r.method === method)
      .map((r) => `<li><code>${method} ${esc(displayPath(r.path))}</code> — ${esc(r.summary)}</li>`)
      .join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(title)} — REST API 4.0.0</title></head>
<body><h1>${esc(title)}</h1><p>REST API 4.0.0. JSON in, JSON out.</p>
${viewPath ? `<p><a href="${esc(viewPath)}">Open the robot in 3D, with its control panels</a></p>\n` : ''}<h2>GET</h2><ul>
${section('GET')}
</ul><h2>POST</h2><ul>
${section('POST')}
</ul></body></html>
`;
}

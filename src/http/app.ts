/**
 * Builds the fastify app without listening (main.ts alone listens; tests use inject()).
 */
import Fastify, {
  type FastifyBodyParser,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type onSendHookHandler,
} from 'fastify';
import { RobotError, shuttingDown } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { NO_BODY, type Body, objectBody, parseBody, readGetBody } from './body.ts';
import { clientErrorHandler, makeErrorHandler } from './errors.ts';
import { openApiRoute, registerOpenApi } from './openapi.ts';
import { bodyValidatorCompiler } from './plain-check.ts';
import { answerRewriter, defaultProfile, type Profile } from './profile.ts';
import { type AnswerCounter, IncomingRequest, RawReply, type RouteSpec } from './route.ts';
import { indexPage } from './index-page.ts';
import type { ChangeCounter } from './robot-answer.ts';
import { DEFAULT_TIMEOUTS, type HttpTimeouts } from './timeouts.ts';
import { Readiness } from './readiness.ts';
import {
  type AccessOptions,
  EdgeAccess,
  type Refusal,
  redactToken,
  refusalOf,
  type TokensFor,
  changesState,
  closeSoon,
  isUpgrade,
} from './access.ts';
import { HEALTH_PATH, healthRoutes, notReady } from './routes/health.ts';

export interface AppOptions {
  readonly routes: readonly RouteSpec[];
  /** Counts every answer with its latency from arrival (the metrics): per route, and those no route gave. */
  readonly counter?: AnswerCounter;
  readonly logger: Logger;
  /** Who may call (src/http/access.ts): allowed hosts and origins, tokens. Default: this server's own origin. */
  readonly access?: AccessOptions;
  /** Instead of access.tokens: the tokens that open each URL (a classroom's main port: the teacher's and a twin's). */
  readonly tokensFor?: TokensFor;
  /** Told of every refused request (after it is logged): the metrics count them. */
  readonly onRefused?: (kind: Refusal) => void;
  /** Body size limit, bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  readonly title?: string;
  /** What clients observe (default: docs/reference/contract.md 1-7; pypot: docs/reference/contract.md 8). */
  readonly profile?: Profile;
  /** Bumped around every request that may change the robot (answers cached per tick watch it). */
  readonly changes?: ChangeCounter;
  /** Log every request at debug level (method, URL, status, milliseconds). */
  readonly requestLog?: boolean;
  /** Connection timeouts (ms); see HttpTimeouts. */
  readonly timeouts?: Partial<HttpTimeouts>;
  /** Where the web view is served, linked from the index page. */
  readonly viewPath?: string;
  /** Routes registered on the app by others (the web view's WebSocket), for the index page. */
  readonly alsoListed?: readonly Pick<RouteSpec, 'method' | 'path' | 'summary'>[];
  /** GET / instead of the index of every path (a classroom's landing page). */
  readonly home?: Pick<RouteSpec, 'summary' | 'handler'>;
  /** Until it is ready, every route but /healthz answers 503 with a tip and Retry-After (default: always
   * ready, and no probes: the app's owner serves its own). */
  readonly readiness?: Readiness;
}

const ALLOWED_HEADERS = 'Content-Type, Accept, Origin, X-Requested-With, Authorization';
/** The body types clients send (JSON, forms, pypot's bare text), given their own parser entry. */
const BODY_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'text/plain'];
/** The headers of every answer when any origin is allowed (`--cors-origins='*'`). */
const OPEN_HEADERS = { 'cache-control': 'no-store', 'access-control-allow-origin': '*' };
/** The headers of every answer to a request without a listed Origin. */
const OWN_HEADERS = { 'cache-control': 'no-store' };
/** Where the common onRequest checks stop: the probes answer whoever asks (orchestrators, load balancers). */
const PROBES = new Set(['/healthz', '/readyz']);

/** The request's arrival (performance.now(), ms), set by the app's onRequest hook. */
const ARRIVED = Symbol('arrived');

/** What the app keeps of each route, for the error handler and the profile. */
declare module 'fastify' {
  interface FastifyContextConfig {
    route?: RouteSpec;
  }
  interface FastifyRequest {
    [ARRIVED]: number;
  }
}

export function buildApp(opts: AppOptions): FastifyInstance {
  const bodyLimit = opts.bodyLimit ?? 1024 * 1024;
  const counter = opts.counter;
  const profile = opts.profile ?? defaultProfile;
  const access = new EdgeAccess(
    opts.access ?? {},
    () => {
      const addr = app.server.address();
      return addr && typeof addr === 'object' ? addr.address : undefined;
    },
    opts.tokensFor,
  );
  /** no-store on every answer; CORS headers for a listed origin's requests (docs/security.md). */
  const commonHeaders = (req: FastifyRequest, reply: FastifyReply) => {
    if (access.anyOrigin) return void reply.headers(OPEN_HEADERS);
    const origin = req.headers.origin;
    if (origin === undefined || !access.listed(origin)) return void reply.headers(OWN_HEADERS);
    reply.headers({ ...OWN_HEADERS, 'access-control-allow-origin': origin, vary: 'Origin' });
  };
  const handleError = makeErrorHandler(opts.logger, profile.jsonType);
  // An answer no route gave (404, 405, a refused unknown URL) is counted here: the not-found handler has no hooks.
  const errorHandler: typeof handleError = counter
    ? (err, req, reply) => {
        handleError(err, req, reply);
        if (req.is404)
          counter.unmatched(req.method, reply.statusCode, performance.now() - req[ARRIVED], req.url);
      }
    : handleError;
  let closing = false;
  const readiness = opts.readiness ?? new Readiness();
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
    // HEAD is not an action: no HEAD twin of each GET (it would run the GET's side effects); HEAD is 405.
    exposeHeadRoutes: false,
    // While closing, requests get our 503 body (onRequest below), not fastify's.
    return503OnClosing: false,
    // Errors node's HTTP parser raises (malformed request, headers too large, request timeout): same JSON body.
    clientErrorHandler: clientErrorHandler(profile.jsonType),
    // Errors the router raises before any hook runs (a malformed %-escape, an over-long segment): same JSON body.
    frameworkErrors: (err, req, reply) => {
      commonHeaders(req, reply);
      errorHandler(err, req, reply);
    },
  });
  if (counter) {
    app.decorateRequest(ARRIVED, 0);
    // Each route counts its answers in an onSend hook of its own, with its path: no per-request route lookup, no
    // global hook. onSend, not onResponse: an onResponse hook makes fastify watch every response's 'finish' and
    // 'error' and read the clock twice (2.5 us of a 42 us goto under load).
    app.addHook('onRoute', (route) => {
      const count = counter.forRoute(route.url);
      const hook: onSendHookHandler = (req, reply, payload, done) => {
        count(req.method, reply.statusCode, performance.now() - req[ARRIVED], req.url);
        done(null, payload);
      };
      const own = route.onSend;
      route.onSend = own === undefined ? hook : [...(Array.isArray(own) ? own : [own]), hook];
    });
  }
  // Bodies are checked by their zod schemas (plain bodies by their plain path first); a failure becomes the 400 error
  // body in errors.ts. Params are strings the domain looks up (404 when unknown): the document takes them from the paths.
  app.setValidatorCompiler(bodyValidatorCompiler);
  // Answers are documented by their schemas and sent as they are.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.removeAllContentTypeParsers();
  const readBody: FastifyBodyParser<string> = (req, text, done) => {
    try {
      done(null, parseBody(String(text), req.headers['content-type']));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  // Every body is read the same way; the common types are named too, since fastify looks a catch-all parser up
  // anew on each request (it parses the header and caches only named types' matches): 3 us of a POST's 39.
  for (const type of [...BODY_TYPES, '*']) app.addContentTypeParser(type, { parseAs: 'string' }, readBody);

  const refuse = (req: FastifyRequest, err: Error) => {
    const kind = refusalOf(err)!;
    const h = req.headers;
    opts.logger.warn(
      `refused (${kind}) ${req.method} ${redactToken(req.url).slice(0, 200)} from ${req.ip}: host ${JSON.stringify(h.host ?? null)}, ` +
        `origin ${JSON.stringify(h.origin ?? h['sec-fetch-site'] ?? null)}`,
    );
    opts.onRefused?.(kind);
    return err;
  };
  // Every request, whatever its URL: the edge's checks, then the server's state (docs/security.md).
  app.addHook('onRequest', (req, reply, done) => {
    if (counter) req[ARRIVED] = performance.now();
    commonHeaders(req, reply);
    const method = req.method;
    const upgrade = isUpgrade(req);
    // An upgrade answered over HTTP (refused, or not a stream) is not the server's connection any more: close it.
    if (upgrade) reply.raw.once('finish', () => closeSoon(req.raw.socket));
    const probe = method === 'GET' && PROBES.has(req.url);
    const refused = probe ? undefined : access.check(req, changesState(method) || upgrade);
    if (refused) done(refuse(req, refused));
    else if (closing) done(shuttingDown());
    else if (!readiness.ready && !req.url.startsWith(HEALTH_PATH)) {
      reply.header('Retry-After', '1');
      done(notReady(readiness));
    } else {
      const cookie = method === 'GET' && access.cookieFor(req);
      if (cookie) reply.header('set-cookie', cookie);
      done();
    }
  });
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // A profile whose answers differ in type or carry ETags rewrites them in an onSend hook.
  const rewrite = answerRewriter(profile);
  if (rewrite) app.addHook('onSend', rewrite);

  app.setErrorHandler(errorHandler);

  const debug = opts.logger.debug;
  if (opts.requestLog && debug)
    app.addHook('onResponse', (req, reply, done) => {
      debug(`${req.method} ${redactToken(req.url)} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)} ms`);
      done();
    });

  const all: RouteSpec[] = [
    {
      method: 'GET',
      path: '/',
      summary: 'this page: every GET and POST path',
      produces: 'text/html; charset=utf-8',
      handler: () =>
        new RawReply(
          'text/html; charset=utf-8',
          indexPage(opts.title ?? 'Robot', [...all, ...(opts.alsoListed ?? [])], opts.viewPath),
        ),
      ...opts.home,
    },
    openApiRoute(app),
    ...(opts.readiness ? healthRoutes(opts.readiness) : []),
    ...opts.routes,
  ];
  const patterns = all.map((r) => ({ method: r.method, re: pathRegex(r.path) }));

  app.setNotFoundHandler((req) => {
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
    throw new RobotError(
      'not_found',
      `no such endpoint: ${req.method} ${path}`,
      'GET / lists every endpoint',
      'unknown route',
    );
  });

  app.options('*', { schema: { hide: true } }, (req, reply) => {
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

  // The document plugin must see every route: it is registered first, the routes after it.
  registerOpenApi(app, { title: opts.title ?? 'Robot', profile });
  void app.register(async (scope) => {
    // A GET that acts (a primitive's start) changes the robot: its origin is checked as a POST's.
    const actionCheck = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
      const refused = access.check(req, true);
      done(refused && refuse(req, refused));
    };
    for (const route of all)
      addRoute(scope, route, profile, bodyLimit, opts.changes, route.action ? actionCheck : undefined);
  });
  return app;
}

function addRoute(
  app: FastifyInstance,
  route: RouteSpec,
  profile: Profile,
  bodyLimit: number,
  changes: ChangeCounter | undefined,
  onRequest: ((req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void) | undefined,
): void {
  const changing = changes && (route.method !== 'GET' || route.action) ? changes : undefined;
  const tip = route.tip ?? 'GET / lists every endpoint; GET /openapi.json describes each body';
  const readsBody = route.method === 'POST' || route.getWithBody;
  app.route({
    method: route.method,
    url: route.path,
    config: { route },
    schema: routeSchema(route),
    onRequest,
    // A callback, not an async hook: a POST's body is already read, and a promise per request costs throughput.
    preValidation: readsBody
      ? (req, _reply, done) => {
          const take = (raw: Body) => {
            try {
              req.body = route.body ? profile.input(route, objectBody(raw, tip)) : raw;
              done();
            } catch (err) {
              done(err as Error);
            }
          };
          if (!route.getWithBody) take((req.body as Body | undefined) ?? NO_BODY);
          else
            readGetBody(req.raw, req.headers['content-type'], bodyLimit).then(take, (err: Error) =>
              done(err),
            );
        }
      : undefined,
    handler: (req, reply) => {
      changing?.bump();
      const params = req.params as Record<string, string>;
      let result: unknown;
      try {
        result = route.handler(
          new IncomingRequest(
            params,
            req.query as Record<string, string>,
            readsBody ? (req.body as Body) : NO_BODY,
            reply.raw,
          ),
        );
      } catch (err) {
        changing?.bump();
        return answer(reply, recover(err, params));
      }
      // Most reads answer at once: only a promise costs the await.
      if (result instanceof Promise)
        return result.then(
          (value) => answer(reply, value),
          (err: unknown) => {
            changing?.bump();
            return answer(reply, recover(err, params));
          },
        );
      return answer(reply, result);
    },
  });

  function recover(err: unknown, params: Readonly<Record<string, string>>): unknown {
    const recovered = profile.failure(route, err, params);
    if (!recovered) throw err;
    return recovered.answer;
  }

  function answer(reply: FastifyReply, result: unknown): FastifyReply {
    changing?.bump();
    if (result instanceof RawReply) return reply.type(result.contentType).send(result.payload);
    const status = profile.status(route);
    if (status === 204) return reply.code(204).send();
    return reply.code(status).send(profile.answer(route, result));
  }
}

/** The fastify schema of a route: what the validator checks (the body) and what the document shows. */
function routeSchema(route: RouteSpec): Record<string, unknown> {
  const schema: Record<string, unknown> = {};
  const body = route.body ?? route.bareBody;
  if (body) schema.body = body;
  if (route.answer) schema.response = { 200: route.answer };
  return schema;
}

function pathRegex(path: string): RegExp {
  const escaped = path
    .split('/')
    .map((seg) =>
      seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}

/** The one place where errors become HTTP: {error, tip, details}, never HTML, never a stack trace. */
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { type ErrorCode, RobotError, badRequest } from '../core/errors.ts';
import { describe } from '../core/values.ts';
import type { Logger } from '../core/logger.ts';

export const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  read_only: 403,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  unreachable: 422,
  too_large: 413,
  hardware: 503,
  unavailable: 503,
  timeout: 504,
  internal: 500,
};

export interface ErrorBody {
  error: string;
  tip: string;
  details: string;
}

/** One issue of a body that does not fit its route's schema (fastify-type-provider-zod's validation error). */
interface SchemaIssue {
  readonly instancePath: string;
  readonly message: string;
}

/** The field a schema issue is about (`/positions/1` -> `positions[1]`) and the value the request sent there. */
function fieldOf(issue: SchemaIssue, body: unknown): { name: string; value: unknown } {
  const path = issue.instancePath.split('/').filter(Boolean);
  let value = body;
  for (const key of path)
    value =
      value !== null && typeof value === 'object' && Object.hasOwn(value, key)
        ? (value as Record<string, unknown>)[key]
        : undefined;
  const name = path.map((k, i) => (/^\d+$/.test(k) ? `[${k}]` : i ? `.${k}` : k)).join('');
  return { name, value };
}

function schemaError(issues: readonly SchemaIssue[], body: unknown, tip: string): ErrorBody {
  const issue = issues[0]!;
  const { name, value } = fieldOf(issue, body);
  if (!name)
    return { error: 'the body must be a JSON object of fields', tip, details: `got ${describe(value)}` };
  if (value === undefined) return { error: `${name} is missing`, tip, details: issue.message };
  return { error: `${name} ${issue.message}`, tip, details: `got ${describe(value)}` };
}

/** A body that does not fit a schema checked by hand (a GET with a body): the same 400 as at the edge. */
export function schemaFailure(err: z.ZodError, input: unknown, tip: string): RobotError {
  const issues = err.issues.map((i) => ({ instancePath: `/${i.path.join('/')}`, message: i.message }));
  const body = schemaError(issues, input, tip);
  return badRequest(body.error, body.tip, body.details);
}

/** What a schema failure needs of its request: the body that was checked and the route's tip. */
export interface FailedRequest {
  readonly body: unknown;
  readonly tip: string | undefined;
}

export function errorBody(err: unknown, req?: FailedRequest): { status: number; body: ErrorBody } {
  if (err instanceof RobotError) {
    return { status: STATUS[err.code], body: { error: err.message, tip: err.tip, details: err.details } };
  }
  const fe = err as FastifyError & { validation?: SchemaIssue[] };
  if (Array.isArray(fe?.validation) && fe.validation.length)
    return {
      status: 400,
      body: schemaError(
        fe.validation,
        req?.body,
        req?.tip ?? 'GET /openapi.json describes the body of every endpoint',
      ),
    };
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || fe?.statusCode === 413) {
    return {
      status: 413,
      body: { error: 'the request body is too large', tip: 'send a smaller body', details: fe.message },
    };
  }
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return {
      status: fe.statusCode,
      body: { error: 'the request is malformed', tip: 'check the body and the URL', details: fe.message },
    };
  }
  return {
    status: 500,
    body: {
      error: 'internal error',
      tip: 'this is a bug in the server; the request changed nothing it could undo',
      details: String(fe?.message ?? err).slice(0, 200),
    },
  };
}

export function makeErrorHandler(logger: Logger, jsonType = 'application/json; charset=utf-8') {
  return (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const failed = {
      body: req.body,
      get tip() {
        return req.routeOptions.config.route?.tip;
      },
    };
    const { status, body } = errorBody(err, failed);
    logFailure(logger, err, status, req.method, req.url);
    if (err instanceof RobotError && err.code === 'method_not_allowed' && err.details)
      reply.header('Allow', err.details);
    if (err instanceof RobotError && err.code === 'unauthorized') reply.header('WWW-Authenticate', 'Bearer');
    // Serialised here with the profile's JSON type: some errors (router, client) skip the onSend hooks.
    void reply.code(status).type(jsonType).send(JSON.stringify(body));
  };
}

/** A 5xx that is the server's fault is logged with its stack; a shutdown's 503 and a primitive's timeout are expected
 * answers, not faults. */
export function logFailure(logger: Logger, err: unknown, status: number, method: string, url: string): void {
  const expected = err instanceof RobotError && (err.code === 'unavailable' || err.code === 'timeout');
  if (status >= 500 && !expected) logger.error(`${method} ${url}: ${(err as Error)?.stack ?? String(err)}`);
}

/** Node's own HTTP errors, before any request exists: answered with the JSON error body, then the socket closes. */
const CLIENT_ERRORS: Readonly<Record<string, [number, string, ErrorBody]>> = {
  ERR_HTTP_REQUEST_TIMEOUT: [
    408,
    'Request Timeout',
    {
      error: 'the request took too long to arrive',
      tip: 'send the whole request at once',
      details: 'request timeout',
    },
  ],
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    {
      error: 'the request headers are too large',
      tip: 'send fewer or shorter headers',
      details: 'header overflow',
    },
  ],
};

export function clientErrorHandler(jsonType: string) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, body] = CLIENT_ERRORS[err.code ?? ''] ?? [
      400,
      'Bad Request',
      {
        error: 'the request is malformed HTTP',
        tip: 'send a valid HTTP/1.1 request',
        details: String(err.code ?? 'parse error'),
      },
    ];
    const payload = JSON.stringify(body);
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${jsonType}\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n` +
        `Cache-Control: no-store\r\nConnection: close\r\n\r\n${payload}`,
    );
  };
}

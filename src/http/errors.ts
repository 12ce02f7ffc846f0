/** The one place where errors become HTTP: {error, tip, details}, never HTML, never a stack trace. */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorCode, RobotError } from '../core/errors.ts';
import type { Logger } from '../robot/robot.ts';

export const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  read_only: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
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

export function errorBody(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof RobotError) {
    return { status: STATUS[err.code], body: { error: err.message, tip: err.tip, details: err.details } };
  }
  const fe = err as FastifyError;
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

export function makeErrorHandler(logger: Logger) {
  return (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const { status, body } = errorBody(err);
    // A shutdown's 503 and a primitive's timeout are expected answers, not server faults.
    const expected = err instanceof RobotError && (err.code === 'unavailable' || err.code === 'timeout');
    if (status >= 500 && !expected)
      logger.error(`${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}`);
    if (err instanceof RobotError && err.code === 'method_not_allowed' && err.details)
      reply.header('Allow', err.details);
    void reply.code(status).send(body);
  };
}

/**
 * Typed errors with a code. The HTTP layer maps codes to statuses in one place (src/http/errors.ts).
 * `message` is the one-sentence "error", `tip` says how to get it right, `details` gives the cause.
 */
export type ErrorCode =
  | 'bad_request'
  | 'read_only'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'unreachable'
  | 'too_large'
  | 'hardware'
  | 'unavailable'
  | 'timeout'
  | 'internal';

export class RobotError extends Error {
  readonly code: ErrorCode;
  readonly tip: string;
  readonly details: string;
  constructor(code: ErrorCode, message: string, tip = '', details = '') {
    super(message);
    this.name = 'RobotError';
    this.code = code;
    this.tip = tip;
    this.details = details;
  }
}

export const badRequest = (message: string, tip = '', details = '') =>
  new RobotError('bad_request', message, tip, details);
export const notFound = (message: string, tip = '', details = '') =>
  new RobotError('not_found', message, tip, details);
export const readOnly = (message: string, tip = '', details = '') =>
  new RobotError('read_only', message, tip, details);
export const conflict = (message: string, tip = '', details = '') =>
  new RobotError('conflict', message, tip, details);
/** 422: a well-formed request the robot cannot carry out (an IK target out of reach). */
export const unreachable = (message: string, tip = '', details = '') =>
  new RobotError('unreachable', message, tip, details);
export const hardwareError = (message: string, tip = '', details = '') =>
  new RobotError('hardware', message, tip, details);
/** 503: the server is shutting down (pending `wait` answers, requests that arrive meanwhile). */
export const shuttingDown = () =>
  new RobotError(
    'unavailable',
    'server shutting down',
    'retry once the server is back',
    'the server received SIGINT or SIGTERM',
  );
/** 504: something the server waited for (a custom primitive's method) did not answer in time. */
export const timedOut = (message: string, tip = '', details = '') =>
  new RobotError('timeout', message, tip, details);

/** A bad robot config or CLI flag: names the field and, when known, the file. */
export class ConfigError extends Error {
  readonly field: string;
  readonly file: string | undefined;
  constructor(field: string, problem: string, file?: string) {
    super(`${file ? `${file}: ` : ''}${field}: ${problem}`);
    this.name = 'ConfigError';
    this.field = field;
    this.file = file;
  }
}

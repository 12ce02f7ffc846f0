/**
 * The project's Logger, and the server's log behind it: pino with levels, readable lines on a terminal (pino-pretty)
 * and JSON lines otherwise, written synchronously so nothing is lost when the process exits.
 */
import pino from 'pino';

/**
 * Where the robot and everything above it log. main.ts backs it with pino (`asLogger`); `debug` is optional so
 * a plain object of three functions still fits. Every warning and error names the motor, primitive or move.
 */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  debug?(msg: string): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, debug() {} };

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogOptions {
  readonly level: LogLevel;
  /** Human-readable lines (default: when stdout is a terminal). */
  readonly pretty?: boolean;
}

/** The server's log; pino-pretty (~100 ms to load) is loaded only for a terminal. */
export async function createPino(opts: LogOptions): Promise<pino.Logger> {
  const readable = opts.pretty ?? Boolean(process.stdout.isTTY);
  const stream = readable
    ? (await import('pino-pretty')).default({
        sync: true,
        colorize: true,
        ignore: 'pid,hostname',
        translateTime: 'HH:MM:ss.l',
      })
    : pino.destination({ dest: 1, sync: true });
  return pino({ level: opts.level, base: undefined }, stream);
}

export function asLogger(log: pino.Logger): Logger {
  return {
    info: (msg) => log.info(msg),
    warn: (msg) => log.warn(msg),
    error: (msg) => log.error(msg),
    debug: (msg) => log.debug(msg),
  };
}

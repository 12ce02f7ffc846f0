/**
 * The live state stream: one encoder, many viewers. A pump at the highest viewer rate encodes the state at most
 * once per pump, and only when the robot has ticked since the last encoding, then hands the same string to every
 * viewer that is due. Viewers are paced by wall time (they are people looking at a screen), the robot by its own
 * clock: the stream never waits for a viewer. A viewer whose socket buffer is full skips frames; one that stays
 * full for `dropAfterMs` is closed.
 */
import { badRequest } from '../core/errors.ts';
import { describe } from '../core/values.ts';
import { MAX_RATE } from './protocol.ts';

/** The part of a WebSocket the stream uses (ws's WebSocket fits). */
export interface ViewerSocket {
  send(data: string): void;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount: number;
  close(code: number, reason: string): void;
}

export interface StreamSource {
  /** Changes whenever there may be new state (the robot's tick count). */
  version(): number;
  /** The state as JSON text, numbered `seq`. */
  encode(seq: number): string;
}

export interface StreamOptions {
  /** Wall time, milliseconds. */
  readonly now?: () => number;
  /** Calls `fn` every `ms` until the returned function is called. */
  readonly every?: (fn: () => void, ms: number) => () => void;
  /** A viewer with more than this many bytes queued skips frames (default 256 KiB). */
  readonly maxBufferedBytes?: number;
  /** A viewer that skipped every frame for this long is closed (default 5000 ms). */
  readonly dropAfterMs?: number;
}

export interface ViewerHandle {
  setRate(rate: number): void;
  remove(): void;
}

interface Viewer {
  readonly socket: ViewerSocket;
  periodMs: number;
  lastSentAt: number;
  lastVersion: number | undefined;
  /** When it began skipping frames because its buffer was full. */
  slowSince: number | undefined;
}

/** Close code for a viewer too slow to keep up (application range 4000-4999). */
export const CLOSE_TOO_SLOW = 4001;

/** A rate in Hz from a query value or a message: 0 < rate <= MAX_RATE. */
export function parseRate(value: unknown): number {
  const rate = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > MAX_RATE)
    throw badRequest(
      `rate must be a number of frames per second above 0 and at most ${MAX_RATE}`,
      `ask for ?rate=20, or send {"rate": 20} on the socket`,
      `got ${describe(value)}`,
    );
  return rate;
}

export class StateStream {
  readonly #source: StreamSource;
  readonly #now: () => number;
  readonly #every: (fn: () => void, ms: number) => () => void;
  readonly #maxBuffered: number;
  readonly #dropAfter: number;
  readonly #viewers = new Set<Viewer>();
  #stopPump: (() => void) | undefined;
  /** The pump's interval, ms: half the fastest viewer's period (0: no pump). */
  #pumpInterval = 0;
  #seq = 0;
  #encoded: { version: number; text: string } | undefined;
  #framesSent = 0;
  #framesSkipped = 0;
  #encodings = 0;

  constructor(source: StreamSource, opts: StreamOptions = {}) {
    this.#source = source;
    this.#now = opts.now ?? (() => performance.now());
    this.#every =
      opts.every ??
      ((fn, ms) => {
        const timer = setInterval(fn, ms);
        return () => clearInterval(timer);
      });
    this.#maxBuffered = opts.maxBufferedBytes ?? 256 * 1024;
    this.#dropAfter = opts.dropAfterMs ?? 5000;
  }

  /** Adds a viewer at `rate` Hz; it gets the current state at once. */
  add(socket: ViewerSocket, rate: number): ViewerHandle {
    const viewer: Viewer = {
      socket,
      periodMs: 1000 / parseRate(rate),
      lastSentAt: -Infinity,
      lastVersion: undefined,
      slowSince: undefined,
    };
    this.#viewers.add(viewer);
    this.#retunePump();
    this.#sendTo([viewer], this.#now());
    return {
      setRate: (r) => {
        viewer.periodMs = 1000 / parseRate(r);
        this.#retunePump();
      },
      remove: () => {
        if (this.#viewers.delete(viewer)) this.#retunePump();
      },
    };
  }

  get viewerCount(): number {
    return this.#viewers.size;
  }

  /** Frames handed to sockets, frames skipped for full buffers, states encoded (benchmarks, tests). */
  stats(): { sent: number; skipped: number; encodings: number } {
    return { sent: this.#framesSent, skipped: this.#framesSkipped, encodings: this.#encodings };
  }

  /** One round: every due viewer gets the latest state if it has not seen it. Public for tests. */
  pump(): void {
    const now = this.#now();
    const due: Viewer[] = [];
    for (const v of this.#viewers) {
      // Half a pump interval of slack: a round a little early still sends.
      if (now - v.lastSentAt >= v.periodMs - this.#pumpInterval / 2) due.push(v);
    }
    if (due.length) this.#sendTo(due, now);
  }

  /** Closes every viewer and stops the pump. */
  close(): void {
    for (const v of this.#viewers) v.socket.close(1001, 'server closing');
    this.#viewers.clear();
    this.#retunePump();
  }

  #sendTo(viewers: readonly Viewer[], now: number): void {
    const version = this.#source.version();
    for (const v of viewers) {
      if (v.lastVersion === version) continue;
      if (v.socket.bufferedAmount > this.#maxBuffered) {
        this.#framesSkipped++;
        v.slowSince ??= now;
        if (now - v.slowSince >= this.#dropAfter) {
          this.#viewers.delete(v);
          v.socket.close(CLOSE_TOO_SLOW, 'viewer too slow: frames piled up');
        }
        continue;
      }
      v.slowSince = undefined;
      try {
        v.socket.send(this.#text(version));
        this.#framesSent++;
      } catch {
        this.#viewers.delete(v); // a socket that cannot take a frame is gone; its close event may follow
      }
      v.lastSentAt = now;
      v.lastVersion = version;
    }
    if (this.#viewers.size === 0) this.#retunePump();
  }

  #text(version: number): string {
    if (this.#encoded?.version !== version) {
      this.#encoded = { version, text: this.#source.encode(++this.#seq) };
      this.#encodings++;
    }
    return this.#encoded.text;
  }

  /**
   * Runs the pump at twice the fastest viewer's rate, or not at all without viewers. A viewer that found no new state
   * at one round (the robot's tick came just after it: the sim takes its steps in 10 ms batches) gets it at the next,
   * half a period later, instead of losing that frame: 46.3-47.0 -> 48.1-48.5 frames a second with 10 viewers at 50 Hz.
   */
  #retunePump(): void {
    const interval = this.#viewers.size ? Math.min(...[...this.#viewers].map((v) => v.periodMs)) / 2 : 0;
    if (interval === this.#pumpInterval) return;
    this.#stopPump?.();
    this.#stopPump = undefined;
    this.#pumpInterval = interval;
    if (interval > 0) this.#stopPump = this.#every(() => this.pump(), interval);
  }
}

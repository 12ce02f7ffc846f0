/** Time is a dependency: everything that waits asks a Clock. Seconds throughout. */
export interface Clock {
  /** Current time, seconds since the clock started. */
  now(): number;
  /** Resolves after `s` seconds of this clock's time; rejects with an AbortError when `signal` aborts. */
  sleep(s: number, signal?: AbortSignal): Promise<void>;
  /** Resolves when this clock reaches time `t`. */
  sleepUntil(t: number, signal?: AbortSignal): Promise<void>;
}

export class AbortError extends Error {
  constructor(message = 'aborted') {
    super(message);
    this.name = 'AbortError';
  }
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

interface Timer {
  due: number;
  seq: number;
  resolve: () => void;
  cancelled: boolean;
}

/**
 * A clock whose time only moves when its owner says so: the simulator after each physics step, or a test.
 * Timers fire in due order; the owner must let microtasks run after firing (see advanceManualClock).
 */
export class SteppedClock implements Clock {
  #now = 0;
  #seq = 0;
  #heap: Timer[] = [];

  now(): number {
    return this.#now;
  }

  sleep(s: number, signal?: AbortSignal): Promise<void> {
    return this.sleepUntil(this.#now + Math.max(0, s), signal);
  }

  sleepUntil(t: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortError());
    return new Promise<void>((resolve, reject) => {
      const timer: Timer = { due: t, seq: this.#seq++, resolve, cancelled: false };
      if (signal) {
        const onAbort = () => {
          timer.cancelled = true;
          reject(new AbortError());
        };
        signal.addEventListener('abort', onAbort, { once: true });
        timer.resolve = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
      }
      this.#push(timer);
    });
  }

  /** Due time of the earliest pending timer, or Infinity. */
  nextDue(): number {
    while (this.#heap.length && this.#heap[0]!.cancelled) this.#pop();
    return this.#heap.length ? this.#heap[0]!.due : Infinity;
  }

  /** Moves time forward (never back) without firing anything. */
  setNow(t: number): void {
    if (t > this.#now) this.#now = t;
  }

  /** Resolves every timer due at or before now; returns how many fired. */
  fireDue(): number {
    let fired = 0;
    while (this.#heap.length && this.#heap[0]!.due <= this.#now + 1e-12) {
      const timer = this.#pop();
      if (!timer.cancelled) {
        timer.resolve();
        fired++;
      }
    }
    return fired;
  }

  pendingTimers(): number {
    return this.#heap.filter((t) => !t.cancelled).length;
  }

  #push(timer: Timer): void {
    const h = this.#heap;
    h.push(timer);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  #pop(): Timer {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

/** Lets every pending promise continuation run (one macrotask turn). */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Test helper and pure-logic driver: advance a SteppedClock by `dt`, firing timers in order. */
export async function advanceManualClock(clock: SteppedClock, dt: number): Promise<void> {
  const end = clock.now() + dt;
  await flushMicrotasks();
  for (;;) {
    const next = Math.min(clock.nextDue(), end);
    clock.setNow(next);
    clock.fireDue();
    await flushMicrotasks();
    if (next >= end && clock.nextDue() > end) break;
  }
}

/** WallClock wakes from its timer this long (ms) before the time, then yields turns until it (by default). */
const WAKE_EARLY_MS = 1;

/** Wall-clock time for the real robot. */
export class WallClock implements Clock {
  readonly #start = performance.now();
  readonly #wakeEarlyMs: number;

  /** `wakeEarlyMs`: how long before the time its timer wakes to yield turns until it (0: the timer alone). */
  constructor(opts: { wakeEarlyMs?: number } = {}) {
    this.#wakeEarlyMs = opts.wakeEarlyMs ?? WAKE_EARLY_MS;
  }

  now(): number {
    return (performance.now() - this.#start) / 1000;
  }

  sleep(s: number, signal?: AbortSignal): Promise<void> {
    return this.sleepUntil(this.now() + s, signal);
  }

  #sleep(s: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortError());
    return new Promise((resolve, reject) => {
      const timeout = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, s * 1000),
      );
      const onAbort = () => {
        clearTimeout(timeout);
        reject(new AbortError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * A timer for the bulk of the wait, woken `wakeEarlyMs` early, then turns of the event loop (setImmediate: I/O is
   * served between them) until the time: a timer alone is late by up to a millisecond, and a wait already due would
   * still cost setTimeout's 1 ms floor, which capped the real backend's loop and made its 50 Hz cycles start late.
   * Always yields at least once. The turns cost up to `wakeEarlyMs` of CPU per wait: 5 % of a core at 50 Hz for 1 ms.
   */
  async sleepUntil(t: number, signal?: AbortSignal): Promise<void> {
    // A timer may fire up to a millisecond before its time (libuv counts whole ms): it is re-armed until due.
    for (let early = this.#untilWake(t); early > 0; early = this.#untilWake(t))
      await this.#sleep(early / 1000, signal);
    do {
      if (signal?.aborted) throw new AbortError();
      await new Promise((resolve) => setImmediate(resolve));
    } while (this.now() < t);
  }

  /** How long (ms) until the timer should wake for time `t`. */
  #untilWake(t: number): number {
    return (t - this.now()) * 1000 - this.#wakeEarlyMs;
  }
}

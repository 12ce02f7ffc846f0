/**
 * The bus process's wall clock (bus-service.ts): one timer a wait, so the sync loop wakes once a cycle. WallClock with
 * `wakeEarlyMs: 0` (src/core/clock.ts) woke about twice: its timer of a fractional delay fired up to a millisecond
 * early (libuv counts whole milliseconds) and was re-armed for the rest; and it added and removed an abort listener
 * per wait. The delay rounded up, the first timer is the last one nearly always: 1.01 wakes a cycle instead of 1.9 in
 * a 50 Hz loop here, for the same lateness (p50 0.8 ms, p99 2-3 ms). Both then yield one turn of the event loop.
 */
import { AbortError, type Clock } from '../core/clock.ts';

interface Wait {
  timer: NodeJS.Timeout | undefined;
  immediate: NodeJS.Immediate | undefined;
  readonly reject: (err: Error) => void;
}

export class TimerClock implements Clock {
  readonly #start = performance.now();
  /** The waits under way per signal: one abort listener per signal ends them all (none added per wait). */
  readonly #waits = new WeakMap<AbortSignal, Set<Wait>>();

  now(): number {
    return (performance.now() - this.#start) / 1000;
  }

  sleep(s: number, signal?: AbortSignal): Promise<void> {
    return this.sleepUntil(this.now() + Math.max(0, s), signal);
  }

  /**
   * Resolves once this clock reaches `t`, never before: a timer rounded up to whole milliseconds (re-armed in the rare
   * case it fires early), then one turn of the event loop (setImmediate), as WallClock: what the port and the server
   * sent by then is served before the caller goes on, and a loop catching up serves its I/O between cycles.
   */
  sleepUntil(t: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortError());
    return new Promise<void>((resolve, reject) => {
      const waits = signal && this.#waitsOf(signal);
      const wait: Wait = { timer: undefined, immediate: undefined, reject };
      const done = () => {
        waits?.delete(wait);
        resolve();
      };
      const wake = () => {
        const ms = (t - this.now()) * 1000;
        if (ms > 0) wait.timer = setTimeout(wake, Math.ceil(ms));
        else wait.immediate = setImmediate(done);
      };
      waits?.add(wait);
      wake();
    });
  }

  #waitsOf(signal: AbortSignal): Set<Wait> {
    let waits = this.#waits.get(signal);
    if (waits) return waits;
    const all = (waits = new Set());
    this.#waits.set(signal, all);
    signal.addEventListener(
      'abort',
      () => {
        for (const w of all) {
          clearTimeout(w.timer);
          clearImmediate(w.immediate);
          w.reject(new AbortError());
        }
        all.clear();
      },
      { once: true },
    );
    return waits;
  }
}

/**
 * The marker detector as a sensor: runs the detector on the camera's frame in the background at a fixed rate
 * (pypot's MarkerDetector runs at 1 Hz) while someone asks for markers, and keeps the latest list. Idle (nothing asked
 * for `idleAfter` seconds) it renders and detects nothing: thirty classroom twins that nobody points a camera at cost
 * no detections, and the first read after a pause waits for a fresh one. Time is the backend's clock, so on the twin
 * the rate is in sim time and tests drive it by advancing the clock.
 */
import type { Camera, Frame } from '../core/backend.ts';
import { AbortError, type Clock, isAbortError } from '../core/clock.ts';
import { type DetectedMarker, MarkerDetector } from './detect.ts';

/** pypot's marker detector rate (docs/reference/camera.md 7). */
export const DEFAULT_DETECTOR_RATE = 1;
/** Seconds (of the clock) without a read or a look at the camera after which background detection pauses. */
export const DEFAULT_IDLE_AFTER_S = 10;

export interface MarkerWatcherOptions {
  readonly camera: Camera;
  readonly clock: Clock;
  /** Detections per second (of the clock's time). */
  readonly rate?: number;
  /** Called when a grab or a detection fails; the watcher keeps going with an empty list. */
  readonly onError?: (err: unknown) => void;
  /**
   * Where detection runs (default: inline, in this thread). A server in real time passes a WorkerDetector's, so that
   * a detection never stalls the requests and physics steps that arrive meanwhile.
   */
  readonly detect?: (frame: Frame) => Promise<readonly DetectedMarker[]>;
  /** Called once by close(): what `detect` holds (a worker). */
  readonly closeDetector?: () => Promise<void>;
  /**
   * At most this many detections per second of wall time (default: no cap). A sim at --speed max runs the clock 30 to
   * 50 times faster than the wall: at 1 Hz of sim time the camera would render 30 to 50 frames a wall second on the
   * thread that steps the physics. A server in real time caps it (10 Hz); a manual clock never does.
   */
  readonly maxWallRate?: number;
  /** Background detection pauses this long (clock seconds) after the last demand (default 10; Infinity: never). */
  readonly idleAfter?: number;
}

export interface MarkerReading {
  readonly markers: readonly DetectedMarker[];
  /** Size of the frame the markers were found in (to normalise their positions). */
  readonly width: number;
  readonly height: number;
  /** Clock time of the frame. */
  readonly time: number;
}

export class MarkerWatcher {
  readonly rate: number;
  readonly #camera: Camera;
  readonly #clock: Clock;
  readonly #detect: (frame: Frame) => readonly DetectedMarker[] | Promise<readonly DetectedMarker[]>;
  readonly #closeDetector: (() => Promise<void>) | undefined;
  readonly #onError: (err: unknown) => void;
  readonly #minWallGapMs: number;
  readonly #idleAfter: number;
  readonly #empty: MarkerReading;
  #latest: MarkerReading;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  /** Clock time of the last demand (a read, a frame looked at). */
  #askedAt = -Infinity;
  /** Wakes the paused background loop. */
  #wake: (() => void) | undefined;
  /** A detection a read is waiting for (reads at once share it). */
  #fresh: Promise<MarkerReading> | undefined;

  constructor(opts: MarkerWatcherOptions) {
    this.rate = opts.rate ?? DEFAULT_DETECTOR_RATE;
    if (!(this.rate > 0)) throw new RangeError(`detector rate must be > 0, got ${this.rate}`);
    this.#camera = opts.camera;
    this.#clock = opts.clock;
    this.#onError = opts.onError ?? (() => undefined);
    if (opts.detect) this.#detect = opts.detect;
    else {
      const inline = new MarkerDetector();
      this.#detect = (frame) => inline.detect(frame);
    }
    this.#closeDetector = opts.closeDetector;
    this.#minWallGapMs = opts.maxWallRate ? 1000 / opts.maxWallRate : 0;
    this.#idleAfter = opts.idleAfter ?? DEFAULT_IDLE_AFTER_S;
    const [width, height] = opts.camera.resolution;
    this.#empty = this.#latest = { markers: [], width, height, time: -Infinity };
  }

  /**
   * The markers of the latest detection (empty before the first one, and while idle). Cheap, and no demand: the live
   * state stream reads it at every frame.
   */
  latest(): MarkerReading {
    return this.#latest;
  }

  /** Someone looks (the camera's frame was asked): keep detecting in the background, without waiting for it. */
  demand(): void {
    this.#askedAt = this.#clock.now();
    this.#wake?.();
  }

  /**
   * The markers for a reader: the latest detection when it is at most one period and a half old, else a fresh one
   * (after a pause); keeps the background detection going. A failed detection is reported and reads as none.
   */
  async read(): Promise<MarkerReading> {
    this.demand();
    if (this.#clock.now() - this.#latest.time <= 1.5 / this.rate) return this.#latest;
    this.#fresh ??= this.detectNow().finally(() => (this.#fresh = undefined));
    try {
      return await this.#fresh;
    } catch (err) {
      this.#onError(err);
      return this.#latest;
    }
  }

  /** Whether a demand came within the idle time. */
  #demanded(): boolean {
    return this.#clock.now() - this.#askedAt <= this.#idleAfter;
  }

  /** Resolves at the next demand; rejects with an AbortError when `signal` aborts. */
  #demandOrAbort(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new AbortError());
      const onAbort = () => {
        this.#wake = undefined;
        reject(new AbortError());
      };
      this.#wake = () => {
        this.#wake = undefined;
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Grabs a frame now, detects, and makes that the latest reading. */
  async detectNow(): Promise<MarkerReading> {
    const time = this.#clock.now();
    try {
      const frame = await this.#camera.grab();
      const markers = await this.#detect(frame);
      this.#latest = {
        markers,
        width: frame.width,
        height: frame.height,
        time,
      };
    } catch (err) {
      this.#latest = { ...this.#latest, markers: [], time };
      throw err;
    }
    return this.#latest;
  }

  /** Starts the background detection (idempotent). */
  start(): void {
    if (this.#loop) return;
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal);
  }

  /** Stops the background detection and waits for it to end; idempotent. */
  async close(): Promise<void> {
    this.#abort?.abort();
    await this.#loop;
    this.#loop = undefined;
    await this.#closeDetector?.();
  }

  /**
   * Waits a period first: the server's start-up (and its first requests) should not wait for a detection. Paused
   * while nobody asks, with the latest reading emptied (no stale markers on the state stream).
   */
  async #run(signal: AbortSignal): Promise<void> {
    let lastWall = -Infinity;
    while (!signal.aborted) {
      try {
        if (!this.#demanded()) {
          this.#latest = this.#empty;
          await this.#demandOrAbort(signal);
          continue;
        }
        await this.#clock.sleep(1 / this.rate, signal);
        const gap = lastWall + this.#minWallGapMs - performance.now();
        if (gap > 0) await wallDelay(gap, signal);
      } catch (err) {
        if (!isAbortError(err)) this.#onError(err);
        return;
      }
      // Nobody asked during the period (it pauses at the top), or a read detected meanwhile (one a period is enough).
      if (!this.#demanded() || this.#clock.now() - this.#latest.time < 0.5 / this.rate) continue;
      lastWall = performance.now();
      try {
        await this.detectNow();
      } catch (err) {
        this.#onError(err);
      }
    }
  }
}

/** Waits `ms` of wall time; rejects with an AbortError when `signal` aborts. */
function wallDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortError());
    };
    // The listener goes with the wait: left on the watcher's long-lived signal, one piled up per capped detection.
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

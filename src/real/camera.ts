/**
 * The real robot's camera: frames from a capture process, raw RGB on its standard output. ffmpeg (Debian's package)
 * serves a V4L2 webcam (`--camera=/dev/video0`), a picture or a video looped (`--camera=card.png`), a stream URL, or
 * any ffmpeg input (`--camera="-f lavfi -i testsrc"`); GStreamer's gst-launch-1.0 serves `--camera=gst:<source
 * elements>` (`gst:libcamerasrc`, the Raspberry Pi camera module on Raspberry Pi OS; `gst:v4l2src`): a fifth of
 * ffmpeg's memory, which loads every codec library it links (docs/decisions/0070-camera-through-gstreamer.md).
 *
 * The capture starts at the first grab (an idle camera costs nothing) and stops after IDLE_STOP_MS without one; the
 * latest frame is kept and served while it is younger than a few frame periods. When it dies (camera unplugged,
 * bad input), grabs answer a hardware error (HTTP 503) naming its last words, and the next grab after a back-off
 * starts it again: the motors never wait for the camera.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Camera, Frame } from '../core/backend.ts';
import { hardwareError } from '../core/errors.ts';

/** The capture is stopped after this long without a grab (ms). */
const IDLE_STOP_MS = 30_000;
/** First restart delay after the capture ends on its own, doubled per failure up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 10_000;
/**
 * How long a grab waits for the first frame of a freshly started capture: a V4L2 device may take a second, and ffmpeg's
 * first start after boot loads its libraries from disk (3.4 s here alone, over 5 s beside the test suite).
 */
const START_TIMEOUT_MS = 15_000;
const FFMPEG_TIP =
  'check the --camera source (a V4L2 device such as /dev/video0, a picture, a URL, or ffmpeg input options) and that ffmpeg is installed (apt-get install ffmpeg)';
const GST_TIP =
  'check the --camera=gst: source elements (gst:libcamerasrc, gst:v4l2src device=/dev/video0) and that GStreamer is installed (apt-get install gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good, and gstreamer1.0-libcamera for libcamerasrc)';

/** `--camera=gst:<elements>`: a GStreamer source, the rest of the pipeline ours. */
const GST_PREFIX = 'gst:';

export interface CaptureCameraOptions {
  /**
   * `/dev/video<N>`, a file or URL, `lavfi:<filtergraph>`, or ffmpeg input options starting with `-` (ffmpeg); or
   * `gst:<source elements>` (GStreamer).
   */
  readonly source: string;
  readonly resolution: readonly [number, number];
  readonly fps: number;
  /** The ffmpeg executable (default `ffmpeg` on the PATH). */
  readonly ffmpeg?: string;
  /** GStreamer's launcher (default `gst-launch-1.0` on the PATH). */
  readonly gstLaunch?: string;
  readonly log?: (line: string) => void;
}

/** The capture's command line for a --camera source: raw RGB frames of `resolution` at `fps` on its stdout. */
export function captureCommand(
  opts: Pick<CaptureCameraOptions, 'source' | 'resolution' | 'fps' | 'ffmpeg' | 'gstLaunch'>,
): { readonly tool: 'ffmpeg' | 'gst-launch-1.0'; readonly file: string; readonly args: string[] } {
  const [w, h] = opts.resolution;
  if (opts.source.startsWith(GST_PREFIX)) {
    const source = opts.source.slice(GST_PREFIX.length).split(/\s+/).filter(Boolean);
    return {
      tool: 'gst-launch-1.0',
      file: opts.gstLaunch ?? 'gst-launch-1.0',
      // -q: nothing but the frames on stdout. The sink keeps the clock, so a source that is not live is paced too.
      args: [
        '-q',
        ...source,
        ...['!', 'videoconvert', '!', 'videoscale', '!', 'videorate', '!'],
        `video/x-raw,format=RGB,width=${w},height=${h},framerate=${opts.fps}/1`,
        ...['!', 'fdsink', 'fd=1', 'sync=true'],
      ],
    };
  }
  return {
    tool: 'ffmpeg',
    file: opts.ffmpeg ?? 'ffmpeg',
    args: [
      '-hide_banner',
      '-loglevel',
      'error',
      '-nostdin',
      ...ffmpegInput(opts.source, opts.resolution, opts.fps),
      '-an',
      '-vf',
      `scale=${w}:${h},fps=${opts.fps}`,
      '-pix_fmt',
      'rgb24',
      '-f',
      'rawvideo',
      'pipe:1',
    ],
  };
}

/** ffmpeg's input options for a --camera source. */
export function ffmpegInput(source: string, resolution: readonly [number, number], fps: number): string[] {
  const size = `${resolution[0]}x${resolution[1]}`;
  if (source.startsWith('-')) return source.split(/\s+/).filter(Boolean);
  if (source.startsWith('/dev/video'))
    return ['-f', 'v4l2', '-video_size', size, '-framerate', String(fps), '-i', source];
  if (source.startsWith('lavfi:')) return ['-f', 'lavfi', '-i', source.slice('lavfi:'.length)];
  if (/\.(png|jpe?g|bmp|gif|webp)$/i.test(source))
    return ['-loop', '1', '-framerate', String(fps), '-i', source];
  if (/^[a-z]+:\/\//i.test(source)) return ['-i', source];
  // A video file: looped, at its own pace.
  return ['-re', '-stream_loop', '-1', '-i', source];
}

export class CaptureCamera implements Camera {
  readonly resolution: readonly [number, number];
  readonly fps: number;
  readonly #opts: CaptureCameraOptions;
  readonly #command: ReturnType<typeof captureCommand>;
  readonly #tip: string;
  readonly #frameBytes: number;
  #child: ChildProcess | undefined;
  /**
   * Two frame buffers made once: the capture's bytes are copied into `#filling` as they come, and a full one is swapped
   * with `#last`. A frame is copied out only when someone takes it, so 20 frames a second allocate nothing.
   */
  #filling: Buffer;
  #filled = 0;
  #last: Buffer;
  #latest: { at: number; frame?: Frame } | undefined;
  #waiters: { resolve: (f: Frame) => void; reject: (e: Error) => void }[] = [];
  #lastGrab = 0;
  #stderrTail = '';
  #failure: { message: string; retryAt: number; backoff: number } | undefined;
  #closed = false;
  #frames = 0;

  constructor(opts: CaptureCameraOptions) {
    this.#opts = opts;
    this.#command = captureCommand(opts);
    this.#tip = this.#command.tool === 'ffmpeg' ? FFMPEG_TIP : GST_TIP;
    this.resolution = opts.resolution;
    this.fps = opts.fps;
    this.#frameBytes = opts.resolution[0] * opts.resolution[1] * 3;
    this.#filling = Buffer.allocUnsafeSlow(this.#frameBytes);
    this.#last = Buffer.allocUnsafeSlow(this.#frameBytes);
  }

  /** Frames received from the capture since start (tests, diagnostics). */
  get framesReceived(): number {
    return this.#frames;
  }

  /** The capture's process id while it runs (diagnostics, tests). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether the capture is running now. */
  get running(): boolean {
    return this.#child !== undefined;
  }

  async grab(): Promise<Frame> {
    if (this.#closed) throw hardwareError('the camera is closed');
    const now = performance.now();
    this.#lastGrab = now;
    const latest = this.#latest;
    // Served while younger than three frame periods: a live stream replaces it long before.
    if (this.#child && latest && now - latest.at < 3000 / this.fps) return this.#latestFrame(latest);
    if (!this.#child) {
      const failure = this.#failure;
      if (failure && now < failure.retryAt)
        throw hardwareError(`the camera is not available: ${failure.message}`, this.#tip);
      this.#start();
    }
    return this.#nextFrame(this.#latest ? Math.max(1000, 5000 / this.fps) : START_TIMEOUT_MS);
  }

  /** Stops the capture; grabs then fail. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#stop();
    this.#rejectWaiters(hardwareError('the camera is closed'));
  }

  #nextFrame(timeoutMs: number): Promise<Frame> {
    return new Promise<Frame>((resolve, reject) => {
      const waiter = {
        resolve: (f: Frame) => (clearTimeout(timer), resolve(f)),
        reject: (e: Error) => (clearTimeout(timer), reject(e)),
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(hardwareError(`no frame from the camera within ${timeoutMs} ms`, this.#tip, this.#stderrTail));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  #start(): void {
    const { tool, file, args } = this.#command;
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    this.#filled = 0;
    this.#stderrTail = '';
    child.stdout!.on('data', (chunk: Buffer) => this.#onData(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      this.#stderrTail = (this.#stderrTail + chunk.toString()).slice(-500);
    });
    child.on('error', (err) => this.#ended(child, `cannot run ${tool}: ${err.message}`));
    child.on('exit', (code, signal) => {
      // ffmpeg ends with the cause; GStreamer names it on its first ERROR line, then its consequences.
      const lines = this.#stderrTail.trim().split('\n');
      const words = lines.find((l) => l.startsWith('ERROR: from element')) ?? lines.pop() ?? '';
      this.#ended(child, `${tool} ended (${signal ?? `exit code ${code}`})${words ? `: ${words}` : ''}`);
    });
  }

  #onData(chunk: Buffer): void {
    for (let at = 0; at < chunk.length;) {
      const n = Math.min(chunk.length - at, this.#frameBytes - this.#filled);
      chunk.copy(this.#filling, this.#filled, at, at + n);
      at += n;
      this.#filled += n;
      if (this.#filled === this.#frameBytes) this.#frameDone();
    }
    if (performance.now() - this.#lastGrab > IDLE_STOP_MS) void this.#stop();
  }

  #frameDone(): void {
    [this.#last, this.#filling] = [this.#filling, this.#last];
    this.#filled = 0;
    const latest: { at: number; frame?: Frame } = { at: performance.now() };
    this.#latest = latest;
    this.#frames++;
    this.#failure = undefined;
    const waiters = this.#waiters;
    if (!waiters.length) return;
    this.#waiters = [];
    const frame = this.#latestFrame(latest);
    for (const w of waiters) w.resolve(frame);
  }

  /** The latest frame as its own copy, made once and only if taken: `#last` is refilled by the frames after it. */
  #latestFrame(latest: { at: number; frame?: Frame }): Frame {
    latest.frame ??= { width: this.resolution[0], height: this.resolution[1], rgb: Buffer.from(this.#last) };
    return latest.frame;
  }

  #ended(child: ChildProcess, message: string): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    this.#latest = undefined;
    if (this.#closed || child.killed) return;
    const backoff = Math.min(MAX_BACKOFF_MS, this.#failure ? this.#failure.backoff * 2 : FIRST_BACKOFF_MS);
    this.#failure = { message, retryAt: performance.now() + backoff, backoff };
    this.#opts.log?.(`camera: ${message}; retrying on the next grab after ${backoff} ms`);
    this.#rejectWaiters(hardwareError(`the camera is not available: ${message}`, this.#tip));
  }

  #rejectWaiters(err: Error): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w.reject(err);
  }

  async #stop(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    this.#latest = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 1000);
    await exited;
    clearTimeout(timer);
  }
}

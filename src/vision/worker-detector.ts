/**
 * The marker detector in a worker thread, for a server running in real time: detection (about 11 ms a 640x480 frame)
 * would otherwise stall every request and physics step that arrives meanwhile. The frame is copied to the worker;
 * a worker that dies is replaced at the next frame. On a manual clock (scenarios, tests) the watcher detects inline
 * instead, so that a detection belongs to the sim instant it was asked at.
 */
import { Worker } from 'node:worker_threads';
import type { Frame } from '../core/backend.ts';
import { workerBoot } from '../core/ts-worker.ts';
import { entryModule } from '../core/entry.ts';
import type { DetectedMarker } from './detect.ts';

export interface DetectRequest {
  readonly id: number;
  readonly frame: Frame;
}

export type DetectResponse =
  | { readonly id: number; readonly markers: DetectedMarker[] }
  | { readonly id: number; readonly error: string };

const ENTRY = entryModule(new URL('./detect-worker.ts', import.meta.url), 'detect-worker').href;

export class WorkerDetector {
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<
    number,
    { resolve: (m: DetectedMarker[]) => void; reject: (e: Error) => void }
  >();
  #closed = false;

  detect(frame: Frame): Promise<DetectedMarker[]> {
    if (this.#closed) return Promise.reject(new Error('the marker detector is closed'));
    const worker = this.#worker ?? this.#spawn();
    const id = this.#nextId++;
    // A copy: the camera may reuse its buffer for the next frame while the worker reads this one.
    const rgb = new Uint8Array(frame.rgb);
    const request: DetectRequest = { id, frame: { width: frame.width, height: frame.height, rgb } };
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage(request, [rgb.buffer]);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll('the marker detector is closed');
    await worker?.terminate();
  }

  #spawn(): Worker {
    const worker = new Worker(workerBoot(ENTRY), { eval: true, execArgv: [] });
    worker.unref(); // never keeps the process alive on its own
    worker.on('message', (res: DetectResponse) => {
      const waiting = this.#pending.get(res.id);
      if (!waiting) return;
      this.#pending.delete(res.id);
      if ('error' in res) waiting.reject(new Error(`marker detection failed: ${res.error}`));
      else waiting.resolve(res.markers);
    });
    const lost = (why: string) => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#failAll(why);
    };
    worker.on('error', (err) => lost(`the marker detector's worker failed: ${err.message}`));
    worker.on('exit', (code) => lost(`the marker detector's worker exited (code ${code})`));
    this.#worker = worker;
    return worker;
  }

  #failAll(why: string): void {
    const waiting = [...this.#pending.values()];
    this.#pending.clear();
    for (const w of waiting) w.reject(new Error(why));
  }
}

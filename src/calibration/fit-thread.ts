/**
 * Fits a run's motors in a worker thread (fit-worker.ts), one after the other, each result told as it comes: the
 * server's event loop, and with it the REST answers and the shadow twin's cycles, goes on meanwhile. Aborting
 * terminates the worker at once.
 */
import { Worker } from 'node:worker_threads';
import type { MotorCalibration } from '../config/calibration.ts';
import { AbortError } from '../core/clock.ts';
import { entryModule } from '../core/entry.ts';
import { workerBoot } from '../core/ts-worker.ts';
import type { MotorLog } from './run.ts';

export interface FitJob {
  /** The robot config's path (or a built-in's name): the worker loads it and its URDF itself. */
  readonly robot: string;
  readonly logs: readonly MotorLog[];
  /** fitMotor's evaluation budget; its default when absent. */
  readonly budget?: { dynamics: number; offset: number; all: number };
}

export type FitMessage =
  | { readonly motor: string; readonly calibration: MotorCalibration; readonly evaluations: number }
  | { readonly error: string };

const ENTRY = entryModule(new URL('./fit-worker.ts', import.meta.url), 'calibration-fit-worker').href;

/** Resolves once every motor is fitted; `onFitted` is told each in turn. Rejects with an AbortError on `signal`. */
export function fitInWorker(
  job: FitJob,
  onFitted: (motor: string, calibration: MotorCalibration, evaluations: number) => void,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return Promise.reject(new AbortError());
  const worker = new Worker(workerBoot(ENTRY), { eval: true, execArgv: [], workerData: job });
  worker.unref(); // never keeps the process alive on its own
  let left = job.logs.length;
  return new Promise<void>((resolve, reject) => {
    const end = (err?: Error) => {
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      if (err) reject(err);
      else resolve();
    };
    const onAbort = () => end(new AbortError());
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: FitMessage) => {
      if ('error' in m) return end(new Error(`the fit failed: ${m.error.split('\n')[0]}`));
      onFitted(m.motor, m.calibration, m.evaluations);
      if (--left === 0) end();
    });
    worker.on('error', (err) => end(new Error(`the fit's worker failed: ${err.message}`)));
    worker.on('exit', (code) => {
      if (left > 0) end(new Error(`the fit's worker exited (code ${code}) before the end`));
    });
  });
}

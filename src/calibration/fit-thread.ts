/**
 * A calibration's CPU work in a worker thread (fit-worker.ts), so that the server's event loop, and with it the REST
 * answers and the shadow twin's cycles, goes on meanwhile: the clear swing of each joint before the run
 * (clearance.ts, seconds a joint) and its touches of the table (touch.ts), and the two-pass fit after it (fit-robot.ts, a minute or more a joint), each result
 * told as it comes. Aborting terminates the worker at once.
 */
import { Worker } from 'node:worker_threads';
import type { MotorCalibration } from '../config/calibration.ts';
import { AbortError } from '../core/clock.ts';
import { entryModule } from '../core/entry.ts';
import { workerBoot } from '../core/ts-worker.ts';
import type { PredictedTouch, UnsteadyChirp } from './clearance.ts';
import type { MotorLog } from './run.ts';
import type { TouchLog, TouchPlan } from './touch.ts';

export interface FitJob {
  /** The robot config's path (or a built-in's name): the worker loads it and its URDF itself. */
  readonly robot: string;
  readonly logs: readonly MotorLog[];
  /** fitMotor's evaluation budget; its default when absent. */
  readonly budget?: { dynamics: number; offset: number; all: number };
  /** Instead of a fit: the clear swing of each of these motors. */
  readonly plan?: readonly string[];
  /** Instead of a fit: the robot's touches of the table planned on the twin (touch.ts). */
  readonly planTouches?: boolean;
  /** The table's touches the run logged: their offsets held in the fit (touch-fit.ts). */
  readonly touches?: readonly TouchLog[];
}

/** A touch as the twin plans it, or why it is skipped. */
export type PlannedTouch = TouchPlan | { readonly refused: string };

/** A joint's clear swing: its amplitude (null: every swing touches) and what the wider ones would touch. */
export interface SwingPlan {
  readonly amplitudeDeg: number | null;
  /** The chirp's amplitude at that swing (absent: the swing's). */
  readonly chirpAmplitudeDeg?: number;
  readonly refused: readonly (PredictedTouch & { amplitudeDeg: number })[];
  /** The wider chirps narrowed at that swing. */
  readonly unsteady?: readonly UnsteadyChirp[];
}

export type FitMessage =
  | { readonly motor: string; readonly calibration: MotorCalibration; readonly evaluations: number }
  | ({ readonly motor: string; readonly swing: true } & SwingPlan)
  | { readonly touch: PlannedTouch }
  | { readonly line: string }
  | { readonly done: true }
  | { readonly error: string };

const ENTRY = entryModule(new URL('./fit-worker.ts', import.meta.url), 'calibration-fit-worker').href;

function inWorker(job: FitJob, onMessage: (m: FitMessage) => void, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new AbortError());
  const worker = new Worker(workerBoot(ENTRY), { eval: true, execArgv: [], workerData: job });
  worker.unref(); // never keeps the process alive on its own
  let finished = false;
  return new Promise<void>((resolve, reject) => {
    const end = (err?: Error) => {
      finished = true;
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      if (err) reject(err);
      else resolve();
    };
    const onAbort = () => end(new AbortError());
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: FitMessage) => {
      if ('error' in m) return end(new Error(`the fit failed: ${m.error.split('\n')[0]}`));
      if ('done' in m) return end();
      onMessage(m);
    });
    worker.on('error', (err) => end(new Error(`the fit's worker failed: ${err.message}`)));
    worker.on('exit', (code) => {
      if (!finished) end(new Error(`the fit's worker exited (code ${code}) before the end`));
    });
  });
}

/**
 * Resolves once every motor is fitted (three passes: each motor is told three times, the last pass's figures last);
 * `onFitted` is told each in turn. Rejects with an AbortError on `signal`.
 */
export function fitInWorker(
  job: FitJob,
  onFitted: (motor: string, calibration: MotorCalibration, evaluations: number) => void,
  signal: AbortSignal,
  /** The fit's other lines (the offsets the touches found). */
  onLine?: (line: string) => void,
): Promise<void> {
  return inWorker(
    job,
    (m) => {
      if ('calibration' in m) onFitted(m.motor, m.calibration, m.evaluations);
      if ('line' in m) onLine?.(m.line);
    },
    signal,
  );
}

/** The robot's touches of the table, each planned on the twin or skipped with why, in TOUCHES' order. */
export async function planTouchesInWorker(robot: string, signal: AbortSignal): Promise<PlannedTouch[]> {
  const plans: PlannedTouch[] = [];
  await inWorker(
    { robot, logs: [], planTouches: true },
    (m) => {
      if ('touch' in m) plans.push(m.touch);
    },
    signal,
  );
  return plans;
}

/** The clear swing of each motor, as the twin predicts it from the calibration pose (clearance.ts). */
export async function planInWorker(
  robot: string,
  motors: readonly string[],
  signal: AbortSignal,
): Promise<Map<string, SwingPlan>> {
  const plans = new Map<string, SwingPlan>();
  await inWorker(
    { robot, logs: [], plan: motors },
    (m) => {
      if ('swing' in m) {
        const { motor: _motor, swing: _swing, ...plan } = m;
        plans.set(m.motor, plan);
      }
    },
    signal,
  );
  return plans;
}

/**
 * A calibration run inside a `--backend=real --shadow` server (POST /calibration/run.json, docs/calibration.md): the
 * robot held (every move refused meanwhile), each joint's excitation run on the real backend's bus as the CLI runs
 * it, the shadow twin's comparison paused; then the servos left as --on-close says, the robot handed back, the fit
 * in a worker thread, and the file written atomically at the very end into the server's own folder. Stopped: the run
 * ends at once, the servos are left as --on-close says, nothing is written (docs/decisions/0067-calibration-route.md).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type Calibration, saveCalibration } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import type { MotorBus } from '../core/backend.ts';
import { type Clock, isAbortError } from '../core/clock.ts';
import { badRequest, conflict } from '../core/errors.ts';
import type { Motor } from '../robot/motor.ts';
import type { Robot } from '../robot/robot.ts';
import type { MovePath } from '../robot/trajectory.ts';
import { defaultCalibration } from './defaults.ts';
import { refusedSwingLine, skippedSwingLine, swingExcitation, unsteadyChirpLine } from './clearance.ts';
import { fitLine } from './fit.ts';
import { type FitJob, fitInWorker, planInWorker, planTouchesInWorker } from './fit-thread.ts';
import { type TouchLog, runTouch, touchLine, touchesStartLine } from './touch.ts';
import { type MotorLog, type Rig, SETTLE, runMotor, runPlan } from './run.ts';

export type RunState = 'idle' | 'running' | 'fitting' | 'done' | 'stopped' | 'failed';

export interface RunStatus {
  readonly state: RunState;
  /** The motors of the last run asked for, in order. */
  readonly motors: string[];
  /** The motor being run or fitted now; null otherwise. */
  readonly motor: string | null;
  /** The lines the CLI prints, oldest first. */
  readonly progress: string[];
  /** Where the calibration is written at the end (written once state is done); null before any run. */
  readonly file: string | null;
  readonly error: string | null;
  /** Once done: how to load the file. */
  readonly load: string | null;
  /** ISO 8601. */
  readonly started: string | null;
  readonly ended: string | null;
}

/** The tip of every 409 while a run holds the robot. */
export const RUN_TIP =
  'GET /calibration/run.json shows its progress; POST /calibration/run/stop.json stops it (the servos are left as --on-close says)';

/** Fits the logs in turn, telling each result; rejects with an AbortError on `signal` (fitInWorker by default). */
export type Fitter = (
  job: FitJob,
  onFitted: Parameters<typeof fitInWorker>[1],
  signal: AbortSignal,
  onLine?: (line: string) => void,
) => Promise<void>;

export interface CalibrationRunOptions {
  readonly config: RobotConfig;
  readonly robot: Robot;
  /** The real backend's bus and clock: the run's writes are queued for the sync loop's next cycle, as the CLI's. */
  readonly bus: MotorBus;
  readonly clock: Clock;
  /** The serial port, for the file's `bus`. */
  readonly port: string;
  /** The shadow twin: its comparison paused while the run drives the servos. */
  readonly shadow: { pause(): void; resume(): void };
  /** The guard (--guard): each joint's start pose and the extremes of its excitation predicted before it runs. */
  readonly guard?: { check(path: MovePath, force: boolean): Promise<void> };
  /** What else moves the robot now (running primitives and replays), named; the run is refused while any does. */
  readonly busy: () => string[];
  /** The folder the files go in: `<dir>/<robot>-<UTC time>.json`. */
  readonly dir: string;
  /** How the servos are left when the run ends or is stopped (the server's --on-close). */
  readonly onClose: 'compliant' | 'hold';
  readonly log: (line: string) => void;
  /** The fit (default: fitInWorker on the robot's config). */
  readonly fit?: Fitter;
  /** Each joint's clear swing (default: planInWorker; absent from the map: the widest). */
  readonly planSwings?: typeof planInWorker;
  /** The robot's touches of the table, planned on the twin (default: planTouchesInWorker). */
  readonly planTouches?: typeof planTouchesInWorker;
  /**
   * The rig of a joint's run, and how its log is rebuilt after (real-rig.ts); default, or undefined from it: the bus
   * and clock above, on absolute deadlines.
   */
  readonly rig?: (motor: string, signal: AbortSignal) => RunRig | undefined;
  /** fitMotor's evaluation budget (default its own). */
  readonly fitBudget?: FitJob['budget'];
}

/** A rig with its log's rebuild (real-rig.ts CycleRig). */
export interface RunRig {
  readonly rig: Rig;
  rebuild(log: MotorLog): MotorLog;
  close(): void;
}

/** Seconds of each excitation the guard predicts after the settle: its holds below, at and above the centre. */
const GUARDED_S = 4.5;

export class CalibrationRun {
  readonly #opts: CalibrationRunOptions;
  #status: RunStatus = {
    state: 'idle',
    motors: [],
    motor: null,
    progress: [],
    file: null,
    error: null,
    load: null,
    started: null,
    ended: null,
  };
  #abort: AbortController | undefined;
  #done: Promise<void> | undefined;

  constructor(opts: CalibrationRunOptions) {
    this.#opts = opts;
  }

  status(): RunStatus {
    return { ...this.#status, motors: [...this.#status.motors], progress: [...this.#status.progress] };
  }

  get active(): boolean {
    return this.#status.state === 'running' || this.#status.state === 'fitting';
  }

  /**
   * Starts a run of `requested` (default every motor) in the background and answers its status: 400 for a motor the
   * robot lacks, 409 while a run is on, while something else moves the robot, or when the guard predicts a contact
   * for the first joint (then nothing has moved).
   */
  async start(requested?: readonly string[], touch = true): Promise<RunStatus> {
    const { config, robot } = this.#opts;
    if (this.active)
      throw conflict('a calibration run is in progress', RUN_TIP, `state ${this.#status.state}`);
    const all = config.motors.map((m) => m.name);
    const names = requested?.length ? [...requested] : all;
    for (const [i, n] of names.entries()) {
      if (!all.includes(n))
        throw badRequest(`unknown motor "${n}"`, `${config.name} has ${all.join(', ')}`, 'motors');
      if (names.indexOf(n) !== i)
        throw badRequest(`motor "${n}" is listed twice`, 'name each motor once', 'motors');
    }
    const busy = [...robot.moving().map((m) => `a goto of ${m.name}`), ...this.#opts.busy()];
    if (busy.length)
      throw conflict(
        'the robot is moving',
        'wait for the gotos to end and stop the primitives and replays (GET /primitives/<name>/stop.json), then start the run',
        busy.join(', '),
      );
    robot.hold({ reason: 'a calibration run holds the robot', tip: RUN_TIP });
    const before = this.#status;
    const started = new Date();
    const abort = (this.#abort = new AbortController());
    this.#status = {
      state: 'running',
      motors: names,
      motor: names[0]!,
      progress: [],
      file: path.join(this.#opts.dir, `${fileStem(config.name)}-${utcStamp(started)}.json`),
      error: null,
      load: null,
      started: started.toISOString(),
      ended: null,
    };
    this.#opts.shadow.pause();
    this.#done = undefined;
    try {
      await this.#guard(names[0]!);
    } catch (err) {
      robot.release();
      this.#opts.shadow.resume();
      this.#status = before;
      throw err;
    }
    this.#done = this.#run(names, touch, started, abort.signal);
    return this.status();
  }

  /** Stops the run at once (the fit too); nothing is written. Answers the status; stopping no run changes nothing. */
  async stop(): Promise<RunStatus> {
    if (this.active) {
      this.#abort?.abort();
      await this.#done;
    }
    return this.status();
  }

  /** The server closes: a run still on is stopped. */
  async close(): Promise<void> {
    await this.stop();
  }

  async #guard(name: string): Promise<void> {
    const { guard, config, robot } = this.#opts;
    if (guard) await guard.check(excitationPath(config, robot.motors, name), false);
  }

  #say(line: string): void {
    this.#status.progress.push(line);
    this.#opts.log(`calibration: ${line}`);
  }

  #end(state: RunState, error: string | null = null, load: string | null = null): void {
    this.#status = { ...this.#status, state, error, load, motor: null, ended: new Date().toISOString() };
  }

  async #run(names: readonly string[], touch: boolean, started: Date, signal: AbortSignal): Promise<void> {
    const { robot, onClose, shadow } = this.#opts;
    const logs: MotorLog[] = [];
    const touches: TouchLog[] = [];
    let moved = false;
    try {
      // Each joint's widest swing the twin predicts clear of contacts, in the worker (clearance.ts), as the CLI's.
      const { config } = this.#opts;
      const swings = await (this.#opts.planSwings ?? planInWorker)(
        config.source || config.name,
        names,
        signal,
      );
      for (const [i, name] of names.entries()) {
        if (i > 0) await this.#guard(name);
        if (signal.aborted) break;
        const swing = swings.get(name);
        for (const r of swing?.refused ?? []) this.#say(refusedSwingLine(name, r));
        if (swing && swing.amplitudeDeg === null) {
          this.#say(skippedSwingLine(name));
          continue;
        }
        for (const u of swing?.unsteady ?? []) this.#say(unsteadyChirpLine(name, u));
        const chosen = swing && swingExcitation(config, name, swing.amplitudeDeg!, swing.chirpAmplitudeDeg);
        this.#status = { ...this.#status, motor: name };
        moved = true;
        // A stop between samples returns what was logged (and says "run done"): the signal says it was a stop.
        const paced = this.#opts.rig?.(name, signal);
        try {
          const log = await runMotor(
            paced?.rig ?? this.#rig(signal),
            this.#opts.config,
            name,
            (line) => {
              if (!signal.aborted) this.#say(line);
            },
            chosen,
          );
          if (signal.aborted) break;
          logs.push(paced ? paced.rebuild(log) : log);
        } finally {
          paced?.close();
        }
      }
      if (touch && !signal.aborted) await this.#touch(touches, signal);
    } catch (err) {
      if (!isAbortError(err)) {
        robot.release(moved ? onClose : undefined);
        shadow.resume();
        this.#say(`failed: ${(err as Error).message}; servos left ${onClose}, nothing written`);
        return this.#end('failed', (err as Error).message);
      }
    }
    // The servos as --on-close says, the robot handed back: the fit needs neither.
    robot.release(moved ? onClose : undefined);
    shadow.resume();
    if (signal.aborted) {
      this.#say(`stopped: servos left ${onClose}, nothing written`);
      return this.#end('stopped');
    }
    await this.#fit(logs, touches, started, signal);
  }

  /**
   * The table's touches after the joints' runs, as the CLI's (touch.ts): planned on the twin in the worker, each run
   * on the robot's bus with a line. The guard is not asked: a touch meets the table by design, and its plan checked
   * that nothing else is met.
   */
  async #touch(into: TouchLog[], signal: AbortSignal): Promise<void> {
    const { config } = this.#opts;
    const plans = await (this.#opts.planTouches ?? planTouchesInWorker)(config.source || config.name, signal);
    if (plans.length) this.#say(touchesStartLine(plans.length));
    for (const [k, plan] of plans.entries()) {
      if (signal.aborted) return;
      const which = `touch ${k + 1}/${plans.length}`;
      if ('refused' in plan) {
        this.#say(`${which}: skipped, ${plan.refused}`);
        continue;
      }
      this.#status = { ...this.#status, motor: plan.motor };
      const paced = this.#opts.rig?.(plan.motor, signal);
      try {
        const log = await runTouch(paced?.rig ?? this.#rig(signal), config, plan);
        if (signal.aborted) return;
        this.#say(touchLine(which, plan, log));
        into.push(log);
      } finally {
        paced?.close();
      }
    }
  }

  async #fit(
    logs: readonly MotorLog[],
    touches: readonly TouchLog[],
    started: Date,
    signal: AbortSignal,
  ): Promise<void> {
    const { config, fit = fitInWorker } = this.#opts;
    const file = this.#status.file!;
    const cal: Calibration = defaultCalibration(config, this.#opts.port, started.toISOString());
    this.#status = { ...this.#status, state: 'fitting', motor: logs[0]?.motor ?? null };
    try {
      await fit(
        { robot: config.source || config.name, logs, touches, budget: this.#opts.fitBudget },
        (motor, calibration, evaluations) => {
          cal.motors[motor] = calibration;
          this.#say(`${motor}: ${fitLine(calibration, evaluations)}`);
          const next = logs.findIndex((l) => l.motor === motor) + 1;
          this.#status = { ...this.#status, motor: logs[next]?.motor ?? null };
        },
        signal,
        (line) => this.#say(line),
      );
      if (signal.aborted) throw new Error('stopped');
      await mkdir(path.dirname(file), { recursive: true });
      await saveCalibration(file, cal);
    } catch (err) {
      if (signal.aborted) {
        this.#say('stopped during the fit: nothing written');
        return this.#end('stopped');
      }
      this.#say(`failed: ${(err as Error).message}; nothing written`);
      return this.#end('failed', (err as Error).message);
    }
    this.#say(`wrote ${file}`);
    this.#end(
      'done',
      null,
      `start the server with --calibration=${file} to load it (the shadow twin, its bands and the guard)`,
    );
  }

  /** The real backend as the run's rig: absolute deadlines on its clock, every wait cut short by a stop. */
  #rig(signal: AbortSignal): Rig {
    const { bus, clock } = this.#opts;
    let next = clock.now();
    return {
      bus,
      now: () => clock.now(),
      // Absolute deadlines: the samples stay on the 50 Hz grid whatever each exchange took (as the CLI's).
      wait: async (s) => {
        next = Math.max(next, clock.now() - s) + s;
        await clock.sleepUntil(next, signal);
      },
      stopped: () => signal.aborted,
    };
  }
}

/**
 * What the guard predicts of a joint's run, in the user's frame: every joint put in the run's pose (at once, as the
 * run writes it) with this one at its start, then the excitation's holds below, at and above its centre (its steps
 * and chirps stay between those).
 */
export function excitationPath(config: RobotConfig, motors: readonly Motor[], name: string): MovePath {
  const { pose, ex } = runPlan(config, name);
  return {
    motors,
    duration: SETTLE + GUARDED_S,
    what: `the calibration run of ${name} (its start pose and the first ${GUARDED_S} s of its excitation)`,
    goalsAt(t) {
      const raw = t < SETTLE ? ex.start : ex.at(Math.min(t - SETTLE, GUARDED_S - 1e-6)).goal;
      return new Map(motors.map((m) => [m, m.toUser(m.name === name ? raw : pose[m.name]!)]));
    },
  };
}

/** A robot's name as a file name's stem: letters, digits, '-' and '_' only. */
const fileStem = (name: string) => name.replace(/[^A-Za-z0-9_-]+/g, '_') || 'robot';

/** 2026-12-02T04:30:00.123Z -> 20261202T043000Z. */
export const utcStamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');

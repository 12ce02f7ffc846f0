/**
 * Recording a move: 50 Hz samples of [present_position, present_speed] of the recorded motors, keyed by the seconds
 * elapsed since the recording started (docs/reference/pypot.md 4.7, docs/reference/contract.md 4). The recorder is the primitive
 * `_<move>_recorder`; it samples on the robot's control tick, right after the state is read, so each key is the
 * time the sampled state belongs to.
 */
import { Primitive, type PrimitiveContext } from '../primitives/primitive.ts';
import type { Motor } from '../robot/motor.ts';
import { type Move, type MoveFrameInput, createMove } from './move.ts';

/** Samples per second of a recording (pypot's MoveRecorder). */
export const RECORD_FRAMERATE = 50;

export const recorderName = (move: string): string => `_${move}_recorder`;

/** Time keys are rounded to the microsecond, so a 50 Hz clock gives "0.02", not "0.020000000000000018". */
export function roundTime(t: number): number {
  return Math.round(t * 1e6) / 1e6 + 0;
}

/** The frames of one recording, in memory. Pure: the caller says when to sample. */
export class MoveRecording {
  readonly motors: readonly Motor[];
  readonly framerate: number;
  readonly #frames: MoveFrameInput[] = [];
  readonly #source: string;

  constructor(moveName: string, motors: readonly Motor[], framerate = RECORD_FRAMERATE) {
    this.motors = motors;
    this.framerate = framerate;
    this.#source = `recording of "${moveName}"`;
  }

  get length(): number {
    return this.#frames.length;
  }

  /** Time of the last sample, or -Infinity when there is none. */
  get lastTime(): number {
    return this.#frames[this.#frames.length - 1]?.t ?? -Infinity;
  }

  /** Stores the motors' present state at `t` seconds since the start; a time not after the last one is skipped. */
  sample(t: number): void {
    const time = roundTime(Math.max(0, t));
    if (time <= this.lastTime) return;
    const positions = new Map<string, [number, number]>();
    for (const m of this.motors) positions.set(m.name, [m.state.presentPosition, m.state.presentSpeed]);
    this.#frames.push({ t: time, positions });
  }

  /** The move recorded so far (a copy: sampling goes on unaffected). */
  toMove(): Move {
    return createMove(this.framerate, this.#frames, this.#source);
  }
}

/**
 * `_<move>_recorder`: while running, samples its motors at 50 Hz (the first sample at once, at t = 0). Starting it
 * again starts a new recording (pypot: restarting a recorder clears its move).
 */
export class RecorderPrimitive extends Primitive {
  readonly moveName: string;
  #motors: readonly Motor[];
  #recording: MoveRecording;
  #off: (() => void) | undefined;
  readonly #onRecord: (() => void) | undefined;

  /** `onRecord` is told each time a recording starts, whoever started it (record.json or the primitives API). */
  constructor(context: PrimitiveContext, moveName: string, motors: readonly Motor[], onRecord?: () => void) {
    super(context, recorderName(moveName));
    this.moveName = moveName;
    this.#onRecord = onRecord;
    this.#motors = motors;
    this.#recording = new MoveRecording(moveName, motors);
  }

  /** The motors of the next recording (takes effect at the next start). */
  set motors(motors: readonly Motor[]) {
    this.#motors = motors;
  }

  get motors(): readonly Motor[] {
    return this.#motors;
  }

  /** The move recorded so far, or the whole last recording once stopped. */
  move(): Move {
    return this.#recording.toMove();
  }

  protected override setup(): void {
    const recording = new MoveRecording(this.moveName, this.#motors);
    this.#recording = recording;
    this.#onRecord?.();
    recording.sample(0);
    const minGap = 1 / RECORD_FRAMERATE / 2; // a tick a hair early still samples; a faster loop is thinned to 50 Hz
    this.#off = this.robot.onTick(() => {
      if (this.stopping || this.state !== 'running') return;
      const t = this.elapsed;
      if (t - recording.lastTime >= minGap) recording.sample(t);
    });
  }

  protected override teardown(): void {
    this.#off?.();
    this.#off = undefined;
  }
}

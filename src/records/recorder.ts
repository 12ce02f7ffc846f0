/**
 * Recording a move: 50 Hz samples of [present_position, present_speed] of the recorded motors, keyed by the seconds
 * elapsed since the recording started (FACTS.md 4.7, CONTRACT.md 4).
 */
import type { Motor } from '../robot/motor.ts';
import { type Move, type MoveFrameInput, createMove } from './move.ts';

/** Samples per second of a recording (pypot's MoveRecorder). */
export const RECORD_FRAMERATE = 50;

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

/**
 * What the records service needs from whatever runs recorders and players, and a runner on the robot's control
 * loop (each tick, after the state is read and before the commands are written).
 */
import type { Motor } from '../robot/motor.ts';
import type { Robot } from '../robot/robot.ts';
import type { Move } from './move.ts';
import type { ReplayPlan } from './player.ts';
import { MoveRecording, RECORD_FRAMERATE } from './recorder.ts';

export type ReplayPhase = 'idle' | 'travel' | 'play' | 'done';

export interface RecorderTask {
  /** `_<move>_recorder`, as the primitive lists show it. */
  readonly primitiveName: string;
  readonly running: boolean;
  /** Starts sampling; the first sample is taken at once, at t = 0. */
  start(): void;
  /** Stops sampling; resolves with the move recorded. */
  stop(): Promise<Move>;
  /** The move recorded so far. */
  snapshot(): Move;
}

export interface ReplayTiming {
  readonly phase: ReplayPhase;
  /** Clock time (s) the replay proper began (after any travel to the start frame). */
  readonly playStart: number | undefined;
  /** Clock time (s) the replay ended or was stopped. */
  readonly end: number | undefined;
}

export interface PlayerTask {
  /** `_<move>_player`. */
  readonly primitiveName: string;
  readonly plan: ReplayPlan;
  readonly running: boolean;
  readonly timing: ReplayTiming;
  /** Makes the motors stiff, travels to the start frame if needed, then replays. */
  start(): void;
  /** Stops at once; motors hold where they are. Idempotent. */
  stop(): Promise<void>;
}

export interface RecordsRuntime {
  recorder(move: string, motors: readonly Motor[]): RecorderTask;
  player(move: string, plan: ReplayPlan, motors: readonly Motor[]): PlayerTask;
  /** The move is deleted: its recorder and player go away (they are stopped already). */
  release(move: string): void;
}

export const recorderName = (move: string): string => `_${move}_recorder`;
export const playerName = (move: string): string => `_${move}_player`;

/** Makes a motor stiff where it is (as a compliant -> false register write does) and cancels its goto. */
export function makeStiff(robot: Robot, m: Motor): void {
  robot.cancelMotion(m);
  if (m.commands.compliant) {
    m.set('goalPosition', m.state.presentPosition);
    m.set('compliant', false);
  }
}

/** Recorders and players driven by the robot's control loop. */
export class LoopRuntime implements RecordsRuntime {
  readonly robot: Robot;
  constructor(robot: Robot) {
    this.robot = robot;
  }
  recorder(move: string, motors: readonly Motor[]): RecorderTask {
    return new LoopRecorder(this.robot, move, motors);
  }
  player(move: string, plan: ReplayPlan, motors: readonly Motor[]): PlayerTask {
    return new LoopPlayer(this.robot, move, plan, motors);
  }
  release(): void {}
}

class LoopRecorder implements RecorderTask {
  readonly primitiveName: string;
  readonly #robot: Robot;
  readonly #recording: MoveRecording;
  #start = 0;
  #off: (() => void) | undefined;

  constructor(robot: Robot, move: string, motors: readonly Motor[]) {
    this.#robot = robot;
    this.primitiveName = recorderName(move);
    this.#recording = new MoveRecording(move, motors);
  }

  get running(): boolean {
    return this.#off !== undefined;
  }

  start(): void {
    if (this.#off) return;
    const period = 1 / RECORD_FRAMERATE;
    this.#start = this.#robot.clock.now();
    this.#recording.sample(0);
    this.#off = this.#robot.onTick((now) => {
      // Half a period of slack: a tick a hair early still takes its sample.
      if (now - this.#start - this.#recording.lastTime >= period / 2) this.#recording.sample(now - this.#start);
    });
  }

  async stop(): Promise<Move> {
    this.#off?.();
    this.#off = undefined;
    return this.#recording.toMove();
  }

  snapshot(): Move {
    return this.#recording.toMove();
  }
}

class LoopPlayer implements PlayerTask {
  readonly primitiveName: string;
  readonly plan: ReplayPlan;
  readonly #robot: Robot;
  readonly #motors: readonly Motor[];
  #phase: ReplayPhase = 'idle';
  #travelEnd = 0;
  #playStart: number | undefined;
  #end: number | undefined;
  #off: (() => void) | undefined;

  constructor(robot: Robot, move: string, plan: ReplayPlan, motors: readonly Motor[]) {
    this.#robot = robot;
    this.primitiveName = playerName(move);
    this.plan = plan;
    this.#motors = motors;
  }

  get running(): boolean {
    return this.#phase === 'travel' || this.#phase === 'play';
  }

  get timing(): ReplayTiming {
    return { phase: this.#phase, playStart: this.#playStart, end: this.#end };
  }

  start(): void {
    if (this.running) return;
    const robot = this.#robot;
    const present = new Map<string, number>();
    for (const m of this.#motors) {
      makeStiff(robot, m);
      present.set(m.name, m.state.presentPosition);
    }
    const now = robot.clock.now();
    const travel = this.plan.travelDuration(present);
    if (travel > 0) {
      const start = this.plan.startPositions();
      robot.goto(new Map(this.#motors.map((m) => [m, start.get(m.name)!] as const)), travel);
      this.#phase = 'travel';
      this.#travelEnd = now + travel;
    } else {
      this.#beginPlay(now);
    }
    this.#off = robot.onTick((t) => this.#tick(t));
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    if (this.#phase === 'travel') for (const m of this.#motors) this.#robot.cancelMotion(m);
    this.#finish(this.#robot.clock.now());
  }

  #beginPlay(now: number): void {
    this.#phase = 'play';
    this.#playStart = now;
    this.#apply(0);
  }

  #tick(now: number): void {
    if (this.#phase === 'travel') {
      if (now < this.#travelEnd - 1e-9) return;
      this.#beginPlay(now);
      return;
    }
    if (this.#phase !== 'play') return;
    const elapsed = now - this.#playStart!;
    this.#apply(elapsed);
    if (elapsed >= this.plan.duration - 1e-9) this.#finish(now);
  }

  #apply(elapsed: number): void {
    const goals = this.plan.positionsAt(elapsed);
    for (const m of this.#motors) {
      const g = goals.get(m.name);
      if (g !== undefined) m.set('goalPosition', m.clampAngle(g));
    }
  }

  #finish(now: number): void {
    this.#off?.();
    this.#off = undefined;
    this.#phase = 'done';
    this.#end = now;
  }
}

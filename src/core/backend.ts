import type { Clock } from './clock.ts';
import type { BusRegister, ModelSpec, RawValue } from './registers.ts';

/**
 * The motor bus: values cross in raw register units (counts); conversion lives in src/core/registers.ts.
 * Reads and writes may reject with a RobotError of code 'hardware' when a motor does not answer.
 */
export interface MotorBus {
  /** Reads one register of several motors. Missing motors reject the whole read. */
  read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>>;
  /** Writes one register of several motors (a sync write on a real bus). */
  write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): Promise<void>;
}

export interface Frame {
  readonly width: number;
  readonly height: number;
  /** RGB, 3 bytes per pixel, row-major. */
  readonly rgb: Uint8Array;
}

export interface Camera {
  readonly resolution: readonly [number, number];
  readonly fps: number;
  grab(): Promise<Frame>;
}

/** A person's hand in the twin: drags a compliant (or resisting stiff) joint towards an angle. Sim only. */
export interface HandTool {
  /** Drag motor `id` towards raw-frame `rawDeg` over `duration` seconds of sim time; resolves when released. */
  drag(id: number, rawDeg: number, duration: number, signal?: AbortSignal): Promise<void>;
  /** Applies a constant external torque (N.m, raw frame) for `duration` seconds. */
  push(id: number, torque: number, duration: number, signal?: AbortSignal): Promise<void>;
  /** Takes motor `id` to raw `rawDeg` over `duration`, then keeps holding it there until released. */
  hold(id: number, rawDeg: number, duration: number): Promise<void>;
  /** Lets go of the given motors (all when omitted). */
  release(ids?: readonly number[]): void;
  /** Ids of the motors the hand holds or drags now. */
  holding(): number[];
}

/** One contact between two bodies of the sim world after the last physics step. */
export interface Contact {
  /** URDF link names, or 'table' / 'floor' / 'card:<name>' for the world's own bodies. */
  readonly a: string;
  readonly b: string;
  /** Deepest penetration of the contact manifold, metres (>= 0). */
  readonly depth: number;
  /** Total normal impulse of the last step, N.s. */
  readonly impulse: number;
  /** A contact point, world frame, metres. */
  readonly point: readonly [number, number, number];
}

export interface SimulationControls {
  readonly hand: HandTool;
  /** The contacts of the last physics step (the scenario checks and tests read them). */
  contacts(): readonly Contact[];
  /** Calls `listener(simTime)` after every physics step until the returned function is called. Keep it cheap. */
  onStep(listener: (simTime: number) => void): () => void;
  /** Sim seconds per wall second over the last measuring window. */
  realTimeFactor(): number;
  /** Total sim time and physics steps taken; of those, the steps the robot spent at rest (the solver not run). */
  stats(): { simTime: number; steps: number; restingSteps: number; wallTime: number };
  /** Current speed setting: a factor of real time, 'max', or 'manual' (time moves only when advanced). */
  readonly speed: number | 'max' | 'manual';
  /** Moves sim time forward by `seconds`, firing timers in order (the way tests and scenarios drive time). */
  advance(seconds: number): Promise<void>;
  /** The twin back in its start pose, every joint still, every servo's torque off and goal there; the hand lets go. */
  reset(): void;
  /** Puts joints at raw-frame angles (degrees by motor id) at rest, goals there: a teleport, not a move. */
  setPose(rawDeg: ReadonlyMap<number, number>): void;
  /** World pose of a link frame (root frame, metres), for the camera and checks. */
  linkPose(
    link: string,
  ):
    | { position: [number, number, number]; rotation: { x: number; y: number; z: number; w: number } }
    | undefined;
}

export interface Backend {
  readonly kind: 'sim' | 'real';
  readonly clock: Clock;
  readonly bus: MotorBus;
  readonly camera?: Camera;
  /** Present only on the simulated robot. */
  readonly simulation?: SimulationControls;
  /** The servo models on the bus, by id. */
  readonly models: ReadonlyMap<number, ModelSpec>;
  open(): Promise<void>;
  /** Begins background work once the server is ready (the sim's stepping); optional, idempotent. */
  start?(): void;
  /**
   * A backend whose bus runs its own loop (the real one) paces the Robot's control cycles with it: resolves with the
   * bus's cycle count once it is past `after` (at once if it already is), so that each Robot cycle works on fresh
   * values and several cycles that arrived meanwhile make one Robot cycle. Rejects with an AbortError on `signal`.
   */
  waitForCycle?(after: number, signal: AbortSignal): Promise<number>;
  /** Idempotent. */
  close(): Promise<void>;
}

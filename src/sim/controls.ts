/** What the twin offers beyond the Backend seam: the hand, contacts, time control, poses. Sim only. */

/** A person's hand in the twin: drags a compliant (or resisting stiff) joint towards an angle. Sim only. */
export interface HandTool {
  /** Drag motor `id` towards raw-frame `rawDeg` over `duration` seconds of sim time; resolves when released. */
  drag(id: number, rawDeg: number, duration: number, signal?: AbortSignal): Promise<void>;
  /** Applies a constant external torque (N.m, raw frame) for `duration` seconds. */
  push(id: number, torque: number, duration: number, signal?: AbortSignal): Promise<void>;
  /** Takes motor `id` to raw `rawDeg` over `duration`, then keeps holding it there until released. */
  hold(id: number, rawDeg: number, duration: number): Promise<void>;
  /**
   * Keeps motor `id` within `slackDeg` of raw `rawDeg`, carried on at `rawDegS`, until released; a later call moves
   * the angle. Within the slack the hand does nothing (the shadow twin's compliant joints follow the real ones).
   */
  follow(id: number, rawDeg: number, rawDegS: number, slackDeg: number): void;
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
  /** The joints (by name) a pressing contact of the last step acts across (World.pressedJoints). */
  pressedJoints(): ReadonlySet<string>;
  /** Of `joints`, those whose links across them come within `gap` (m) of touching (World.jointsNear). */
  jointsNear(joints: Iterable<string>, gap: number): ReadonlySet<string>;
  /** The torque (N.m) gravity and any applied push put about each joint now (World.load), by joint name. */
  jointLoads(): ReadonlyMap<string, number>;
  /** Calls `listener(simTime)` after every physics step until the returned function is called. Keep it cheap. */
  onStep(listener: (simTime: number) => void): () => void;
  /** Sim seconds per wall second over the last measuring window. */
  realTimeFactor(): number;
  /**
   * Total sim time and physics steps taken; of those, the steps the robot spent at rest (the solver not run); and the
   * wall time spent stepping (s).
   */
  stats(): { simTime: number; steps: number; restingSteps: number; wallTime: number; stepWallTime: number };
  /** Current speed setting: a factor of real time, 'max', or 'manual' (time moves only when advanced). */
  readonly speed: number | 'max' | 'manual';
  /** Moves sim time forward by `seconds`, firing timers in order (the way tests and scenarios drive time). */
  advance(seconds: number): Promise<void>;
  /** The twin back in its start pose, every joint still, every servo's torque off and goal there; the hand lets go. */
  reset(): void;
  /** Puts joints at raw-frame angles (degrees by motor id) at rest, goals there: a teleport, not a move. */
  setPose(rawDeg: ReadonlyMap<number, number>): void;
  /**
   * Turns one joint to a raw-frame angle (degrees), turning at `rawDegS`, with the links beyond it; the rest of the
   * world is left in its motion and the servo keeps its goal. For a twin joint that fell behind the one it follows.
   */
  placeJoint(id: number, rawDeg: number, rawDegS?: number): void;
  /** World pose of a link frame (root frame, metres), for the camera and checks. */
  linkPose(
    link: string,
  ):
    | { position: [number, number, number]; rotation: { x: number; y: number; z: number; w: number } }
    | undefined;
}

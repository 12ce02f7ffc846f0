/**
 * The messages of the live state stream and the view's robot description (beyond the v4 API). Shared by the server
 * and the browser code: type imports only.
 */
import type { CameraConfig, TableConfig } from '../config/robot-config.ts';
import type { AngleFrame } from '../core/frames.ts';
import type { CardState } from '../scene/cards.ts';
import type { UrdfGeometry, UrdfJoint, UrdfShape } from '../urdf/types.ts';

/** A marker card seen by the camera: pixel corners in the camera frame (the vision helper's DetectedMarker). */
export interface StreamMarker {
  readonly id: number;
  readonly name?: string;
  readonly corners: readonly (readonly [number, number])[];
  readonly centre: readonly [number, number];
}

export interface MotorDescription {
  readonly name: string;
  readonly id: number;
  readonly model: string;
  /** User degrees, as pypot reports them (lower > upper for indirect motors). */
  readonly lowerLimit: number;
  readonly upperLimit: number;
  /** URDF joint driven by this motor (same name in our URDFs). */
  readonly joint: string;
  /** User degrees to the joint's radians (src/core/frames.ts): the view poses the shadow's ghost with it. */
  readonly frame: AngleFrame;
}

/** Sent once when a viewer connects (and as GET /ui/robot.json). */
export interface RobotDescription {
  readonly type: 'hello';
  readonly robot: string;
  /** A classroom twin's name (its page's title shows it); null for a robot served alone. */
  readonly name: string | null;
  readonly backend: 'sim' | 'real';
  readonly motors: readonly MotorDescription[];
  readonly chains: readonly string[];
  readonly camera: { readonly resolution: readonly [number, number] } | null;
  /** Centre of the top surface and size (x, y, thickness), metres, in the URDF root frame; null: none. */
  readonly table: {
    readonly xyz: readonly number[];
    readonly size: readonly number[];
    readonly kind: string;
  } | null;
  /** Optional routes this server has (the camera and the sim's marker cards come with other parts). */
  readonly features: { readonly cameraFrame: boolean; readonly cards: boolean };
  /** Highest rate a viewer may ask for, Hz. */
  readonly maxRate: number;
}

/** One frame of the live state; arrays follow the order of RobotDescription.motors. */
export interface RobotState {
  readonly type: 'state';
  /** Increases by one per encoded frame. */
  readonly seq: number;
  /** Robot clock, seconds (sim time on the twin). */
  readonly time: number;
  /** Control-loop ticks so far: the state is the one read at that tick. */
  readonly tick: number;
  /** User degrees. */
  readonly present: number[];
  readonly goal: number[];
  /** URDF joint angles, radians (what the 3D view sets). */
  readonly joint: number[];
  readonly compliant: boolean[];
  /** User deg/s. */
  readonly speed: number[];
  /** %. */
  readonly load: number[];
  /** Degrees Celsius. */
  readonly temperature: number[];
  /** A goto is in progress. */
  readonly moving: boolean[];
  /** Public primitives (records' own recorders and players are under `records`). */
  readonly primitives: { readonly running: string[]; readonly paused: string[] };
  readonly records: { readonly recording: string[]; readonly playing: string[] };
  /** Markers the camera sees; null when the robot has no detector. */
  readonly markers: readonly StreamMarker[] | null;
  /** Shadow mode's comparison (docs/shadow.md); null without it. */
  readonly shadow: StreamShadow | null;
}

/** The twin beside the real robot, per motor in the order of the description's motors. */
export interface StreamShadow {
  /** The twin's positions, user degrees (null: no reading yet). */
  readonly twin: (number | null)[];
  /** Real - twin, degrees. */
  readonly error: (number | null)[];
  readonly state: string[];
  readonly events: readonly { readonly motor: string; readonly kind: string; readonly since: number }[];
}

export const MAX_RATE = 50;

/** A visual shape as JSON: a mesh's triangles as a plain list (x, y, z per vertex, metres; a typed array is not JSON). */
export type SceneShape = Omit<UrdfShape, 'geometry'> & {
  readonly geometry:
    | Exclude<UrdfGeometry, { kind: 'mesh' }>
    | { readonly kind: 'mesh'; readonly filename: string; readonly triangles: readonly number[] };
};

/** A link as the view draws it: its visuals only. */
export interface SceneLink {
  readonly name: string;
  readonly visuals: readonly SceneShape[];
}

/** GET /ui/scene.json: what src/scene/twin-scene.ts needs, as JSON. */
export interface SceneDescription {
  readonly urdf: {
    readonly name: string;
    readonly root: string;
    readonly links: readonly SceneLink[];
    readonly joints: readonly UrdfJoint[];
  };
  readonly table: TableConfig | null;
  /** At their resting places; GET /sim/cards/list.json gives where they are now. */
  readonly cards: readonly CardState[];
  readonly camera: CameraConfig | null;
}

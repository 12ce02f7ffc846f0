/**
 * The twin's camera: renders what the robot's camera sees from the twin's state, only when somebody asks (a
 * frame request or the marker detector), so an idle camera costs the physics nothing.
 */
import type { Camera, Frame } from '../core/backend.ts';
import type { CameraConfig, TableConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import {
  type Pose,
  composePoses,
  dotVec3,
  invertPose,
  mat3Column,
  matrixToRpy,
  poseFromOrigin,
  rotX,
  transformPoint,
} from '../urdf/transform.ts';
import type { CardTable } from '../scene/cards.ts';
import { type CardState } from '../scene/cards.ts';
import { TwinScene } from '../scene/twin-scene.ts';
import { type ImageEffects, Rasterizer } from '../scene/rasterizer.ts';

export interface SimCameraOptions {
  readonly camera: CameraConfig;
  readonly urdf: UrdfRobot;
  readonly table: TableConfig | null;
  readonly cards: CardTable;
  /** The twin's present joint angles (rad) by joint name. */
  readonly jointAngles: () => ReadonlyMap<string, number>;
  readonly effects?: ImageEffects;
}

/** How far in front of the camera `show` holds a card by default, metres. */
export const DEFAULT_SHOW_DISTANCE = 0.2;

export class SimCamera implements Camera {
  readonly resolution: readonly [number, number];
  readonly fps: number;
  readonly scene: TwinScene;
  readonly cards: CardTable;
  /** Exposure, blur and noise applied to every frame (tests make frames harder with them). */
  effects: ImageEffects;
  readonly #rasterizer: Rasterizer;
  readonly #jointAngles: () => ReadonlyMap<string, number>;
  #frames = 0;

  constructor(opts: SimCameraOptions) {
    this.resolution = opts.camera.resolution;
    this.fps = opts.camera.fps;
    this.cards = opts.cards;
    this.effects = opts.effects ?? {};
    this.#jointAngles = opts.jointAngles;
    this.scene = new TwinScene({
      urdf: opts.urdf,
      table: opts.table,
      cards: opts.cards.list(),
      camera: opts.camera,
    });
    this.#rasterizer = new Rasterizer(this.resolution[0], this.resolution[1]);
    opts.cards.onChange((card) => this.scene.setCardPose(card.name, card));
  }

  async grab(): Promise<Frame> {
    return this.render();
  }

  /** Renders the camera's view of the twin as it is now (synchronous). */
  render(): Frame {
    this.scene.setJointAngles(this.#jointAngles());
    const effects = this.effects.noise
      ? { ...this.effects, seed: (this.effects.seed ?? 1) + this.#frames++ }
      : this.effects;
    return this.#rasterizer.render(this.scene.scene, this.scene.camera!, effects);
  }

  /** Pose of the camera frame (looks along +z, image x +x, image y +y) in the root frame, as the twin is now. */
  pose(): Pose {
    this.scene.setJointAngles(this.#jointAngles());
    return this.scene.cameraMountPose()!;
  }

  /**
   * Holds a card `distance` metres in front of the camera, facing it and upright in the image (the card's top
   * towards the image's top).
   */
  show(name: string, distance = DEFAULT_SHOW_DISTANCE): CardState {
    this.cards.get(name);
    // Card frame in the camera frame: x along image x, y up the image (-y), face (+z) back at the camera.
    const held = composePoses(this.pose(), { rotation: rotX(Math.PI), translation: [0, 0, distance] });
    return this.cards.place(name, { xyz: held.translation, rpy: matrixToRpy(held.rotation) });
  }

  /**
   * Whether the whole printed face of a card is inside the picture, facing the camera (nothing says whether
   * something stands in between).
   */
  sees(card: CardState): boolean {
    const [w, h] = this.resolution;
    // Card frame in the camera frame (camera looks along +z, image x +x, image y +y).
    const inCamera = composePoses(invertPose(this.pose()), poseFromOrigin(card.xyz, card.rpy));
    const centre = inCamera.translation;
    const normal = mat3Column(inCamera.rotation, 2);
    if (dotVec3(normal, centre) >= 0) return false; // the camera sees the card's back
    const f = w / 2 / Math.tan(this.#hfov() / 2);
    const half = card.size / 2;
    for (const [sx, sy] of [
      [-1, -1],
      [1, -1],
      [1, 1],
      [-1, 1],
    ] as const) {
      const [x, y, z] = transformPoint(inCamera, [sx * half, sy * half, 0]);
      if (z <= 0.005) return false;
      const u = w / 2 + (f * x) / z;
      const v = h / 2 + (f * y) / z;
      if (u < 0 || u > w || v < 0 || v > h) return false;
    }
    return true;
  }

  #hfov(): number {
    const camera = this.scene.camera!;
    return 2 * Math.atan(Math.tan((camera.fov * Math.PI) / 360) * camera.aspect);
  }
}

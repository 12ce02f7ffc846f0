/**
 * The twin's camera: renders what the robot's camera sees from the twin's state, only when somebody asks (a
 * frame request or the marker detector), so an idle camera costs the physics nothing.
 */
import type { Camera, Frame } from '../core/backend.ts';
import type { CameraConfig, TableConfig } from '../config/robot-config.ts';
import type { CameraRealism } from '../config/camera-realism.ts';
import type { RoomConfig } from '../config/room.ts';
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
import type { TwinScene } from '../scene/twin-scene.ts';
import type * as TwinSceneModule from '../scene/twin-scene.ts';
import type { ImageEffects } from '../scene/clean-effects.ts';
import type { Rasterizer } from '../scene/rasterizer.ts';
import type * as RasterizerModule from '../scene/rasterizer.ts';
import { CameraModel, checkLens } from '../scene/camera-model.ts';

export interface SimCameraOptions {
  readonly camera: CameraConfig;
  readonly urdf: UrdfRobot;
  readonly table: TableConfig | null;
  readonly cards: CardTable;
  /** The twin's present joint angles (rad) by joint name. */
  readonly jointAngles: () => ReadonlyMap<string, number>;
  /**
   * The twin's clock (seconds). With it, grab() serves the same frame for 1/fps of that clock as a real camera
   * does, so clients pulling frames back to back cost at most fps renders a second.
   */
  readonly now?: () => number;
  /** Exposure, blur and noise of the clean picture (tests); unused with `realism`. */
  readonly effects?: ImageEffects;
  /** The room around the robot; none: the robot, its table and the cards alone. */
  readonly room?: RoomConfig | null;
  /** The lens and sensor model (src/scene/camera-model.ts); none: clean frames. */
  readonly realism?: CameraRealism | null;
  /** The twin's present joint speeds (rad/s) by joint name: the motion blur's source. */
  readonly jointVelocities?: () => ReadonlyMap<string, number>;
}

/**
 * The renderer (three.js and the rasteriser, about 2 MB of code) is loaded on a camera's first use, not at start:
 * a robot without a camera, or one nobody looks through, never pays for it. Loaded once per process.
 */
let renderer: Promise<RendererModules> | undefined;
type RendererModules = [typeof TwinSceneModule, typeof RasterizerModule];
function loadRenderer(): Promise<RendererModules> {
  renderer ??= Promise.all([import('../scene/twin-scene.ts'), import('../scene/rasterizer.ts')]);
  return renderer;
}

/** Time step over which the image motion is measured from the joint speeds, seconds. */
const MOTION_STEP = 0.01;

/** How far in front of the camera `show` holds a card by default, metres. */
export const DEFAULT_SHOW_DISTANCE = 0.2;

export class SimCamera implements Camera {
  readonly resolution: readonly [number, number];
  readonly fps: number;
  readonly cards: CardTable;
  /** Built on first use (a frame, a pose): the room and meshes cost a start ~0.6-1 s that no answer needs. */
  #scene: TwinScene | undefined;
  #rasterizerMade: Rasterizer | undefined;
  readonly #build: (modules: RendererModules) => { scene: TwinScene; rasterizer: Rasterizer };
  #modules: RendererModules | undefined;
  /**
   * The lens and sensor model, built on the first realistic frame (its maps and buffers are about 11 MB at 640 x 480:
   * thirty classroom twins nobody looks through would hold 330 MB). The settings are checked at once (a bad one stops
   * the start).
   */
  readonly #makeModel: (() => CameraModel) | undefined;
  #modelMade: CameraModel | undefined;
  readonly #jointAngles: () => ReadonlyMap<string, number>;
  readonly #now: (() => number) | undefined;
  readonly #jointVelocities: (() => ReadonlyMap<string, number>) | undefined;
  #effects: ImageEffects;
  #lightLevel = 1;
  #frames = 0;
  /** Bumped whenever something the clock does not see changes the picture (a card moved, the effects). */
  #version = 0;
  #last: { frame: Frame; time: number; version: number } | undefined;

  constructor(opts: SimCameraOptions) {
    this.resolution = opts.camera.resolution;
    this.fps = opts.camera.fps;
    this.cards = opts.cards;
    this.#effects = opts.effects ?? {};
    this.#jointAngles = opts.jointAngles;
    this.#now = opts.now;
    this.#jointVelocities = opts.jointVelocities;
    this.#build = ([{ TwinScene }, { Rasterizer }]) => ({
      // The cards as they are now: their moves before this were not followed.
      scene: new TwinScene({
        urdf: opts.urdf,
        table: opts.table,
        cards: opts.cards.list(),
        camera: opts.camera,
        room: opts.room ?? null,
      }),
      rasterizer: new Rasterizer(this.resolution[0], this.resolution[1]),
    });
    const realism = opts.realism;
    if (realism) {
      const [width, height] = this.resolution;
      checkLens(width, height, opts.camera.fov, this.fps, realism);
      this.#makeModel = () => new CameraModel(width, height, opts.camera.fov, this.fps, realism);
    }
    opts.cards.onChange((card) => {
      this.#scene?.setCardPose(card.name, card);
      this.#version++;
    });
  }

  /** Loads the renderer (once per process); grab() does it, render() and scene need it done. */
  async prepare(): Promise<void> {
    this.#modules ??= await loadRenderer();
  }

  /** The three.js world the camera sees (built on first use, after prepare()). */
  get scene(): TwinScene {
    if (!this.#scene) {
      if (!this.#modules) throw new Error('the camera renders once prepared: await camera.prepare() first');
      const built = this.#build(this.#modules);
      this.#scene = built.scene;
      this.#rasterizerMade = built.rasterizer;
    }
    return this.#scene;
  }

  get #rasterizer(): Rasterizer {
    void this.scene;
    return this.#rasterizerMade!;
  }

  /** Exposure, blur and noise applied to every frame (tests make frames harder with them). */
  get effects(): ImageEffects {
    return this.#effects;
  }

  set effects(effects: ImageEffects) {
    this.#effects = effects;
    this.#version++;
  }

  /** Whether frames go through the lens and sensor model (else they are clean). */
  get realistic(): boolean {
    return this.#makeModel !== undefined;
  }

  /** The room's light relative to its nominal light (the realistic camera's exposure and noise follow it). */
  get lightLevel(): number {
    return this.#lightLevel;
  }

  set lightLevel(level: number) {
    if (!(level > 0) || !Number.isFinite(level))
      throw new RangeError(`light level must be above 0, got ${level}`);
    this.#lightLevel = level;
    this.#version++;
  }

  /** What the realistic camera decided for its last frame (exposure, gain, white balance, blur). */
  get lastExposure() {
    return this.#modelMade?.lastExposure;
  }

  /** The latest frame if it is younger than 1/fps of the twin's clock and nothing moved since; else a new one. */
  async grab(): Promise<Frame> {
    const now = this.#now?.();
    const last = this.#last;
    if (
      now !== undefined &&
      last &&
      last.version === this.#version &&
      now >= last.time &&
      now - last.time < 1 / this.fps - 1e-9
    )
      return last.frame;
    await this.prepare();
    const frame = this.render();
    if (now !== undefined) this.#last = { frame, time: now, version: this.#version };
    return frame;
  }

  /** Renders the camera's view of the twin as it is now (synchronous, once prepared). */
  render(): Frame {
    const angles = this.#jointAngles();
    this.scene.setJointAngles(angles);
    const model = this.#makeModel && (this.#modelMade ??= this.#makeModel());
    if (model) {
      const image = this.#rasterizer.renderLinear(this.scene.scene, this.scene.camera!, model.renderFocal);
      const centre = image.invDepth[(image.height >> 1) * image.width + (image.width >> 1)]!;
      const motion = this.#imageMotion(angles, centre > 0 ? 1 / centre : 1, image.focal);
      return model.capture(image, this.#frames++, { motion, lightLevel: this.#lightLevel });
    }
    const effects = this.#effects.noise
      ? { ...this.#effects, seed: (this.#effects.seed ?? 1) + this.#frames++ }
      : this.#effects;
    return this.#rasterizer.render(this.scene.scene, this.scene.camera!, effects);
  }

  /**
   * How fast the picture slides now, pixels per second: where the point seen at the image centre (at `depth`)
   * was MOTION_STEP ago, by the joint speeds.
   */
  #imageMotion(angles: ReadonlyMap<string, number>, depth: number, focal: number): [number, number] {
    const speeds = this.#jointVelocities?.();
    if (!speeds || [...speeds.values()].every((w) => Math.abs(w) < 1e-4)) return [0, 0];
    const now = this.scene.cameraMountPose()!;
    const earlier = new Map(angles);
    for (const [joint, w] of speeds) earlier.set(joint, (angles.get(joint) ?? 0) - w * MOTION_STEP);
    this.scene.setJointAngles(earlier);
    const before = this.scene.cameraMountPose()!;
    this.scene.setJointAngles(angles);
    const [x, y, z] = transformPoint(invertPose(before), transformPoint(now, [0, 0, depth]));
    if (z <= 1e-3) return [0, 0];
    return [(-focal * x) / z / MOTION_STEP, (-focal * y) / z / MOTION_STEP];
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

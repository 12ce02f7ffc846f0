/** A twin camera outside any server, posed by hand, to render views with cards at chosen poses. */
import type * as THREE from 'three';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { userToJoint } from '../../src/core/frames.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { composePoses, matrixToRpy, poseFromOrigin, rotX } from '../../src/urdf/transform.ts';
import { CardTable } from '../../src/scene/cards.ts';
import { SimCamera } from '../../src/sim/camera.ts';
import type { ImageEffects } from '../../src/scene/clean-effects.ts';
import { DEFAULT_ROOM } from '../../src/config/room.ts';

export const CARDS = [
  { name: 'tetris', id: 112259237 },
  { name: 'caribou', id: 221052793 },
  { name: 'lapin', id: 44616414 },
] as const;

export interface View {
  readonly camera: SimCamera;
  /**
   * three.js as the camera's scene and rasteriser have it (loaded by import(), as src/sim/camera.ts loads them): a
   * test file's static import may get a second copy (its CommonJS build), whose meshes the rasteriser skips.
   */
  readonly three: typeof THREE;
  readonly cards: CardTable;
  /** Joint angles (user degrees by motor) the camera is posed from; change and render again. */
  readonly pose: Record<string, number>;
  /**
   * Holds a card in the camera frame: `distance` ahead, shifted by (x, y) metres (image right, down), turned by
   * `yaw` and `pitch` (tilt, rad) and `roll` (in the image plane, rad).
   */
  hold(
    name: string,
    at: { distance: number; x?: number; y?: number; yaw?: number; pitch?: number; roll?: number },
  ): void;
}

export async function ergoJrView(
  opts: { effects?: ImageEffects; resolution?: [number, number]; size?: number; realistic?: boolean } = {},
): Promise<View> {
  const config = await loadRobotConfig('ergo-jr');
  const urdf = await loadUrdf(config.urdfPath);
  const pose: Record<string, number> = { ...config.startup.pose };
  const cards = new CardTable(
    CARDS.map((c, i) => ({
      ...c,
      size: opts.size ?? 0.06,
      // As robots/ergo-jr.json: standing behind the robot, faces turned away from it.
      xyz: [-0.08 + 0.08 * i, 0.35, -0.016] as [number, number, number],
      rpy: [Math.PI / 2, 0, Math.PI] as [number, number, number],
    })),
  );
  const camera = new SimCamera({
    camera: { ...config.camera!, resolution: opts.resolution ?? config.camera!.resolution },
    urdf,
    table: { xyz: [0, -0.1, -0.046], size: [0.8, 0.6, 0.03], kind: 'table' },
    // Realistic: in the default room, through the config's camera model (docs/sensors.md).
    room: opts.realistic ? DEFAULT_ROOM : null,
    realism: opts.realistic ? config.camera!.realism : null,
    cards,
    jointAngles: () => new Map(config.motors.map((m) => [m.name, userToJoint(m, pose[m.name] ?? 0)])),
    effects: opts.effects,
  });
  await camera.prepare();
  return {
    camera,
    three: await import('three'),
    cards,
    pose,
    hold(name, at) {
      const inCamera = poseFromOrigin([at.x ?? 0, at.y ?? 0, at.distance], [0, 0, 0]);
      // Facing the camera and upright (rotX(pi)), then the tilts about the card's own axes.
      const facing = { rotation: rotX(Math.PI), translation: [0, 0, 0] as const };
      const tilt = poseFromOrigin([0, 0, 0], [at.pitch ?? 0, at.yaw ?? 0, at.roll ?? 0]);
      const held = composePoses(camera.pose(), composePoses(inCamera, composePoses(facing, tilt)));
      cards.place(name, { xyz: held.translation, rpy: matrixToRpy(held.rotation) });
    },
  };
}

/** Clutter for false-positive checks: boxes with a checkerboard texture and plain ones, near the camera's view. */
export function addClutter(view: View, seed: number, count = 8): THREE.Object3D {
  let s = seed >>> 0 || 1;
  const rand = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  const THREE = view.three;
  const group = new THREE.Group();
  const cam = view.camera.pose();
  for (let i = 0; i < count; i++) {
    const size = 0.02 + rand() * 0.08;
    let material: THREE.Material;
    if (rand() < 0.5) {
      // A checkerboard of n x n squares: many black-and-white quadrilaterals.
      const n = 2 + Math.floor(rand() * 8);
      const px = 8;
      const data = new Uint8Array(n * px * n * px * 4);
      for (let y = 0; y < n * px; y++)
        for (let x = 0; x < n * px; x++) {
          const v = (Math.floor(x / px) + Math.floor(y / px)) % 2 ? 255 : 20;
          data.set([v, v, v, 255], (y * n * px + x) * 4);
        }
      const texture = new THREE.DataTexture(data, n * px, n * px);
      texture.needsUpdate = true;
      material = new THREE.MeshLambertMaterial({ map: texture });
    } else material = new THREE.MeshLambertMaterial({ color: Math.floor(rand() * 0xffffff) });
    const mesh = new THREE.Mesh(new THREE.BoxGeometry(size, size, size * (0.2 + rand())), material);
    const d = 0.15 + rand() * 0.4;
    const local = [(rand() - 0.5) * d, (rand() - 0.5) * d * 0.7, d];
    const r = cam.rotation;
    mesh.position.set(
      cam.translation[0] + r[0] * local[0]! + r[1] * local[1]! + r[2] * local[2]!,
      cam.translation[1] + r[3] * local[0]! + r[4] * local[1]! + r[5] * local[2]!,
      cam.translation[2] + r[6] * local[0]! + r[7] * local[1]! + r[8] * local[2]!,
    );
    mesh.rotation.set(rand() * 6.28, rand() * 6.28, rand() * 6.28);
    group.add(mesh);
  }
  view.camera.scene.scene.add(group);
  group.updateMatrixWorld(true);
  return group;
}

/**
 * ONE description of what is in the twin's world, as a three.js object tree: the robot's links with their URDF
 * visual shapes, the table, the marker cards and the robot's camera. It is posed from the twin's state (joint
 * angles, card poses) and drawn by the software rasteriser in Node, or by WebGL in the browser's 3D view.
 * The three.js world frame is the URDF root link's frame (z up). Browser-safe: no node: imports.
 */
import * as THREE from 'three';
import type { CameraConfig, TableConfig } from '../config/robot-config.ts';
import type { RoomConfig } from '../config/room.ts';
import type { UrdfGeometry, UrdfJoint, UrdfRobot, UrdfShape, Vec3 } from '../urdf/types.ts';
import type { Pose } from '../urdf/transform.ts';
import { markerImage } from '../vision/marker.ts';
import type { CardPose, CardState } from './cards.ts';
import { roomObject, tableMaterial } from './room.ts';

export interface TwinSceneOptions {
  readonly urdf: UrdfRobot;
  readonly table: TableConfig | null;
  readonly cards: readonly CardState[];
  readonly camera: CameraConfig | null;
  /** The room around the robot, with its lamps (the rendered camera's world); none: the robot and table alone. */
  readonly room?: RoomConfig | null;
}

/** Texture pixels per marker cell: enough for crisp cells at any size the camera can see. */
const CARD_PIXELS_PER_CELL = 8;
const LINK_GREY = 0xb0b0b0;
const TABLE_COLOURS = { table: 0xa0794f, floor: 0x8c8c8c } as const;
const PAPER_BACK = 0xf2f2ec;
/** Printed card: matte paper is not pure white and ink not pure black (sRGB bytes). */
const PAPER = 242;
const INK = 24;
/** Scratch axis for posing joints (no allocation per pose). */
const AXIS = new THREE.Vector3();

/** URDF rpy (fixed axes, R = Rz Ry Rx) onto a three.js object: Euler order 'ZYX' is that same product. */
function setPose(object: THREE.Object3D, xyz: Vec3, rpy: Vec3): void {
  object.position.set(xyz[0], xyz[1], xyz[2]);
  object.rotation.set(rpy[0], rpy[1], rpy[2], 'ZYX');
}

function geometryOf(g: UrdfGeometry): THREE.BufferGeometry {
  switch (g.kind) {
    case 'box':
      return new THREE.BoxGeometry(g.size[0], g.size[1], g.size[2]);
    case 'cylinder':
      // three's cylinders run along y, URDF's along z.
      return new THREE.CylinderGeometry(g.radius, g.radius, g.length, 16).rotateX(Math.PI / 2);
    case 'sphere':
      return new THREE.SphereGeometry(g.radius, 16, 12);
    case 'mesh': {
      // Drawn as its triangles (STL: the Torso's measured parts, a user's visuals), each face lit by its own normal.
      const mesh = new THREE.BufferGeometry();
      mesh.setAttribute('position', new THREE.BufferAttribute(g.triangles, 3));
      mesh.computeVertexNormals();
      return mesh;
    }
  }
}

function shapeMesh(shape: UrdfShape): THREE.Mesh {
  const colour = new THREE.Color(LINK_GREY);
  if (shape.rgba) colour.setRGB(shape.rgba[0], shape.rgba[1], shape.rgba[2], THREE.SRGBColorSpace);
  const mesh = new THREE.Mesh(geometryOf(shape.geometry), new THREE.MeshLambertMaterial({ color: colour }));
  setPose(mesh, shape.xyz, shape.rpy);
  return mesh;
}

/** The printed face of a card as a texture (rows bottom-up, as three.js data textures are laid out). */
export function cardTexture(id: number): THREE.DataTexture {
  const img = markerImage(id, CARD_PIXELS_PER_CELL);
  const rgba = new Uint8Array(img.width * img.height * 4);
  for (let y = 0; y < img.height; y++) {
    const src = (img.height - 1 - y) * img.width * 3;
    for (let x = 0; x < img.width; x++) {
      const o = (y * img.width + x) * 4;
      rgba[o] = rgba[o + 1] = rgba[o + 2] = img.rgb[src + x * 3]! ? PAPER : INK;
      rgba[o + 3] = 255;
    }
  }
  const texture = new THREE.DataTexture(rgba, img.width, img.height, THREE.RGBAFormat);
  texture.colorSpace = THREE.SRGBColorSpace;
  texture.magFilter = THREE.LinearFilter;
  texture.needsUpdate = true;
  return texture;
}

function cardObject(card: CardState): THREE.Group {
  const group = new THREE.Group();
  group.name = `card:${card.name}`;
  const face = new THREE.Mesh(
    new THREE.PlaneGeometry(card.size, card.size),
    new THREE.MeshLambertMaterial({ map: cardTexture(card.id) }),
  );
  const back = new THREE.Mesh(
    new THREE.PlaneGeometry(card.size, card.size),
    new THREE.MeshLambertMaterial({ color: PAPER_BACK }),
  );
  back.rotation.y = Math.PI;
  group.add(face, back);
  setPose(group, card.xyz, card.rpy);
  return group;
}

interface MovingJoint {
  readonly joint: UrdfJoint;
  /** The child link's object; its local transform is the joint's motion. */
  readonly link: THREE.Object3D;
}

export class TwinScene {
  readonly scene = new THREE.Scene();
  /** The robot's camera (three.js convention: looks along its -z, y up), or undefined when it has none. */
  readonly camera: THREE.PerspectiveCamera | undefined;
  /** The camera as the robot config mounts it: looks along +z, image x along +x, image y along +y. */
  readonly #mount: THREE.Object3D | undefined;
  readonly #links = new Map<string, THREE.Object3D>();
  readonly #moving: MovingJoint[] = [];
  readonly #cards = new Map<string, THREE.Object3D>();

  constructor(opts: TwinSceneOptions) {
    const { urdf } = opts;
    for (const link of urdf.links.values()) {
      const object = new THREE.Object3D();
      object.name = link.name;
      for (const shape of link.visuals) object.add(shapeMesh(shape));
      this.#links.set(link.name, object);
    }
    this.scene.add(this.#links.get(urdf.root)!);
    for (const joint of urdf.joints) {
      const origin = new THREE.Object3D();
      origin.name = `joint:${joint.name}`;
      setPose(origin, joint.xyz, joint.rpy);
      this.#links.get(joint.parent)!.add(origin);
      const link = this.#links.get(joint.child)!;
      origin.add(link);
      if (joint.type !== 'fixed') this.#moving.push({ joint, link });
    }
    const room = opts.room ?? null;
    if (room) this.scene.add(roomObject(room, opts.table));
    // In a room, the ground a robot stands on is the room's floor.
    if (opts.table && !(room && opts.table.kind === 'floor')) {
      const t = opts.table;
      const table = new THREE.Mesh(
        new THREE.BoxGeometry(t.size[0], t.size[1], t.size[2]),
        room ? tableMaterial(room) : new THREE.MeshLambertMaterial({ color: TABLE_COLOURS[t.kind] }),
      );
      table.name = t.kind;
      table.position.set(t.xyz[0], t.xyz[1], t.xyz[2] - t.size[2] / 2);
      this.scene.add(table);
    }
    for (const card of opts.cards) {
      const object = cardObject(card);
      this.#cards.set(card.name, object);
      this.scene.add(object);
    }
    if (opts.camera) {
      const c = opts.camera;
      const carrier = this.#links.get(c.link);
      if (!carrier) throw new Error(`camera.link "${c.link}" is not a link of the URDF`);
      const mount = new THREE.Object3D();
      mount.name = 'camera-mount';
      setPose(mount, c.xyz, c.rpy);
      carrier.add(mount);
      const [w, h] = c.resolution;
      // The config gives the horizontal field of view; three.js wants the vertical one.
      const vfov = (2 * Math.atan(Math.tan((c.fov * Math.PI) / 360) / (w / h)) * 180) / Math.PI;
      const camera = new THREE.PerspectiveCamera(vfov, w / h, 0.005, 20);
      camera.name = 'camera';
      camera.rotation.x = Math.PI;
      mount.add(camera);
      this.#mount = mount;
      this.camera = camera;
    }
    this.scene.updateMatrixWorld(true);
  }

  /** Poses the robot: joint values by joint name (radians; metres for prismatic), missing ones at 0. */
  setJointAngles(angles: ReadonlyMap<string, number>): void {
    for (const { joint, link } of this.#moving) {
      const q = angles.get(joint.name) ?? 0;
      const [ax, ay, az] = joint.axis;
      if (joint.type === 'prismatic') link.position.set(ax * q, ay * q, az * q);
      else link.quaternion.setFromAxisAngle(AXIS.set(ax, ay, az), q);
    }
    this.scene.updateMatrixWorld(true);
  }

  /** A joint's value as its child link is posed (radians; metres for prismatic); undefined for a fixed or unknown joint. */
  jointValue(name: string): number | undefined {
    const moving = this.#moving.find((m) => m.joint.name === name);
    if (!moving) return undefined;
    const [ax, ay, az] = moving.joint.axis;
    const { position: p, quaternion: q } = moving.link;
    if (moving.joint.type === 'prismatic') return p.x * ax + p.y * ay + p.z * az;
    // A rotation by t about the unit axis a is the quaternion (a sin(t/2), cos(t/2)).
    return 2 * Math.atan2(q.x * ax + q.y * ay + q.z * az, q.w);
  }

  /** Moves a card of the world (unknown names are ignored: the card table checks them). */
  setCardPose(name: string, pose: CardPose): void {
    const object = this.#cards.get(name);
    if (!object) return;
    setPose(object, pose.xyz, pose.rpy);
    object.updateMatrixWorld(true);
  }

  /** A link's object (its frame is the URDF link frame). */
  link(name: string): THREE.Object3D | undefined {
    return this.#links.get(name);
  }

  /** Pose of the configured camera frame in the root frame, as last posed; undefined without a camera. */
  cameraMountPose(): Pose | undefined {
    if (!this.#mount) return undefined;
    return poseOfMatrix(this.#mount.matrixWorld);
  }
}

/** A three.js rigid world matrix as this project's Pose (row-major rotation, translation). */
export function poseOfMatrix(m: THREE.Matrix4): Pose {
  const e = m.elements; // column-major
  return {
    rotation: [e[0]!, e[4]!, e[8]!, e[1]!, e[5]!, e[9]!, e[2]!, e[6]!, e[10]!],
    translation: [e[12]!, e[13]!, e[14]!],
  };
}

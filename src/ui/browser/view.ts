/**
 * The 3D twin: the world of src/scene/twin-scene.ts (the same description the sim camera renders: the robot's URDF
 * shapes, the table, the marker cards with their printed faces), drawn by WebGL with lights and orbit controls.
 * The scene keeps the URDF's frame (z up, metres), so a clicked point is already an IK target in the root frame.
 * It renders only when something changed (a new state, the camera moved, the window resized). In shadow mode the
 * twin's ghost (ghost.ts) is drawn over the robot.
 */
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { TwinScene } from '../../scene/twin-scene.ts';
import type { UrdfLink, UrdfRobot, Vec3 } from '../../urdf/types.ts';
import type { RobotDescription, RobotState, SceneDescription, SceneLink } from '../protocol.ts';
import { Ghost } from './ghost.ts';

/** A card as GET /sim/cards/list.json gives it. */
export interface CardPose {
  readonly name: string;
  readonly xyz: readonly number[];
  readonly rpy: readonly number[];
}

export const BACKGROUND = 0xdfe6ee;

/** A scene link back as a URDF link for the twin scene: a mesh's triangles as the typed array it draws from. */
function urdfLink(link: SceneLink): UrdfLink {
  const visuals = link.visuals.map((shape) =>
    shape.geometry.kind === 'mesh'
      ? { ...shape, geometry: { ...shape.geometry, triangles: Float32Array.from(shape.geometry.triangles) } }
      : { ...shape, geometry: shape.geometry },
  );
  return { name: link.name, visuals, collisions: [] };
}

/** The scene description's URDF as the twin scene takes it (built once: the robot and its ghost share it). */
function urdfRobot(urdf: SceneDescription['urdf']): UrdfRobot {
  return { ...urdf, links: new Map(urdf.links.map((l) => [l.name, urdfLink(l)])) };
}

export class RobotView {
  readonly renderer: THREE.WebGLRenderer;
  readonly twin: TwinScene;
  readonly scene: THREE.Scene;
  readonly camera = new THREE.PerspectiveCamera(45, 1, 0.005, 50);
  readonly controls: OrbitControls;
  /** The root link's object: the whole robot. */
  readonly robot: THREE.Object3D;
  /** Seq of the last state drawn (tests and scripts wait on it). */
  renderedSeq = -1;
  /** Pictures drawn so far. */
  framesDrawn = 0;
  readonly #container: HTMLElement;
  readonly #target: THREE.Mesh;
  readonly #pickables: THREE.Object3D[] = [];
  readonly #urdf: UrdfRobot;
  readonly #description: RobotDescription;
  /** Joint angles of the state drawn (kept: no allocation per state). */
  readonly #angles = new Map<string, number>();
  /** Built on the first state that carries the shadow twin: a server without --shadow never pays for it. */
  #ghost: Ghost | undefined;
  #ghostWanted = true;
  #shadowOn = false;
  #dirty = true;
  #pendingSeq = -1;

  constructor(container: HTMLElement, description: RobotDescription, world: SceneDescription) {
    this.#container = container;
    this.#description = description;
    this.#urdf = urdfRobot(world.urdf);
    this.twin = new TwinScene({
      urdf: this.#urdf,
      table: world.table,
      cards: world.cards,
      camera: world.camera,
    });
    this.scene = this.twin.scene;
    this.robot = this.twin.link(this.#urdf.root)!;
    this.renderer = new THREE.WebGLRenderer({ antialias: true });
    this.renderer.setPixelRatio(window.devicePixelRatio);
    container.prepend(this.renderer.domElement);
    this.scene.background = new THREE.Color(BACKGROUND);
    this.camera.up.set(0, 0, 1);
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x8090a0, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(1, -1.5, 2.5);
    this.scene.add(sun);
    this.#pickables.push(this.robot);

    const box = new THREE.Box3().setFromObject(this.robot);
    const size = box.getSize(new THREE.Vector3());
    const centre = box.getCenter(new THREE.Vector3());
    this.#addGround(description, box);

    const reach = Math.max(size.x, size.y, size.z);
    this.camera.position
      .copy(centre)
      .add(new THREE.Vector3(1.1, -1.5, 0.8).normalize().multiplyScalar(reach * 2.2));
    this.camera.near = reach / 100;
    this.camera.far = reach * 100;
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.target.copy(centre);
    this.controls.update();
    this.controls.addEventListener('change', () => this.invalidate());

    this.#target = new THREE.Mesh(
      new THREE.SphereGeometry(reach / 60, 16, 12),
      new THREE.MeshStandardMaterial({ color: 0xe11d48 }),
    );
    this.#target.visible = false;
    this.scene.add(this.#target);

    new ResizeObserver(() => this.#resize()).observe(container);
    this.#resize();
    const frame = () => {
      if (this.#dirty) {
        this.#dirty = false;
        this.renderer.render(this.scene, this.camera);
        this.renderedSeq = this.#pendingSeq;
        this.framesDrawn++;
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }

  /** Hides or shows the robot (to compare a picture with and without it). */
  setRobotVisible(visible: boolean): void {
    this.robot.visible = visible;
    this.invalidate();
  }

  invalidate(): void {
    this.#dirty = true;
  }

  update(state: RobotState): void {
    const { motors } = this.#description;
    for (let i = 0; i < motors.length; i++) this.#angles.set(motors[i]!.joint, state.joint[i] ?? 0);
    this.twin.setJointAngles(this.#angles);
    if (state.shadow) {
      if (!this.#ghost) {
        this.#ghost = new Ghost(this.#urdf, this.#description);
        this.scene.add(this.#ghost.root);
      }
      this.#ghost.update(state, state.shadow);
    }
    this.#shadowOn = state.shadow !== null;
    if (this.#ghost) this.#ghost.root.visible = this.#ghostWanted && this.#shadowOn;
    this.#pendingSeq = state.seq;
    this.invalidate();
  }

  /** Shows or hides the shadow twin's ghost (there is one only while the state carries the shadow). */
  setGhostVisible(visible: boolean): void {
    this.#ghostWanted = visible;
    if (this.#ghost) this.#ghost.root.visible = visible && this.#shadowOn;
    this.invalidate();
  }

  ghostVisible(): boolean {
    return this.#ghost?.root.visible ?? false;
  }

  /** The ghost: a motor's angle as drawn (user degrees), a link's colour ('#rrggbb'); null without a ghost. */
  ghostJointAngle(motor: string): number | null {
    return this.#ghost?.jointAngle(motor) ?? null;
  }

  ghostLinkColour(link: string): string | null {
    return this.#ghost?.linkColour(link) ?? null;
  }

  /** Moves the cards to their present poses (root frame). */
  setCards(cards: readonly CardPose[]): void {
    for (const card of cards) this.twin.setCardPose(card.name, { xyz: vec3(card.xyz), rpy: vec3(card.rpy) });
    this.invalidate();
  }

  /** Shows (or hides, with null) the IK target sphere. */
  showTarget(point: readonly number[] | null): void {
    this.#target.visible = point !== null;
    if (point) this.#target.position.set(point[0]!, point[1]!, point[2]!);
    this.invalidate();
  }

  /** The point of the robot, table or ground under a click, in the root frame (metres), or null. */
  pick(event: MouseEvent): [number, number, number] | null {
    const rect = this.renderer.domElement.getBoundingClientRect();
    const ndc = new THREE.Vector2(
      ((event.clientX - rect.left) / rect.width) * 2 - 1,
      -((event.clientY - rect.top) / rect.height) * 2 + 1,
    );
    const ray = new THREE.Raycaster();
    ray.setFromCamera(ndc, this.camera);
    const hit = ray.intersectObjects(this.#pickables, true)[0];
    return hit ? [hit.point.x, hit.point.y, hit.point.z] : null;
  }

  /** Where a link's origin is drawn, in CSS pixels from the canvas' top-left corner. */
  linkScreenPosition(link: string): { x: number; y: number } | null {
    return this.#screenPosition(this.twin.link(link));
  }

  /** Where the ghost's link's origin is drawn; null without a ghost. */
  ghostLinkScreenPosition(link: string): { x: number; y: number } | null {
    return this.#screenPosition(this.#ghost?.link(link));
  }

  #screenPosition(object: THREE.Object3D | undefined): { x: number; y: number } | null {
    if (!object) return null;
    this.scene.updateMatrixWorld(true);
    const p = object.getWorldPosition(new THREE.Vector3()).project(this.camera);
    const rect = this.renderer.domElement.getBoundingClientRect();
    return { x: ((p.x + 1) / 2) * rect.width, y: ((1 - p.y) / 2) * rect.height };
  }

  #addGround(description: RobotDescription, robotBox: THREE.Box3): void {
    const table = description.table && this.scene.getObjectByName(description.table.kind);
    if (table) {
      this.#pickables.push(table);
      return;
    }
    // No table in the config: a grid under the robot, and an invisible plane to click on.
    const reach = robotBox.getSize(new THREE.Vector3()).length();
    const grid = new THREE.GridHelper(reach * 4, 20, 0x9aa4b2, 0xc3cad4);
    grid.rotation.x = Math.PI / 2;
    grid.position.z = robotBox.min.z;
    this.scene.add(grid);
    const plane = new THREE.Mesh(
      new THREE.PlaneGeometry(reach * 4, reach * 4),
      new THREE.MeshBasicMaterial({ visible: false }),
    );
    plane.position.z = robotBox.min.z;
    this.scene.add(plane);
    this.#pickables.push(plane);
  }

  #resize(): void {
    const w = Math.max(1, this.#container.clientWidth);
    const h = Math.max(1, this.#container.clientHeight);
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.invalidate();
  }
}

function vec3(v: readonly number[]): Vec3 {
  return [v[0] ?? 0, v[1] ?? 0, v[2] ?? 0];
}

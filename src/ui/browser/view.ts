/**
 * The 3D twin: the robot from its URDF (urdf-loader), the table and marker cards of the sim world, orbit controls.
 * The scene keeps the URDF's frame (z up, metres), so a clicked point is already an IK target in the root frame.
 * It renders only when something changed (a new state, the camera moved, the window resized).
 */
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import URDFLoader, { type URDFRobot } from 'urdf-loader';
import type { RobotDescription, RobotState } from '../protocol.ts';

export interface CardPose {
  readonly name: string;
  readonly id: number;
  readonly size: number;
  readonly xyz: readonly number[];
  readonly rpy: readonly number[];
}

export const BACKGROUND = 0xdfe6ee;

export class RobotView {
  readonly renderer: THREE.WebGLRenderer;
  readonly scene = new THREE.Scene();
  readonly camera = new THREE.PerspectiveCamera(45, 1, 0.005, 50);
  readonly controls: OrbitControls;
  readonly robot: URDFRobot;
  /** Seq of the last state drawn (tests and scripts wait on it). */
  renderedSeq = -1;
  /** Pictures drawn so far. */
  framesDrawn = 0;
  readonly #container: HTMLElement;
  readonly #cards = new Map<string, THREE.Mesh>();
  readonly #target: THREE.Mesh;
  readonly #pickables: THREE.Object3D[] = [];
  #dirty = true;
  #pendingSeq = -1;

  constructor(container: HTMLElement, description: RobotDescription, urdf: string) {
    this.#container = container;
    THREE.Object3D.DEFAULT_UP.set(0, 0, 1);
    this.renderer = new THREE.WebGLRenderer({ antialias: true });
    this.renderer.setPixelRatio(window.devicePixelRatio);
    container.prepend(this.renderer.domElement);
    this.scene.background = new THREE.Color(BACKGROUND);
    this.camera.up.set(0, 0, 1);
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x8090a0, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(1, -1.5, 2.5);
    this.scene.add(sun);

    this.robot = new URDFLoader().parse(urdf);
    this.scene.add(this.robot);
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

  update(description: RobotDescription, state: RobotState): void {
    description.motors.forEach((m, i) => {
      const angle = state.joint[i];
      if (angle !== undefined) this.robot.setJointValue(m.joint, angle);
    });
    this.#pendingSeq = state.seq;
    this.invalidate();
  }

  /** Draws the cards at their poses (root frame); cards not listed any more are removed. */
  setCards(cards: readonly CardPose[]): void {
    const names = new Set(cards.map((c) => c.name));
    for (const [name, mesh] of this.#cards)
      if (!names.has(name)) {
        this.scene.remove(mesh);
        this.#cards.delete(name);
      }
    for (const card of cards) {
      let mesh = this.#cards.get(card.name);
      if (!mesh) {
        mesh = new THREE.Mesh(
          new THREE.PlaneGeometry(card.size, card.size),
          new THREE.MeshStandardMaterial({ map: cardTexture(card), side: THREE.DoubleSide }),
        );
        this.#cards.set(card.name, mesh);
        this.scene.add(mesh);
      }
      mesh.position.set(card.xyz[0] ?? 0, card.xyz[1] ?? 0, card.xyz[2] ?? 0);
      // URDF rpy: R = Rz(yaw) Ry(pitch) Rx(roll), which is three's 'ZYX' order.
      mesh.rotation.set(card.rpy[0] ?? 0, card.rpy[1] ?? 0, card.rpy[2] ?? 0, 'ZYX');
    }
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
    const object = this.robot.links[link];
    if (!object) return null;
    this.robot.updateMatrixWorld(true);
    const p = object.getWorldPosition(new THREE.Vector3()).project(this.camera);
    const rect = this.renderer.domElement.getBoundingClientRect();
    return { x: ((p.x + 1) / 2) * rect.width, y: ((1 - p.y) / 2) * rect.height };
  }

  #addGround(description: RobotDescription, robotBox: THREE.Box3): void {
    const table = description.table;
    if (table) {
      const [x = 0, y = 0, z = 0] = table.xyz;
      const [sx = 1, sy = 1, sz = 0.02] = table.size;
      const top = new THREE.Mesh(
        new THREE.BoxGeometry(sx, sy, sz),
        new THREE.MeshStandardMaterial({ color: table.kind === 'floor' ? 0xb8bec6 : 0xc9a27a }),
      );
      top.position.set(x, y, z - sz / 2);
      this.scene.add(top);
      this.#pickables.push(top);
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

/** A white card with a dark square and its id: enough to tell the cards apart in the view. */
function cardTexture(card: CardPose): THREE.CanvasTexture {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 128;
  const g = canvas.getContext('2d')!;
  g.fillStyle = '#fff';
  g.fillRect(0, 0, 128, 128);
  g.fillStyle = '#111';
  g.fillRect(20, 20, 88, 88);
  g.fillStyle = '#fff';
  g.font = 'bold 36px sans-serif';
  g.textAlign = 'center';
  g.textBaseline = 'middle';
  g.fillText(String(card.id), 64, 64);
  const texture = new THREE.CanvasTexture(canvas);
  texture.colorSpace = THREE.SRGBColorSpace;
  return texture;
}

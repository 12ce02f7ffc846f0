/**
 * What changed since the rasteriser's last physical picture, so a still scene keeps its picture and a few moving
 * meshes redraw only the pixels they covered and now cover. Everything the picture depends on is signed as numbers
 * (see `#sign`); where each mesh could be is kept per mesh id.
 */
import * as THREE from 'three';
import type { Rect } from './colour.ts';

/** The signature's first numbers: focal length, near plane, the camera's world matrix. */
const SIGNATURE_HEAD = 18;

/** The next physical picture: unchanged, drawn whole, or drawn again inside a rectangle (empty when nothing shows). */
export type PictureChange = 'same' | 'all' | Rect;

export class PictureChanges {
  /** What the last physical picture was drawn from (see #sign). */
  #signature: number[] = [];
  /** Per visible object, in traversal order: its id, whether a mesh, and its numbers' range in the signature. */
  #segments: number[] = [];
  /** Per mesh id: the pixels it could cover in the last physical picture (see #meshRect). */
  readonly #rects = new Map<number, Rect>();
  /** The position version each geometry's bounding box was computed at (see #meshRect). */
  readonly #boxVersions = new WeakMap<THREE.BufferGeometry, number>();
  /** The visible meshes by id, as the last signature found them. */
  readonly #meshById = new Map<number, THREE.Mesh>();
  readonly #modelView = new THREE.Matrix4();

  constructor(
    readonly width: number,
    readonly height: number,
  ) {}

  /** The buffers were drawn over (a clean picture): the next physical picture is drawn whole. */
  forget(): void {
    this.#signature = [];
  }

  /** What the picture `camera` sees of `scene` needs drawn, remembered as the last picture's. */
  next(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, focal: number): PictureChange {
    const segments: number[] = [];
    const signature = this.#sign(scene, camera, focal, segments);
    if (sameNumbers(signature, this.#signature)) return 'same';
    const rect = this.#changedRect(signature, segments, camera, focal);
    this.#signature = signature;
    this.#segments = segments;
    if (rect) return rect;
    this.#rects.clear();
    return 'all';
  }

  /**
   * Where the mesh could be in the picture being drawn: measured and kept when the whole picture is drawn, the kept
   * place when a part is (the part's rectangle already counts its moves). Undefined: not known to be anywhere.
   */
  place(mesh: THREE.Mesh, camera: THREE.Camera, focal: number, whole: boolean): Rect | undefined {
    const rect = whole ? this.#meshRect(mesh, camera, focal) : this.#rects.get(mesh.id);
    if (!rect) this.#rects.delete(mesh.id);
    else if (whole) this.#rects.set(mesh.id, rect);
    return rect;
  }

  /**
   * The pixels to draw again when only meshes changed since the last physical picture (same camera, focal length,
   * objects and lights): the union of where each changed mesh could be then and now. Undefined: draw it all.
   */
  #changedRect(
    signature: readonly number[],
    segments: readonly number[],
    camera: THREE.Camera,
    focal: number,
  ): Rect | undefined {
    const old = this.#signature,
      oldSegments = this.#segments;
    if (old.length !== signature.length || !sameNumbers(segments, oldSegments)) return undefined;
    // The camera, the focal length and the near plane lead the signature (see #sign).
    if (!sameNumbers(signature.slice(0, SIGNATURE_HEAD), old.slice(0, SIGNATURE_HEAD))) return undefined;
    let x0 = Infinity,
      y0 = Infinity,
      x1 = -Infinity,
      y1 = -Infinity;
    const moved = new Map<number, Rect>();
    for (let s = 0; s < segments.length; s += 4) {
      const start = segments[s + 2]!,
        end = segments[s + 3]!;
      if (sameNumbers(signature.slice(start, end), old.slice(start, end))) continue;
      if (segments[s + 1] !== 1) return undefined;
      const id = segments[s]!;
      const before = this.#rects.get(id);
      const mesh = this.#meshById.get(id);
      const now = mesh && this.#meshRect(mesh, camera, focal);
      if (!before || !now) return undefined;
      moved.set(id, now);
      for (const r of [before, now])
        if (r.x0 <= r.x1 && r.y0 <= r.y1) {
          x0 = Math.min(x0, r.x0);
          y0 = Math.min(y0, r.y0);
          x1 = Math.max(x1, r.x1);
          y1 = Math.max(y1, r.y1);
        }
    }
    // Past half the picture, the whole one costs about as much.
    if (x0 <= x1 && (x1 - x0 + 1) * (y1 - y0 + 1) * 2 > this.width * this.height) return undefined;
    for (const [id, rect] of moved) this.#rects.set(id, rect);
    return x0 > x1 ? { x0: 0, y0: 0, x1: -1, y1: -1 } : { x0, y0, x1, y1 };
  }

  /**
   * The pixels the mesh could cover: its bounding box's corners projected (the hull of the projections holds every
   * triangle's), widened by a pixel, clipped to the picture. Undefined when a corner is not beyond the near plane.
   */
  #meshRect(mesh: THREE.Mesh, camera: THREE.Camera, focal: number): Rect | undefined {
    const geometry = mesh.geometry as THREE.BufferGeometry;
    // three.js keeps a box once computed: positions changed in place (their version bumped) need a new one.
    const positions = geometry.getAttribute('position') as THREE.BufferAttribute | undefined;
    const version = positions?.version ?? -1;
    if (!geometry.boundingBox || this.#boxVersions.get(geometry) !== version) {
      geometry.computeBoundingBox();
      this.#boxVersions.set(geometry, version);
    }
    const box = geometry.boundingBox;
    if (!box || box.isEmpty()) return undefined;
    const e = this.#modelView.multiplyMatrices(camera.matrixWorldInverse, mesh.matrixWorld).elements;
    const near = (camera as THREE.PerspectiveCamera).near;
    const cx = this.width / 2,
      cy = this.height / 2;
    let left = Infinity,
      right = -Infinity,
      top = Infinity,
      bottom = -Infinity;
    for (let k = 0; k < 8; k++) {
      const x = k & 1 ? box.max.x : box.min.x,
        y = k & 2 ? box.max.y : box.min.y,
        z = k & 4 ? box.max.z : box.min.z;
      const d = -(e[2]! * x + e[6]! * y + e[10]! * z + e[14]!);
      if (!(d > near)) return undefined;
      const px = cx + (focal * (e[0]! * x + e[4]! * y + e[8]! * z + e[12]!)) / d;
      const py = cy - (focal * (e[1]! * x + e[5]! * y + e[9]! * z + e[13]!)) / d;
      left = Math.min(left, px);
      right = Math.max(right, px);
      top = Math.min(top, py);
      bottom = Math.max(bottom, py);
    }
    if (!Number.isFinite(left + right + top + bottom)) return undefined;
    return {
      x0: Math.max(0, Math.floor(left) - 1),
      x1: Math.min(this.width - 1, Math.ceil(right) + 1),
      y0: Math.max(0, Math.floor(top) - 1),
      y1: Math.min(this.height - 1, Math.ceil(bottom) + 1),
    };
  }

  /**
   * Everything the physical picture depends on, as numbers: the camera, the focal length, and every visible mesh's
   * and light's identity, pose, geometry and material versions and colour. Texture and geometry data changed in
   * place must bump their version (three.js's needsUpdate), as the texel cache already assumes.
   */
  #sign(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, focal: number, segments: number[]): number[] {
    const out: number[] = [focal, camera.near, ...camera.matrixWorld.elements];
    const meshes = this.#meshById;
    meshes.clear();
    scene.traverseVisible((object) => {
      const start = out.length;
      if (object instanceof THREE.Mesh) {
        meshes.set(object.id, object);
        const geometry = object.geometry as THREE.BufferGeometry;
        const material = (Array.isArray(object.material) ? object.material[0] : object.material) as
          (THREE.Material & { color?: THREE.Color; map?: THREE.Texture | null }) | undefined;
        out.push(object.id, geometry.id, geometry.index?.version ?? -1);
        for (const name of ['position', 'uv'])
          out.push((geometry.getAttribute(name) as THREE.BufferAttribute | undefined)?.version ?? -1);
        out.push(
          material?.id ?? -1,
          material?.version ?? -1,
          material?.visible ? 1 : 0,
          material?.side ?? -1,
        );
        out.push(material?.color?.r ?? -1, material?.color?.g ?? -1, material?.color?.b ?? -1);
        out.push(material?.map?.id ?? -1, material?.map?.version ?? -1);
        out.push((object.userData.glow as number | undefined) ?? -1, ...object.matrixWorld.elements);
      } else if (object instanceof THREE.Light) {
        out.push(object.id, object.intensity, object.color.r, object.color.g, object.color.b);
        out.push(...object.matrixWorld.elements);
      }
      if (out.length > start)
        segments.push(object.id, object instanceof THREE.Mesh ? 1 : 0, start, out.length);
    });
    return out;
  }
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++)
    if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return true;
}

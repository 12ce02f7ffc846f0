// Over 400 lines: the rasteriser's inner loops are kept in one module so they stay monomorphic and fast.
/**
 * A small z-buffered software rasteriser for the twin's three.js scene: what the robot's camera sees, in Node,
 * without a GPU or an X server. Two ways to light it:
 * - render(): the clean picture, sRGB bytes, each face lit flat by an ambient term, a headlight and a light from
 *   above, then optional exposure, blur and seeded noise so tests can make frames harder;
 * - renderLinear(): the physical picture for the camera model (src/scene/camera-model.ts): linear light in 1/1024
 *   of white paper under the room's nominal light, Lambert shading by the scene's own lights (ambient and point
 *   lights with inverse-square fall-off) computed at the vertices and interpolated (Gouraud), glowing materials
 *   (MeshBasicMaterial, `userData.glow`) unlit; with the depth of every pixel.
 * Textures are sampled bilinearly with perspective correction (repeating when the texture says so); polygons are
 * clipped at the near plane. Browser-safe (no node: imports).
 */
import * as THREE from 'three';
import type { Frame } from '../core/backend.ts';
import { LINEAR_MAX, LINEAR_WHITE, type LinearImage, type Rect, srgbToLinear } from './colour.ts';

export interface ImageEffects {
  /** Multiplies the light (1 = as lit). */
  readonly exposure?: number;
  /** Box blur radius in pixels (0 = sharp). */
  readonly blur?: number;
  /** Standard deviation of the added noise, grey levels (0 = none). */
  readonly noise?: number;
  /** Seed of the noise (same seed, same frame). */
  readonly seed?: number;
}

/** A lamp of intensity 1 lights a surface facing it this far away to white (inverse square around it). */
const LAMP_REFERENCE = 1.5;
/** A lamp is a panel, not a point: its light stays finite next to it (squared size, m^2). */
const LAMP_SIZE2 = 0.3 * 0.3;

/** The signature's first numbers: focal length, near plane, the camera's world matrix. */
const SIGNATURE_HEAD = 18;

const AMBIENT = 0.55;
const HEADLIGHT = 0.4;
const TOP_LIGHT = 0.25;
/** Background: a pale wall, a little darker towards the bottom. */
const WALL_TOP = [214, 220, 226] as const;
const WALL_BOTTOM = [170, 176, 182] as const;

interface TextureView {
  readonly data: Float32Array;
  readonly width: number;
  readonly height: number;
  readonly wrap: boolean;
}

/** Camera-space vertex: x right, y up, d = depth in front of the camera (metres), u v texture coordinates. */
interface ClipVertex {
  x: number;
  y: number;
  d: number;
  u: number;
  v: number;
  /** Light reaching the vertex, per channel. */
  lr: number;
  lg: number;
  lb: number;
}

interface Lens {
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  near: number;
}

/** The scene's lights in camera space (linear colour x intensity). */
interface Lights {
  ambient: [number, number, number];
  points: { x: number; y: number; z: number; r: number; g: number; b: number }[];
}

/** sRGB byte -> linear (LINEAR_WHITE = 1). */
const SRGB_TO_LINEAR = Float32Array.from({ length: 256 }, (_, i) => srgbToLinear(i / 255) * LINEAR_WHITE);
/**
 * Textures' texels as the two passes read them (sRGB bytes, linear light), converted once; as floats, which the
 * samples multiply without a conversion (the same integer values; the camera-moving frame's fill 5.8 -> 5.4 ms).
 */
const byteTextures = new WeakMap<object, Float32Array>();
const linearTextures = new WeakMap<object, Float32Array>();
const EMPTY_TEXELS = new Float32Array(4);

export class Rasterizer {
  readonly width: number;
  readonly height: number;
  /** The picture being drawn: sRGB bytes (clean) or linear light, in one array type so the fill stays monomorphic. */
  readonly #colour: Uint16Array;
  /** 1 / depth of the nearest surface drawn so far (0 = nothing). */
  readonly #invDepth: Float32Array;
  readonly #modelView = new THREE.Matrix4();
  readonly #up = new THREE.Vector3();
  readonly #v = new THREE.Vector3();
  #positions = new Float64Array(0);
  readonly #corners: ClipVertex[] = [0, 1, 2].map(() => ({
    x: 0,
    y: 0,
    d: 0,
    u: 0,
    v: 0,
    lr: 0,
    lg: 0,
    lb: 0,
  }));
  /** Brightest value of the current pass. */
  #max = 255;
  /** Meshes of the current pass with their distance, drawn nearest first so hidden pixels fail the depth test early. */
  readonly #queue: { mesh: THREE.Mesh; distance: number }[] = [];
  #lights: Lights | undefined;
  /** What the last physical picture was drawn from (see #sign), and its version. */
  #signature: number[] = [];
  /** Per visible object, in traversal order: its id, whether a mesh, and its numbers' range in the signature. */
  #segments: number[] = [];
  #linearVersion = 0;
  /** Per mesh id: the pixels it could cover in the last physical picture (see #meshRect). */
  readonly #rects = new Map<number, Rect>();
  /** The position version each geometry's bounding box was computed at (see #meshRect). */
  readonly #boxVersions = new WeakMap<THREE.BufferGeometry, number>();
  /** The visible meshes by id, as the last signature found them. */
  readonly #meshById = new Map<number, THREE.Mesh>();
  /** The pixels the current pass may write. */
  #scissor: Rect;

  constructor(width: number, height: number) {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
      throw new RangeError(`bad image size ${width}x${height}`);
    this.width = width;
    this.height = height;
    this.#colour = new Uint16Array(width * height * 3);
    this.#invDepth = new Float32Array(width * height);
    this.#scissor = { x0: 0, y0: 0, x1: width - 1, y1: height - 1 };
  }

  /** Draws `scene` as `camera` sees it (three.js convention: looks along -z), clean. Returns a new frame. */
  render(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, effects: ImageEffects = {}): Frame {
    const { width, height } = this;
    this.#max = 255;
    this.#lights = undefined;
    // The clean picture draws over the buffers the physical one keeps.
    this.#signature = [];
    this.#clear();
    const exposure = effects.exposure ?? 1;
    this.#draw(scene, camera, height / 2 / Math.tan((camera.fov * Math.PI) / 360), exposure);
    const rgb = new Uint8Array(this.#colour);
    if (effects.blur && effects.blur > 0) boxBlur(rgb, width, height, Math.round(effects.blur));
    if (effects.noise && effects.noise > 0) addNoise(rgb, effects.noise, effects.seed ?? 1);
    return { width, height, rgb };
  }

  /**
   * Draws the physical picture lit by the scene's lights, with focal length `focal` pixels (default: the
   * camera's field of view). The buffers are the rasteriser's own: valid until the next call.
   */
  renderLinear(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, focal?: number): LinearImage {
    const f = focal ?? this.height / 2 / Math.tan((camera.fov * Math.PI) / 360);
    camera.updateMatrixWorld();
    camera.matrixWorldInverse.copy(camera.matrixWorld).invert();
    // A still scene (nothing the picture depends on changed since the last call) keeps its picture; when only some
    // meshes moved or changed, the rectangle they covered and now cover is drawn again, the same pixels as in full.
    const segments: number[] = [];
    const signature = this.#sign(scene, camera, f, segments);
    let changed: LinearImage['changed'];
    if (!sameNumbers(signature, this.#signature)) {
      const rect = this.#changedRect(signature, segments, camera, f);
      const since = this.#linearVersion;
      this.#signature = signature;
      this.#segments = segments;
      this.#linearVersion++;
      this.#max = LINEAR_MAX;
      if (rect) {
        this.#clearRect(rect);
        this.#scissor = rect;
        changed = { since, rect };
      } else {
        this.#colour.fill(0);
        this.#invDepth.fill(0);
        this.#lights = this.#collectLights(scene, camera);
        this.#rects.clear();
      }
      try {
        this.#draw(scene, camera, f, 1);
      } finally {
        this.#scissor = { x0: 0, y0: 0, x1: this.width - 1, y1: this.height - 1 };
      }
    }
    return {
      width: this.width,
      height: this.height,
      rgb: this.#colour,
      invDepth: this.#invDepth,
      focal: f,
      version: this.#linearVersion,
      ...(changed ? { changed } : {}),
    };
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
    if (old.length !== signature.length || !sameNumbers(segments, oldSegments) || !this.#lights)
      return undefined;
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

  #clearRect(rect: Rect): void {
    const { width } = this;
    for (let y = rect.y0; y <= rect.y1; y++) {
      this.#colour.fill(0, (y * width + rect.x0) * 3, (y * width + rect.x1 + 1) * 3);
      this.#invDepth.fill(0, y * width + rect.x0, y * width + rect.x1 + 1);
    }
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

  #collectLights(scene: THREE.Object3D, camera: THREE.Camera): Lights {
    const lights: Lights = { ambient: [0, 0, 0], points: [] };
    let any = false;
    scene.traverseVisible((object) => {
      if (object instanceof THREE.AmbientLight) {
        any = true;
        lights.ambient[0] += object.color.r * object.intensity;
        lights.ambient[1] += object.color.g * object.intensity;
        lights.ambient[2] += object.color.b * object.intensity;
      } else if (object instanceof THREE.PointLight) {
        any = true;
        const p = this.#v.setFromMatrixPosition(object.matrixWorld).applyMatrix4(camera.matrixWorldInverse);
        const k = object.intensity * LAMP_REFERENCE * LAMP_REFERENCE;
        lights.points.push({
          x: p.x,
          y: p.y,
          z: p.z,
          r: object.color.r * k,
          g: object.color.g * k,
          b: object.color.b * k,
        });
      }
    });
    // A scene without lights is seen in plain white light.
    if (!any) lights.ambient = [1, 1, 1];
    return lights;
  }

  #draw(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, f: number, exposure: number): void {
    const { width, height } = this;
    camera.updateMatrixWorld();
    camera.matrixWorldInverse.copy(camera.matrixWorld).invert();
    const lens: Lens = { fx: f, fy: f, cx: width / 2, cy: height / 2, near: camera.near };
    // World up (z) in camera coordinates: the clean picture's second light shines from there.
    this.#up.set(0, 0, 1).transformDirection(camera.matrixWorldInverse);
    const queue = this.#queue;
    queue.length = 0;
    const m = camera.matrixWorldInverse.elements;
    const scissor = this.#scissor;
    const whole =
      scissor.x0 === 0 && scissor.y0 === 0 && scissor.x1 === width - 1 && scissor.y1 === height - 1;
    const physical = this.#lights !== undefined;
    scene.traverseVisible((object) => {
      if (!(object instanceof THREE.Mesh)) return;
      if (physical) {
        // Where each mesh could be is kept for the next picture's changed rectangle; a part one skips the others.
        const rect = whole ? this.#meshRect(object, camera, f) : this.#rects.get(object.id);
        if (!rect) this.#rects.delete(object.id);
        else if (whole) this.#rects.set(object.id, rect);
        if (
          rect &&
          (rect.x1 < scissor.x0 || rect.x0 > scissor.x1 || rect.y1 < scissor.y0 || rect.y0 > scissor.y1)
        )
          return;
      }
      const w = object.matrixWorld.elements;
      // Depth of the mesh's origin: good enough an order for the room's pieces and the robot's links.
      const distance = -(m[2]! * w[12]! + m[6]! * w[13]! + m[10]! * w[14]! + m[14]!);
      queue.push({ mesh: object, distance });
    });
    queue.sort((a, b) => a.distance - b.distance);
    for (const { mesh } of queue) this.#drawMesh(mesh, camera, lens, exposure);
    queue.length = 0;
  }

  #clear(): void {
    const { width, height } = this;
    const c = this.#colour;
    for (let y = 0; y < height; y++) {
      const t = y / Math.max(1, height - 1);
      const r = Math.round(WALL_TOP[0] + (WALL_BOTTOM[0] - WALL_TOP[0]) * t);
      const g = Math.round(WALL_TOP[1] + (WALL_BOTTOM[1] - WALL_TOP[1]) * t);
      const b = Math.round(WALL_TOP[2] + (WALL_BOTTOM[2] - WALL_TOP[2]) * t);
      for (let i = y * width * 3, end = i + width * 3; i < end; i += 3) {
        c[i] = r;
        c[i + 1] = g;
        c[i + 2] = b;
      }
    }
    this.#invDepth.fill(0);
  }

  #drawMesh(mesh: THREE.Mesh, camera: THREE.Camera, lens: Lens, exposure: number): void {
    const geometry = mesh.geometry as THREE.BufferGeometry;
    const material = (Array.isArray(mesh.material) ? mesh.material[0] : mesh.material) as
      (THREE.Material & { color?: THREE.Color; map?: THREE.Texture | null }) | undefined;
    if (!material || !material.visible) return;
    const position = geometry.getAttribute('position');
    if (!position) return;
    const uv = geometry.getAttribute('uv');
    const index = geometry.getIndex();
    const linear = this.#lights !== undefined;
    const texture = textureView(material.map, linear);
    const base: [number, number, number] = linear
      ? material.color && !texture
        ? [material.color.r * LINEAR_WHITE, material.color.g * LINEAR_WHITE, material.color.b * LINEAR_WHITE]
        : [1, 1, 1]
      : material.color
        ? srgbBytes(material.color)
        : [255, 255, 255];
    // Unlit: three's basic material glows by itself (a lamp panel, a window); `userData.glow` says how much.
    const glow =
      material instanceof THREE.MeshBasicMaterial ? ((mesh.userData.glow as number | undefined) ?? 1) : 0;
    const doubleSided = material.side === THREE.DoubleSide;
    const backOnly = material.side === THREE.BackSide;

    this.#modelView.multiplyMatrices(camera.matrixWorldInverse, mesh.matrixWorld);
    const e = this.#modelView.elements;
    if (outOfView(geometry, e, mesh.matrixWorld.getMaxScaleOnAxis(), lens, this.width, this.height)) return;
    const n = position.count;
    if (this.#positions.length < n * 3) this.#positions = new Float64Array(n * 3);
    const p = this.#positions;
    for (let i = 0; i < n; i++) {
      const x = position.getX(i);
      const y = position.getY(i);
      const z = position.getZ(i);
      p[i * 3] = e[0]! * x + e[4]! * y + e[8]! * z + e[12]!;
      p[i * 3 + 1] = e[1]! * x + e[5]! * y + e[9]! * z + e[13]!;
      p[i * 3 + 2] = e[2]! * x + e[6]! * y + e[10]! * z + e[14]!;
    }
    const triangles = index ? index.count / 3 : n / 3;
    const scissor = this.#scissor;
    const part =
      scissor.x0 > 0 || scissor.y0 > 0 || scissor.x1 < this.width - 1 || scissor.y1 < this.height - 1;
    const near = lens.near;
    const up = this.#up;
    const lights = this.#lights;
    for (let t = 0; t < triangles; t++) {
      const i0 = index ? index.getX(t * 3) : t * 3;
      const i1 = index ? index.getX(t * 3 + 1) : t * 3 + 1;
      const i2 = index ? index.getX(t * 3 + 2) : t * 3 + 2;
      const ax = p[i0 * 3]!,
        ay = p[i0 * 3 + 1]!,
        az = p[i0 * 3 + 2]!;
      const bx = p[i1 * 3]!,
        by = p[i1 * 3 + 1]!,
        bz = p[i1 * 3 + 2]!;
      const cx = p[i2 * 3]!,
        cy = p[i2 * 3 + 1]!,
        cz = p[i2 * 3 + 2]!;
      // Face normal in camera space (counter-clockwise triangles face out, as three.js builds them).
      let nx = (by - ay) * (cz - az) - (bz - az) * (cy - ay);
      let ny = (bz - az) * (cx - ax) - (bx - ax) * (cz - az);
      let nz = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
      const len = Math.hypot(nx, ny, nz);
      if (!(len > 0)) continue;
      nx /= len;
      ny /= len;
      nz /= len;
      // The camera sits at the origin: the face is seen from the front when the normal points back at it.
      let facing = nx * ax + ny * ay + nz * az < 0;
      if (backOnly) facing = !facing;
      if (!facing) {
        if (!doubleSided) continue;
        nx = -nx;
        ny = -ny;
        nz = -nz;
      }
      // A part of the picture (see renderLinear): a triangle in front of the near plane whose pixel box (as
      // #fillTriangle computes it) misses the part is dropped before its light is computed.
      if (part && az <= -near && bz <= -near && cz <= -near) {
        const x0 = lens.cx + (lens.fx * ax) / -az,
          x1 = lens.cx + (lens.fx * bx) / -bz,
          x2 = lens.cx + (lens.fx * cx) / -cz;
        const y0 = lens.cy - (lens.fy * ay) / -az,
          y1 = lens.cy - (lens.fy * by) / -bz,
          y2 = lens.cy - (lens.fy * cy) / -cz;
        if (
          Math.floor(Math.min(x0, x1, x2)) > scissor.x1 ||
          Math.ceil(Math.max(x0, x1, x2)) < scissor.x0 ||
          Math.floor(Math.min(y0, y1, y2)) > scissor.y1 ||
          Math.ceil(Math.max(y0, y1, y2)) < scissor.y0
        )
          continue;
      }
      // The corners, three objects reused by every triangle (drawn before the next; clipNear makes new cut ones).
      const verts = this.#corners;
      const [va, vb, vc] = verts as [ClipVertex, ClipVertex, ClipVertex];
      va.x = ax;
      va.y = ay;
      va.d = -az;
      va.u = uv ? uv.getX(i0) : 0;
      va.v = uv ? uv.getY(i0) : 0;
      vb.x = bx;
      vb.y = by;
      vb.d = -bz;
      vb.u = uv ? uv.getX(i1) : 0;
      vb.v = uv ? uv.getY(i1) : 0;
      vc.x = cx;
      vc.y = cy;
      vc.d = -cz;
      vc.u = uv ? uv.getX(i2) : 0;
      vc.v = uv ? uv.getY(i2) : 0;
      if (!lights) {
        const light = glow
          ? exposure
          : Math.max(
              0,
              exposure *
                (AMBIENT +
                  HEADLIGHT * Math.max(0, nz) +
                  TOP_LIGHT * Math.max(0, nx * up.x + ny * up.y + nz * up.z)),
            );
        for (const v of verts) v.lr = v.lg = v.lb = light;
      } else if (glow) {
        for (const v of verts) v.lr = v.lg = v.lb = glow;
      } else {
        for (const v of verts) {
          let r = lights.ambient[0],
            g = lights.ambient[1],
            b = lights.ambient[2];
          const vz = -v.d;
          for (const l of lights.points) {
            const dx = l.x - v.x,
              dy = l.y - v.y,
              dz = l.z - vz;
            const d2 = dx * dx + dy * dy + dz * dz;
            const cos = (nx * dx + ny * dy + nz * dz) / Math.sqrt(d2);
            if (cos <= 0) continue;
            const k = cos / (d2 + LAMP_SIZE2);
            r += l.r * k;
            g += l.g * k;
            b += l.b * k;
          }
          v.lr = r;
          v.lg = g;
          v.lb = b;
        }
      }
      const poly = clipNear(verts, lens.near);
      for (let k = 1; k + 1 < poly.length; k++)
        this.#fillTriangle(poly[0]!, poly[k]!, poly[k + 1]!, lens, base, texture);
    }
  }

  #fillTriangle(
    a: ClipVertex,
    b: ClipVertex,
    c: ClipVertex,
    lens: Lens,
    base: readonly [number, number, number],
    texture: TextureView | undefined,
  ): void {
    const { width } = this;
    const x0 = lens.cx + (lens.fx * a.x) / a.d,
      y0 = lens.cy - (lens.fy * a.y) / a.d;
    const x1 = lens.cx + (lens.fx * b.x) / b.d,
      y1 = lens.cy - (lens.fy * b.y) / b.d;
    const x2 = lens.cx + (lens.fx * c.x) / c.d,
      y2 = lens.cy - (lens.fy * c.y) / c.d;
    const area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
    if (Math.abs(area) < 1e-12) return;
    const scissor = this.#scissor;
    const minX = Math.max(scissor.x0, Math.floor(Math.min(x0, x1, x2)));
    const maxX = Math.min(scissor.x1, Math.ceil(Math.max(x0, x1, x2)));
    const minY = Math.max(scissor.y0, Math.floor(Math.min(y0, y1, y2)));
    const maxY = Math.min(scissor.y1, Math.ceil(Math.max(y0, y1, y2)));
    if (minX > maxX || minY > maxY) return;
    const inv = 1 / area;
    // Barycentric weights as affine functions of the pixel centre: w = A x + B y + C.
    const a0 = (y1 - y2) * inv,
      b0 = (x2 - x1) * inv,
      c0 = (x1 * y2 - x2 * y1) * inv;
    const a1 = (y2 - y0) * inv,
      b1 = (x0 - x2) * inv,
      c1 = (x2 * y0 - x0 * y2) * inv;
    const a2 = (y0 - y1) * inv,
      b2 = (x1 - x0) * inv,
      c2 = (x0 * y1 - x1 * y0) * inv;
    const za = 1 / a.d,
      zb = 1 / b.d,
      zc = 1 / c.d;
    const ua = a.u * za,
      ub = b.u * zb,
      uc = c.u * zc;
    const va = a.v * za,
      vb = b.v * zb,
      vc = c.v * zc;
    const colour = this.#colour;
    const depth = this.#invDepth;
    const max = this.#max;
    // The light over the triangle, per channel, as affine functions of the pixel centre (Gouraud).
    const lrA = a0 * a.lr + a1 * b.lr + a2 * c.lr,
      lrB = b0 * a.lr + b1 * b.lr + b2 * c.lr,
      lrC = c0 * a.lr + c1 * b.lr + c2 * c.lr;
    const lgA = a0 * a.lg + a1 * b.lg + a2 * c.lg,
      lgB = b0 * a.lg + b1 * b.lg + b2 * c.lg,
      lgC = c0 * a.lg + c1 * b.lg + c2 * c.lg;
    const lbA = a0 * a.lb + a1 * b.lb + a2 * c.lb,
      lbB = b0 * a.lb + b1 * b.lb + b2 * c.lb,
      lbC = c0 * a.lb + c1 * b.lb + c2 * c.lb;
    const flat =
      a.lr === b.lr && a.lr === c.lr && a.lg === b.lg && a.lg === c.lg && a.lb === b.lb && a.lb === c.lb;
    const sr = Math.min(max, base[0] * a.lr),
      sg = Math.min(max, base[1] * a.lg),
      sb = Math.min(max, base[2] * a.lb);
    const tex = texture ? texture.data : EMPTY_TEXELS,
      tw = texture ? texture.width : 1,
      th = texture ? texture.height : 1,
      wrap = texture ? texture.wrap : false;
    const br = base[0],
      bg = base[1],
      bb = base[2];
    const flatR = a.lr,
      flatG = a.lg,
      flatB = a.lb;
    // 1/depth and u/depth, v/depth as affine functions of the pixel centre (x coefficient, y, constant).
    const zx = a0 * za + a1 * zb + a2 * zc,
      zA = b0 * za + b1 * zb + b2 * zc,
      zB = c0 * za + c1 * zb + c2 * zc;
    const ux = a0 * ua + a1 * ub + a2 * uc,
      uA = b0 * ua + b1 * ub + b2 * uc,
      uB = c0 * ua + c1 * ub + c2 * uc;
    const vx = a0 * va + a1 * vb + a2 * vc,
      vA = b0 * va + b1 * vb + b2 * vc,
      vB = c0 * va + c1 * vb + c2 * vc;
    const eps = -1e-7;
    for (let py = minY; py <= maxY; py++) {
      const fy = py + 0.5;
      // The run of pixels inside the three edges on this row, widened by a pixel: the exact test below decides.
      let lo = minX,
        hi = maxX;
      for (let e = 0; e < 3; e++) {
        const A = e === 0 ? a0 : e === 1 ? a1 : a2;
        const W = e === 0 ? b0 * fy + c0 : e === 1 ? b1 * fy + c1 : b2 * fy + c2;
        if (A > 0) lo = Math.max(lo, Math.ceil((eps - W) / A - 0.5) - 1);
        else if (A < 0) hi = Math.min(hi, Math.floor((eps - W) / A - 0.5) + 1);
        else if (W < eps) lo = maxX + 1;
      }
      if (lo > hi) continue;
      const W0 = b0 * fy + c0,
        W1 = b1 * fy + c1,
        W2 = b2 * fy + c2;
      // Each weight a x + W, rounded, never decreases (a > 0) or increases (a < 0) along the row: the pixels that
      // pass the three tests form one run, found from both ends; inside it no test is needed.
      for (; lo <= hi; lo++) {
        const fx = lo + 0.5;
        if (a0 * fx + W0 >= eps && a1 * fx + W1 >= eps && a2 * fx + W2 >= eps) break;
      }
      for (; hi >= lo; hi--) {
        const fx = hi + 0.5;
        if (a0 * fx + W0 >= eps && a1 * fx + W1 >= eps && a2 * fx + W2 >= eps) break;
      }
      // 1/depth, the texture coordinates over depth and the light along the row: affine in the pixel's x.
      const Z = zA * fy + zB,
        U = uA * fy + uB,
        V = vA * fy + vB;
      const LR = lrB * fy + lrC,
        LG = lgB * fy + lgC,
        LB = lbB * fy + lbC;
      if (!texture) {
        if (flat) flatRow(colour, depth, py * width + lo, lo, hi, zx, Z, sr, sg, sb);
        else
          shadedRow(
            colour,
            depth,
            py * width + lo,
            lo,
            hi,
            zx,
            Z,
            br,
            lrA,
            LR,
            bg,
            lgA,
            LG,
            bb,
            lbA,
            LB,
            max,
          );
        continue;
      }
      for (let px = lo, i = py * width + lo; px <= hi; px++, i++) {
        const fx = px + 0.5;
        const z = zx * fx + Z;
        if (z <= depth[i]!) continue;
        depth[i] = z;
        const o = i * 3;
        // Bilinear sample of the RGBA texture (row 0 at v = 0, as three.js lays data textures out), times the light.
        const iz = 1 / z;
        const u = (ux * fx + U) * iz;
        const v = (vx * fx + V) * iz;
        let sx: number, sy: number, x0: number, y0: number, x1: number, y1: number;
        if (wrap) {
          sx = (u - Math.floor(u)) * tw - 0.5;
          sy = (v - Math.floor(v)) * th - 0.5;
          if (sx < 0) sx += tw;
          if (sy < 0) sy += th;
          x0 = sx | 0;
          y0 = sy | 0;
          x1 = x0 + 1 === tw ? 0 : x0 + 1;
          y1 = y0 + 1 === th ? 0 : y0 + 1;
        } else {
          sx = u * tw - 0.5;
          sy = v * th - 0.5;
          sx = sx < 0 ? 0 : sx > tw - 1 ? tw - 1 : sx;
          sy = sy < 0 ? 0 : sy > th - 1 ? th - 1 : sy;
          x0 = sx | 0;
          y0 = sy | 0;
          x1 = x0 + 1 < tw ? x0 + 1 : x0;
          y1 = y0 + 1 < th ? y0 + 1 : y0;
        }
        const dx = sx - x0,
          dy = sy - y0;
        const w11 = dx * dy,
          w10 = dx - w11,
          w01 = dy - w11,
          w00 = 1 - dx - w01;
        const p00 = (y0 * tw + x0) * 4,
          p10 = (y0 * tw + x1) * 4;
        const p01 = (y1 * tw + x0) * 4,
          p11 = (y1 * tw + x1) * 4;
        const kr = flat ? flatR : lrA * fx + LR,
          kg = flat ? flatG : lgA * fx + LG,
          kb = flat ? flatB : lbA * fx + LB;
        const r = (tex[p00]! * w00 + tex[p10]! * w10 + tex[p01]! * w01 + tex[p11]! * w11) * kr;
        const g =
          (tex[p00 + 1]! * w00 + tex[p10 + 1]! * w10 + tex[p01 + 1]! * w01 + tex[p11 + 1]! * w11) * kg;
        const b =
          (tex[p00 + 2]! * w00 + tex[p10 + 2]! * w10 + tex[p01 + 2]! * w01 + tex[p11 + 2]! * w11) * kb;
        colour[o] = r > max ? max : r;
        colour[o + 1] = g > max ? max : g;
        colour[o + 2] = b > max ? max : b;
      }
    }
  }
}

/**
 * Whether the mesh's bounding sphere lies wholly behind the near plane or outside one side of the picture (then
 * none of its triangles can cover a pixel). `e` is its model-view matrix, `scale` the largest of its axes' scales.
 */
function outOfView(
  geometry: THREE.BufferGeometry,
  e: readonly number[],
  scale: number,
  lens: Lens,
  width: number,
  height: number,
): boolean {
  if (!geometry.boundingSphere) geometry.computeBoundingSphere();
  const sphere = geometry.boundingSphere;
  if (!sphere || !Number.isFinite(sphere.radius)) return false;
  const { x, y, z } = sphere.center;
  const cx = e[0]! * x + e[4]! * y + e[8]! * z + e[12]!;
  const cy = e[1]! * x + e[5]! * y + e[9]! * z + e[13]!;
  const d = -(e[2]! * x + e[6]! * y + e[10]! * z + e[14]!);
  const r = sphere.radius * scale;
  if (d + r < lens.near) return true;
  // The four planes through the camera and the picture's edges, outward normals (fx, 0, -width / 2) etc. unnormalised.
  const sideX = Math.hypot(lens.fx, width / 2),
    sideY = Math.hypot(lens.fy, height / 2);
  return (
    lens.fx * cx - (width / 2) * d > r * sideX ||
    -lens.fx * cx - (width / 2) * d > r * sideX ||
    lens.fy * cy - (height / 2) * d > r * sideY ||
    -lens.fy * cy - (height / 2) * d > r * sideY
  );
}

/** An untextured face of one light: the pixels lo..hi of a row (index `i` at lo) that pass the depth test. */
function flatRow(
  colour: Uint16Array,
  depth: Float32Array,
  i: number,
  lo: number,
  hi: number,
  zx: number,
  Z: number,
  r: number,
  g: number,
  b: number,
): void {
  for (let px = lo; px <= hi; px++, i++) {
    const z = zx * (px + 0.5) + Z;
    if (z <= depth[i]!) continue;
    depth[i] = z;
    const o = i * 3;
    colour[o] = r;
    colour[o + 1] = g;
    colour[o + 2] = b;
  }
}

/** An untextured face with its light interpolated: each channel `a x + c` at the pixel centre x, clamped. */
function shadedRow(
  colour: Uint16Array,
  depth: Float32Array,
  i: number,
  lo: number,
  hi: number,
  zx: number,
  Z: number,
  br: number,
  ra: number,
  rc: number,
  bg: number,
  ga: number,
  gc: number,
  bb: number,
  ba: number,
  bc: number,
  max: number,
): void {
  for (let px = lo; px <= hi; px++, i++) {
    const fx = px + 0.5;
    const z = zx * fx + Z;
    if (z <= depth[i]!) continue;
    depth[i] = z;
    const o = i * 3;
    const r = br * (ra * fx + rc),
      g = bg * (ga * fx + gc),
      b = bb * (ba * fx + bc);
    colour[o] = r > max ? max : r < 0 ? 0 : r;
    colour[o + 1] = g > max ? max : g < 0 ? 0 : g;
    colour[o + 2] = b > max ? max : b < 0 ? 0 : b;
  }
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++)
    if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return true;
}

function srgbBytes(c: THREE.Color): [number, number, number] {
  const hex = c.getHex(THREE.SRGBColorSpace);
  return [(hex >> 16) & 255, (hex >> 8) & 255, hex & 255];
}

/** The texture's RGBA texels: sRGB bytes for the clean picture, linear light (LINEAR_WHITE = 1) for the physical one. */
function textureView(map: THREE.Texture | null | undefined, linear: boolean): TextureView | undefined {
  const image = map?.image as
    { data?: Uint8Array | Uint8ClampedArray; width?: number; height?: number } | undefined;
  if (!map || !image?.data || !image.width || !image.height) return undefined;
  const wrap = map.wrapS === THREE.RepeatWrapping;
  const cache = linear ? linearTextures : byteTextures;
  let data = cache.get(image.data);
  if (!data) {
    const src = image.data;
    data = new Float32Array(src.length);
    for (let i = 0; i < src.length; i++) data[i] = linear ? Math.round(SRGB_TO_LINEAR[src[i]!]!) : src[i]!;
    cache.set(image.data, data);
  }
  return { data, width: image.width, height: image.height, wrap };
}

/** Cuts a polygon to the part in front of the near plane (d >= near), interpolating its attributes. */
function clipNear(poly: ClipVertex[], near: number): ClipVertex[] {
  if (poly.every((v) => v.d >= near)) return poly;
  const out: ClipVertex[] = [];
  for (let i = 0; i < poly.length; i++) {
    const cur = poly[i]!;
    const next = poly[(i + 1) % poly.length]!;
    const curIn = cur.d >= near;
    const nextIn = next.d >= near;
    if (curIn) out.push(cur);
    if (curIn !== nextIn) {
      const t = (near - cur.d) / (next.d - cur.d);
      out.push({
        x: cur.x + (next.x - cur.x) * t,
        y: cur.y + (next.y - cur.y) * t,
        d: near,
        u: cur.u + (next.u - cur.u) * t,
        v: cur.v + (next.v - cur.v) * t,
        lr: cur.lr + (next.lr - cur.lr) * t,
        lg: cur.lg + (next.lg - cur.lg) * t,
        lb: cur.lb + (next.lb - cur.lb) * t,
      });
    }
  }
  return out;
}

/** Separable box blur of radius r on an RGB image, in place. */
function boxBlur(rgb: Uint8Array, width: number, height: number, r: number): void {
  const tmp = new Float32Array(rgb.length);
  const size = 2 * r + 1;
  for (let y = 0; y < height; y++) {
    for (let k = 0; k < 3; k++) {
      let sum = 0;
      const row = y * width;
      for (let x = -r; x <= r; x++) sum += rgb[(row + clamp(x, 0, width - 1)) * 3 + k]!;
      for (let x = 0; x < width; x++) {
        tmp[(row + x) * 3 + k] = sum / size;
        sum +=
          rgb[(row + clamp(x + r + 1, 0, width - 1)) * 3 + k]! -
          rgb[(row + clamp(x - r, 0, width - 1)) * 3 + k]!;
      }
    }
  }
  for (let x = 0; x < width; x++) {
    for (let k = 0; k < 3; k++) {
      let sum = 0;
      for (let y = -r; y <= r; y++) sum += tmp[(clamp(y, 0, height - 1) * width + x) * 3 + k]!;
      for (let y = 0; y < height; y++) {
        rgb[(y * width + x) * 3 + k] = Math.round(sum / size);
        sum +=
          tmp[(clamp(y + r + 1, 0, height - 1) * width + x) * 3 + k]! -
          tmp[(clamp(y - r, 0, height - 1) * width + x) * 3 + k]!;
      }
    }
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** Adds zero-mean noise of standard deviation `sigma` (sum of three uniforms), seeded. */
function addNoise(rgb: Uint8Array, sigma: number, seed: number): void {
  let state = seed >>> 0 || 1;
  // xorshift32: fast and good enough for image noise.
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
  const scale = sigma * 2; // three uniforms in [-0.5, 0.5) sum to a variance of 1/4
  for (let i = 0; i < rgb.length; i++) {
    const v = rgb[i]! + (next() + next() + next() - 1.5) * scale;
    rgb[i] = v < 0 ? 0 : v > 255 ? 255 : v;
  }
}

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
import { addNoise, boxBlur, type ImageEffects } from './clean-effects.ts';
import { LINEAR_MAX, LINEAR_WHITE, type LinearImage, type Rect } from './colour.ts';
import { PictureChanges } from './picture-changes.ts';
import { collectLights, lightPoint, type Lights } from './scene-lights.ts';
import { TexturedFill } from './textured-fill.ts';
import {
  type ClipVertex,
  clipNear,
  type FillTarget,
  fillTriangle,
  type Lens,
  textureView,
} from './triangle-fill.ts';

const AMBIENT = 0.55;
const HEADLIGHT = 0.4;
const TOP_LIGHT = 0.25;
/** Background: a pale wall, a little darker towards the bottom. */
const WALL_TOP = [214, 220, 226] as const;
const WALL_BOTTOM = [170, 176, 182] as const;

/** The fill's target, its brightness limit and scissor set per pass. */
interface PassTarget extends FillTarget {
  max: number;
  scissor: Rect;
}

export class Rasterizer {
  readonly width: number;
  readonly height: number;
  /**
   * The picture being drawn (sRGB bytes for the clean one, linear light for the physical one, in one array type so the
   * fill stays monomorphic), its depth, the current pass's brightest value and the pixels it may write.
   */
  readonly #target: PassTarget;
  readonly #colour: Uint16Array;
  readonly #invDepth: Float32Array;
  readonly #modelView = new THREE.Matrix4();
  readonly #up = new THREE.Vector3();
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
  /** Meshes of the current pass with their distance, drawn nearest first so hidden pixels fail the depth test early. */
  readonly #queue: { mesh: THREE.Mesh; distance: number }[] = [];
  /** The scene's lights while a physical picture is drawn; undefined for the clean picture. */
  #lights: Lights | undefined;
  readonly #changes: PictureChanges;
  /** The physical picture's version: one more each time its pixels change. */
  #linearVersion = 0;

  /** `webAssembly: false` fills textured faces in JavaScript too (the same bytes; tests compare the two). */
  constructor(width: number, height: number, options: { webAssembly?: boolean } = {}) {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
      throw new RangeError(`bad image size ${width}x${height}`);
    this.width = width;
    this.height = height;
    const wasm = options.webAssembly === false ? undefined : new TexturedFill(width, height);
    this.#colour = wasm ? wasm.colour : new Uint16Array(width * height * 3);
    this.#invDepth = wasm ? wasm.depth : new Float32Array(width * height);
    this.#target = {
      wasm,
      colour: this.#colour,
      depth: this.#invDepth,
      width,
      max: 255,
      scissor: this.#whole(),
    };
    this.#changes = new PictureChanges(width, height);
  }

  /** Texels copied into the textured fill's WebAssembly memory (0 when it fills in JavaScript). */
  get textureBytesInWebAssembly(): number {
    return this.#target.wasm?.textureBytes ?? 0;
  }

  /** Draws `scene` as `camera` sees it (three.js convention: looks along -z), clean. Returns a new frame. */
  render(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, effects: ImageEffects = {}): Frame {
    const { width, height } = this;
    this.#target.max = 255;
    this.#lights = undefined;
    // The clean picture draws over the buffers the physical one keeps.
    this.#changes.forget();
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
    const change = this.#changes.next(scene, camera, f);
    let changed: LinearImage['changed'];
    if (change !== 'same') {
      const since = this.#linearVersion;
      this.#linearVersion++;
      this.#target.max = LINEAR_MAX;
      if (change !== 'all') {
        this.#clearRect(change);
        this.#target.scissor = change;
        changed = { since, rect: change };
      } else {
        this.#colour.fill(0);
        this.#invDepth.fill(0);
        this.#lights = collectLights(scene, camera);
      }
      try {
        this.#draw(scene, camera, f, 1);
      } finally {
        this.#target.scissor = this.#whole();
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

  #whole(): Rect {
    return { x0: 0, y0: 0, x1: this.width - 1, y1: this.height - 1 };
  }

  #clearRect(rect: Rect): void {
    const { width } = this;
    for (let y = rect.y0; y <= rect.y1; y++) {
      this.#colour.fill(0, (y * width + rect.x0) * 3, (y * width + rect.x1 + 1) * 3);
      this.#invDepth.fill(0, y * width + rect.x0, y * width + rect.x1 + 1);
    }
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
    const scissor = this.#target.scissor;
    const whole =
      scissor.x0 === 0 && scissor.y0 === 0 && scissor.x1 === width - 1 && scissor.y1 === height - 1;
    const physical = this.#lights !== undefined;
    scene.traverseVisible((object) => {
      if (!(object instanceof THREE.Mesh)) return;
      if (physical) {
        // Where each mesh could be is kept for the next picture's changed rectangle; a part one skips the others.
        const rect = this.#changes.place(object, camera, f, whole);
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
    const scissor = this.#target.scissor;
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
        for (const v of verts) lightPoint(v, nx, ny, nz, lights);
      }
      const poly = clipNear(verts, lens.near);
      for (let k = 1; k + 1 < poly.length; k++)
        fillTriangle(this.#target, poly[0]!, poly[k]!, poly[k + 1]!, lens, base, texture);
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

function srgbBytes(c: THREE.Color): [number, number, number] {
  const hex = c.getHex(THREE.SRGBColorSpace);
  return [(hex >> 16) & 255, (hex >> 8) & 255, hex & 255];
}

/**
 * A small z-buffered software rasteriser for the twin's three.js scene: what the robot's camera sees, in Node,
 * without a GPU or an X server. Flat-shaded Lambert triangles (a headlight and a light from above), textures
 * sampled bilinearly with perspective correction, near-plane clipping; then optional exposure, blur and seeded
 * noise so tests can make frames harder. Browser-safe (no node: imports).
 */
import * as THREE from 'three';
import type { Frame } from '../core/backend.ts';

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

const AMBIENT = 0.55;
const HEADLIGHT = 0.4;
const TOP_LIGHT = 0.25;
/** Background: a pale wall, a little darker towards the bottom. */
const WALL_TOP = [214, 220, 226] as const;
const WALL_BOTTOM = [170, 176, 182] as const;

interface TextureView {
  readonly data: Uint8Array | Uint8ClampedArray;
  readonly width: number;
  readonly height: number;
}

/** Camera-space vertex: x right, y up, d = depth in front of the camera (metres), u v texture coordinates. */
interface ClipVertex {
  x: number;
  y: number;
  d: number;
  u: number;
  v: number;
}

export class Rasterizer {
  readonly width: number;
  readonly height: number;
  readonly #colour: Uint8Array;
  /** 1 / depth of the nearest surface drawn so far (0 = nothing). */
  readonly #invDepth: Float32Array;
  readonly #modelView = new THREE.Matrix4();
  readonly #normalMatrix = new THREE.Matrix3();
  readonly #up = new THREE.Vector3();
  #positions = new Float64Array(0);

  constructor(width: number, height: number) {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
      throw new RangeError(`bad image size ${width}x${height}`);
    this.width = width;
    this.height = height;
    this.#colour = new Uint8Array(width * height * 3);
    this.#invDepth = new Float32Array(width * height);
  }

  /** Draws `scene` as `camera` sees it (three.js convention: looks along -z). Returns a new frame. */
  render(scene: THREE.Object3D, camera: THREE.PerspectiveCamera, effects: ImageEffects = {}): Frame {
    const { width, height } = this;
    camera.updateMatrixWorld();
    camera.matrixWorldInverse.copy(camera.matrixWorld).invert();
    this.#clear();
    const fy = height / 2 / Math.tan((camera.fov * Math.PI) / 360);
    const lens = { fx: fy, fy, cx: width / 2, cy: height / 2, near: camera.near };
    // World up (z) in camera coordinates: the second light shines from there.
    this.#up.set(0, 0, 1).transformDirection(camera.matrixWorldInverse);
    const exposure = effects.exposure ?? 1;
    scene.traverseVisible((object) => {
      if (!(object instanceof THREE.Mesh)) return;
      this.#drawMesh(object, camera, lens, exposure);
    });
    const rgb = new Uint8Array(this.#colour);
    if (effects.blur && effects.blur > 0) boxBlur(rgb, width, height, Math.round(effects.blur));
    if (effects.noise && effects.noise > 0) addNoise(rgb, effects.noise, effects.seed ?? 1);
    return { width, height, rgb };
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

  #drawMesh(
    mesh: THREE.Mesh,
    camera: THREE.Camera,
    lens: { fx: number; fy: number; cx: number; cy: number; near: number },
    exposure: number,
  ): void {
    const geometry = mesh.geometry as THREE.BufferGeometry;
    const material = (Array.isArray(mesh.material) ? mesh.material[0] : mesh.material) as
      (THREE.Material & { color?: THREE.Color; map?: THREE.Texture | null }) | undefined;
    if (!material || !material.visible) return;
    const position = geometry.getAttribute('position');
    if (!position) return;
    const uv = geometry.getAttribute('uv');
    const index = geometry.getIndex();
    const texture = textureView(material.map);
    const base = material.color ? [...srgbBytes(material.color)] : [255, 255, 255];
    const doubleSided = material.side === THREE.DoubleSide;
    const backOnly = material.side === THREE.BackSide;

    this.#modelView.multiplyMatrices(camera.matrixWorldInverse, mesh.matrixWorld);
    const e = this.#modelView.elements;
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
    this.#normalMatrix.getNormalMatrix(this.#modelView);
    const triangles = index ? index.count / 3 : n / 3;
    const up = this.#up;
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
      const light = Math.max(
        0,
        exposure *
          (AMBIENT +
            HEADLIGHT * Math.max(0, nz) +
            TOP_LIGHT * Math.max(0, nx * up.x + ny * up.y + nz * up.z)),
      );
      const shade = [base[0]! * light, base[1]! * light, base[2]! * light] as const;
      const verts: ClipVertex[] = [
        { x: ax, y: ay, d: -az, u: uv ? uv.getX(i0) : 0, v: uv ? uv.getY(i0) : 0 },
        { x: bx, y: by, d: -bz, u: uv ? uv.getX(i1) : 0, v: uv ? uv.getY(i1) : 0 },
        { x: cx, y: cy, d: -cz, u: uv ? uv.getX(i2) : 0, v: uv ? uv.getY(i2) : 0 },
      ];
      const poly = clipNear(verts, lens.near);
      for (let k = 1; k + 1 < poly.length; k++)
        this.#fillTriangle(poly[0]!, poly[k]!, poly[k + 1]!, lens, shade, light, texture);
    }
  }

  #fillTriangle(
    a: ClipVertex,
    b: ClipVertex,
    c: ClipVertex,
    lens: { fx: number; fy: number; cx: number; cy: number },
    shade: readonly [number, number, number],
    light: number,
    texture: TextureView | undefined,
  ): void {
    const { width, height } = this;
    const x0 = lens.cx + (lens.fx * a.x) / a.d,
      y0 = lens.cy - (lens.fy * a.y) / a.d;
    const x1 = lens.cx + (lens.fx * b.x) / b.d,
      y1 = lens.cy - (lens.fy * b.y) / b.d;
    const x2 = lens.cx + (lens.fx * c.x) / c.d,
      y2 = lens.cy - (lens.fy * c.y) / c.d;
    const area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
    if (Math.abs(area) < 1e-12) return;
    const minX = Math.max(0, Math.floor(Math.min(x0, x1, x2)));
    const maxX = Math.min(width - 1, Math.ceil(Math.max(x0, x1, x2)));
    const minY = Math.max(0, Math.floor(Math.min(y0, y1, y2)));
    const maxY = Math.min(height - 1, Math.ceil(Math.max(y0, y1, y2)));
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
    const sr = Math.min(255, shade[0]),
      sg = Math.min(255, shade[1]),
      sb = Math.min(255, shade[2]);
    const eps = -1e-7;
    for (let py = minY; py <= maxY; py++) {
      const fy = py + 0.5;
      let w0 = a0 * (minX + 0.5) + b0 * fy + c0;
      let w1 = a1 * (minX + 0.5) + b1 * fy + c1;
      let w2 = a2 * (minX + 0.5) + b2 * fy + c2;
      let i = py * width + minX;
      for (let px = minX; px <= maxX; px++, i++, w0 += a0, w1 += a1, w2 += a2) {
        if (w0 < eps || w1 < eps || w2 < eps) continue;
        const z = w0 * za + w1 * zb + w2 * zc;
        if (z <= depth[i]!) continue;
        depth[i] = z;
        const o = i * 3;
        if (!texture) {
          colour[o] = sr;
          colour[o + 1] = sg;
          colour[o + 2] = sb;
          continue;
        }
        const u = (w0 * ua + w1 * ub + w2 * uc) / z;
        const v = (w0 * va + w1 * vb + w2 * vc) / z;
        sampleBilinear(texture, u, v, light, colour, o);
      }
    }
  }
}

function srgbBytes(c: THREE.Color): [number, number, number] {
  const hex = c.getHex(THREE.SRGBColorSpace);
  return [(hex >> 16) & 255, (hex >> 8) & 255, hex & 255];
}

function textureView(map: THREE.Texture | null | undefined): TextureView | undefined {
  const image = map?.image as
    { data?: Uint8Array | Uint8ClampedArray; width?: number; height?: number } | undefined;
  if (!image?.data || !image.width || !image.height) return undefined;
  return { data: image.data, width: image.width, height: image.height };
}

/** Bilinear sample of an RGBA texture (row 0 at v = 0, as three.js lays data textures out), times `light`. */
function sampleBilinear(
  t: TextureView,
  u: number,
  v: number,
  light: number,
  out: Uint8Array,
  o: number,
): void {
  const fx = Math.min(t.width - 1, Math.max(0, u * t.width - 0.5));
  const fy = Math.min(t.height - 1, Math.max(0, v * t.height - 0.5));
  const x0 = fx | 0,
    y0 = fy | 0;
  const x1 = Math.min(t.width - 1, x0 + 1),
    y1 = Math.min(t.height - 1, y0 + 1);
  const dx = fx - x0,
    dy = fy - y0;
  const w00 = (1 - dx) * (1 - dy) * light,
    w10 = dx * (1 - dy) * light;
  const w01 = (1 - dx) * dy * light,
    w11 = dx * dy * light;
  const d = t.data;
  const p00 = (y0 * t.width + x0) * 4,
    p10 = (y0 * t.width + x1) * 4;
  const p01 = (y1 * t.width + x0) * 4,
    p11 = (y1 * t.width + x1) * 4;
  for (let k = 0; k < 3; k++) {
    const value = d[p00 + k]! * w00 + d[p10 + k]! * w10 + d[p01 + k]! * w01 + d[p11 + k]! * w11;
    out[o + k] = value > 255 ? 255 : value;
  }
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

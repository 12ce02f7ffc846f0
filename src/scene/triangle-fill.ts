/**
 * The rasteriser's pixel pass: one triangle in camera space, already lit at its corners, projected and filled into a
 * colour and 1/depth buffer with the depth test, flat, Gouraud-shaded or textured (bilinear, perspective-correct).
 * Also what feeds it: the near-plane clip and the textures' texels converted once for either picture.
 */
import * as THREE from 'three';
import { LINEAR_WHITE, type Rect, srgbToLinear } from './colour.ts';
import type { TexturedFill } from './textured-fill.ts';

/** Camera-space vertex: x right, y up, d = depth in front of the camera (metres), u v texture coordinates. */
export interface ClipVertex {
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

/** The pinhole projection: focal lengths and centre in pixels, the near plane in metres. */
export interface Lens {
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  near: number;
}

export interface TextureView {
  readonly data: Float32Array;
  readonly width: number;
  readonly height: number;
  readonly wrap: boolean;
}

/** The buffers a pass draws into, the brightest value it writes and the pixels it may write. */
export interface FillTarget {
  /** The textured fill in WebAssembly, whose memory holds `colour` and `depth`; absent: all in JavaScript. */
  readonly wasm?: TexturedFill;
  readonly colour: Uint16Array;
  /** 1 / depth of the nearest surface drawn so far (0 = nothing). */
  readonly depth: Float32Array;
  readonly width: number;
  readonly max: number;
  readonly scissor: Rect;
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

/** Fills the triangle a b c (corners lit, in front of the near plane) where it is nearer than what is drawn. */
export function fillTriangle(
  target: FillTarget,
  a: ClipVertex,
  b: ClipVertex,
  c: ClipVertex,
  lens: Lens,
  base: readonly [number, number, number],
  texture: TextureView | undefined,
): void {
  const { width, colour, depth, max, scissor } = target;
  const x0 = lens.cx + (lens.fx * a.x) / a.d,
    y0 = lens.cy - (lens.fy * a.y) / a.d;
  const x1 = lens.cx + (lens.fx * b.x) / b.d,
    y1 = lens.cy - (lens.fy * b.y) / b.d;
  const x2 = lens.cx + (lens.fx * c.x) / c.d,
    y2 = lens.cy - (lens.fy * c.y) / c.d;
  const area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
  if (Math.abs(area) < 1e-12) return;
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
  const wasm = target.wasm;
  const texels = texture && wasm?.texture(texture.data);
  if (wasm && texels !== undefined) {
    wasm.texturedTriangle(
      wasm.colourAt,
      wasm.depthAt,
      width,
      max,
      minX,
      maxX,
      minY,
      maxY,
      a0,
      b0,
      c0,
      a1,
      b1,
      c1,
      a2,
      b2,
      c2,
      zx,
      zA,
      zB,
      ux,
      uA,
      uB,
      vx,
      vA,
      vB,
      flat ? 1 : 0,
      flatR,
      flatG,
      flatB,
      lrA,
      lrB,
      lrC,
      lgA,
      lgB,
      lgC,
      lbA,
      lbB,
      lbC,
      texels,
      tw,
      th,
      wrap ? 1 : 0,
    );
    return;
  }
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
        shadedRow(colour, depth, py * width + lo, lo, hi, zx, Z, br, lrA, LR, bg, lgA, LG, bb, lbA, LB, max);
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
      const g = (tex[p00 + 1]! * w00 + tex[p10 + 1]! * w10 + tex[p01 + 1]! * w01 + tex[p11 + 1]! * w11) * kg;
      const b = (tex[p00 + 2]! * w00 + tex[p10 + 2]! * w10 + tex[p01 + 2]! * w01 + tex[p11 + 2]! * w11) * kb;
      colour[o] = r > max ? max : r;
      colour[o + 1] = g > max ? max : g;
      colour[o + 2] = b > max ? max : b;
    }
  }
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

/** The texture's RGBA texels: sRGB bytes for the clean picture, linear light (LINEAR_WHITE = 1) for the physical one. */
export function textureView(map: THREE.Texture | null | undefined, linear: boolean): TextureView | undefined {
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
export function clipNear(poly: ClipVertex[], near: number): ClipVertex[] {
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

/**
 * AssemblyScript source of src/scene/triangle-fill.wasm.ts (`npm run build:wasm` regenerates it): the rasteriser's
 * textured triangle fill (src/scene/triangle-fill.ts `fillTriangle`), the same expressions in the same order in f64,
 * so the same pixels. Buffers in the caller's memory, by address: colour u16 x 3 a pixel, 1/depth f32 a pixel, the
 * texture's RGBA texels f32 x 4.
 */

const EPS: f64 = -1e-7;

/** JavaScript's store of a number into a Uint16Array (ToUint16) for |v| < 2^31, NaN as 0 (a saturating truncation). */
// @ts-ignore: decorator
@inline
function toU16(v: f64): u16 {
  return <u16>(<i32>v & 0xffff);
}

/** JavaScript's `v | 0` for |v| < 2^31, NaN as 0. */
// @ts-ignore: decorator
@inline
function toI32(v: f64): i32 {
  return <i32>v;
}

/**
 * Fills rows minY..maxY of a textured triangle: barycentric weights `a x + b y + c`, 1/depth, u/depth and v/depth
 * and the light affine in the pixel centre (the light `flat` when the three corners are lit alike).
 */
export function texturedTriangle(
  colour: usize,
  depth: usize,
  width: i32,
  max: f64,
  minX: f64,
  maxX: f64,
  minY: f64,
  maxY: f64,
  a0: f64,
  b0: f64,
  c0: f64,
  a1: f64,
  b1: f64,
  c1: f64,
  a2: f64,
  b2: f64,
  c2: f64,
  zx: f64,
  zA: f64,
  zB: f64,
  ux: f64,
  uA: f64,
  uB: f64,
  vx: f64,
  vA: f64,
  vB: f64,
  flat: bool,
  flatR: f64,
  flatG: f64,
  flatB: f64,
  lrA: f64,
  lrB: f64,
  lrC: f64,
  lgA: f64,
  lgB: f64,
  lgC: f64,
  lbA: f64,
  lbB: f64,
  lbC: f64,
  tex: usize,
  tw: i32,
  th: i32,
  wrap: bool,
): void {
  const twf = <f64>tw,
    thf = <f64>th;
  for (let py = minY; py <= maxY; py++) {
    const fy = py + 0.5;
    let lo = minX,
      hi = maxX;
    for (let e = 0; e < 3; e++) {
      const A = e === 0 ? a0 : e === 1 ? a1 : a2;
      const W = e === 0 ? b0 * fy + c0 : e === 1 ? b1 * fy + c1 : b2 * fy + c2;
      if (A > 0) lo = Math.max(lo, Math.ceil((EPS - W) / A - 0.5) - 1);
      else if (A < 0) hi = Math.min(hi, Math.floor((EPS - W) / A - 0.5) + 1);
      else if (W < EPS) lo = maxX + 1;
    }
    if (lo > hi) continue;
    const W0 = b0 * fy + c0,
      W1 = b1 * fy + c1,
      W2 = b2 * fy + c2;
    for (; lo <= hi; lo++) {
      const fx = lo + 0.5;
      if (a0 * fx + W0 >= EPS && a1 * fx + W1 >= EPS && a2 * fx + W2 >= EPS) break;
    }
    for (; hi >= lo; hi--) {
      const fx = hi + 0.5;
      if (a0 * fx + W0 >= EPS && a1 * fx + W1 >= EPS && a2 * fx + W2 >= EPS) break;
    }
    const Z = zA * fy + zB,
      U = uA * fy + uB,
      V = vA * fy + vB;
    const LR = lrB * fy + lrC,
      LG = lgB * fy + lgC,
      LB = lbB * fy + lbC;
    let i = <i32>py * width + <i32>lo;
    for (let px = lo; px <= hi; px++, i++) {
      const fx = px + 0.5;
      const z = zx * fx + Z;
      const dp = depth + (<usize>i << 2);
      if (z <= <f64>load<f32>(dp)) continue;
      store<f32>(dp, <f32>z);
      const o = colour + <usize>i * 6;
      const iz = 1 / z;
      const u = (ux * fx + U) * iz;
      const v = (vx * fx + V) * iz;
      let sx: f64, sy: f64, x0: i32, y0: i32, x1: i32, y1: i32;
      if (wrap) {
        sx = (u - Math.floor(u)) * twf - 0.5;
        sy = (v - Math.floor(v)) * thf - 0.5;
        if (sx < 0) sx += twf;
        if (sy < 0) sy += thf;
        x0 = toI32(sx);
        y0 = toI32(sy);
        x1 = x0 + 1 === tw ? 0 : x0 + 1;
        y1 = y0 + 1 === th ? 0 : y0 + 1;
      } else {
        sx = u * twf - 0.5;
        sy = v * thf - 0.5;
        sx = sx < 0 ? 0 : sx > twf - 1 ? twf - 1 : sx;
        sy = sy < 0 ? 0 : sy > thf - 1 ? thf - 1 : sy;
        x0 = toI32(sx);
        y0 = toI32(sy);
        x1 = x0 + 1 < tw ? x0 + 1 : x0;
        y1 = y0 + 1 < th ? y0 + 1 : y0;
      }
      const dx = sx - <f64>x0,
        dy = sy - <f64>y0;
      const w11 = dx * dy,
        w10 = dx - w11,
        w01 = dy - w11,
        w00 = 1 - dx - w01;
      const p00 = tex + (<usize>(y0 * tw + x0) << 4),
        p10 = tex + (<usize>(y0 * tw + x1) << 4);
      const p01 = tex + (<usize>(y1 * tw + x0) << 4),
        p11 = tex + (<usize>(y1 * tw + x1) << 4);
      const kr = flat ? flatR : lrA * fx + LR,
        kg = flat ? flatG : lgA * fx + LG,
        kb = flat ? flatB : lbA * fx + LB;
      const r =
        (<f64>load<f32>(p00) * w00 +
          <f64>load<f32>(p10) * w10 +
          <f64>load<f32>(p01) * w01 +
          <f64>load<f32>(p11) * w11) *
        kr;
      const g =
        (<f64>load<f32>(p00, 4) * w00 +
          <f64>load<f32>(p10, 4) * w10 +
          <f64>load<f32>(p01, 4) * w01 +
          <f64>load<f32>(p11, 4) * w11) *
        kg;
      const b =
        (<f64>load<f32>(p00, 8) * w00 +
          <f64>load<f32>(p10, 8) * w10 +
          <f64>load<f32>(p01, 8) * w01 +
          <f64>load<f32>(p11, 8) * w11) *
        kb;
      store<u16>(o, toU16(r > max ? max : r));
      store<u16>(o, toU16(g > max ? max : g), 2);
      store<u16>(o, toU16(b > max ? max : b), 4);
    }
  }
}

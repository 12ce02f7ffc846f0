/**
 * AssemblyScript source of src/scene/frame-kernels.wasm.ts (`npm run build:wasm` regenerates it): the camera
 * model's develop and JPEG passes for one band of 16 rows in 4:2:0, with the same expressions in the same order as
 * src/scene/camera-model.ts and src/scene/jpeg-pass.ts in double precision, so the same bytes. The DCTs run on two
 * columns (or two rows) at once in f64x2 lanes. Every buffer lives in the caller's memory, given by byte address.
 */

const NOISE_MASK: i32 = (1 << 16) - 1;
const Y_R = 0.299,
  Y_G = 0.587,
  Y_B = 0.114;
const CB_R = -0.168736,
  CB_G = -0.331264,
  CB_B = 0.5;
const CR_R = 0.5,
  CR_G = -0.418688,
  CR_B = -0.081312;
/** Tone table offsets (entries) of green and blue: two floats (mean, sigma) per linear level 0..4095. */
const TONE_G: i32 = 2 * 4096,
  TONE_B: i32 = 4 * 4096;

/** Scratch for a row pair of a block, lane 0 one row and lane 1 the next, 8 vectors (in the first page). */
const SCRATCH: usize = 1024;

/** One channel's byte: mean plus sigma times a noise draw, clamped to 0..255 and truncated. */
// @ts-ignore: decorator
@inline
function developed(tone: usize, noise: usize, t: i32, k: i32): f64 {
  const v =
    <f64>load<f32>(tone + (<usize>t << 2)) +
    <f64>load<f32>(tone + (<usize>(t + 1) << 2)) * <f64>load<f32>(noise + (<usize>(k & NOISE_MASK) << 2));
  // Selects, not f64.min/max (whose NaN and -0 rules cost a few instructions each); trunc keeps it a double.
  return trunc(select<f64>(0.0, select<f64>(255.0, v, v > 255.0), v < 0.0));
}

/**
 * Develops the band whose top row is `top` (each output pixel's source is `map`'s offset into the u16 RGB
 * `src`) straight into the luma plane `y` (`width` values a row, 16 rows) and the chroma planes `cb`, `cr` (half as
 * wide, 8 rows). `rows` holds each row's first noise draw (16 i32, in row order).
 */
export function develop420(
  src: usize,
  map: usize,
  tone: usize,
  noise: usize,
  rows: usize,
  y: usize,
  cb: usize,
  cr: usize,
  width: i32,
  top: i32,
): void {
  const CW = width >> 1;
  for (let cy = 0; cy < 8; cy++) {
    let k0 = load<i32>(rows + (<usize>(2 * cy) << 2));
    let k1 = load<i32>(rows + (<usize>(2 * cy + 1) << 2));
    let i = (top + 2 * cy) * width;
    let p = 2 * cy * width;
    let c = cy * CW;
    for (let cx = 0; cx < CW; cx++, i += 2, p += 2, c++) {
      const m = map + (<usize>i << 2);
      const sa = src + (<usize>load<i32>(m) << 1),
        sb = src + (<usize>load<i32>(m, 4) << 1),
        sc = src + (<usize>load<i32>(m + (<usize>width << 2)) << 1),
        sd = src + (<usize>load<i32>(m + (<usize>width << 2), 4) << 1);
      const ra = developed(tone, noise, 2 * <i32>load<u16>(sa), k0);
      const ga = developed(tone, noise, TONE_G + 2 * <i32>load<u16>(sa, 2), k0 + 1);
      const ba = developed(tone, noise, TONE_B + 2 * <i32>load<u16>(sa, 4), k0 + 2);
      const rb = developed(tone, noise, 2 * <i32>load<u16>(sb), k0 + 3);
      const gb = developed(tone, noise, TONE_G + 2 * <i32>load<u16>(sb, 2), k0 + 4);
      const bb = developed(tone, noise, TONE_B + 2 * <i32>load<u16>(sb, 4), k0 + 5);
      const rc = developed(tone, noise, 2 * <i32>load<u16>(sc), k1);
      const gc = developed(tone, noise, TONE_G + 2 * <i32>load<u16>(sc, 2), k1 + 1);
      const bc = developed(tone, noise, TONE_B + 2 * <i32>load<u16>(sc, 4), k1 + 2);
      const rd = developed(tone, noise, 2 * <i32>load<u16>(sd), k1 + 3);
      const gd = developed(tone, noise, TONE_G + 2 * <i32>load<u16>(sd, 2), k1 + 4);
      const bd = developed(tone, noise, TONE_B + 2 * <i32>load<u16>(sd, 4), k1 + 5);
      k0 += 6;
      k1 += 6;
      const py = y + (<usize>p << 3);
      store<f64>(py, Y_R * ra + Y_G * ga + Y_B * ba - 128);
      store<f64>(py, Y_R * rb + Y_G * gb + Y_B * bb - 128, 8);
      store<f64>(py + (<usize>width << 3), Y_R * rc + Y_G * gc + Y_B * bc - 128);
      store<f64>(py + (<usize>width << 3), Y_R * rd + Y_G * gd + Y_B * bd - 128, 8);
      const r = ra + rb + rc + rd,
        g = ga + gb + gc + gd,
        b = ba + bb + bc + bd;
      store<f64>(cb + (<usize>c << 3), (CB_R * r + CB_G * g + CB_B * b) * 0.25);
      store<f64>(cr + (<usize>c << 3), (CR_R * r + CR_G * g + CR_B * b) * 0.25);
    }
  }
}

/** In-place forward 8-point DCT (AAN, unscaled) of the vectors at p, p + s, ... p + 7 s. */
// @ts-ignore: decorator
@inline
function fdct8(p: usize, s: usize): void {
  const d0 = v128.load(p),
    d1 = v128.load(p + s),
    d2 = v128.load(p + 2 * s),
    d3 = v128.load(p + 3 * s);
  const d4 = v128.load(p + 4 * s),
    d5 = v128.load(p + 5 * s),
    d6 = v128.load(p + 6 * s),
    d7 = v128.load(p + 7 * s);
  const t0 = f64x2.add(d0, d7),
    t7 = f64x2.sub(d0, d7),
    t1 = f64x2.add(d1, d6),
    t6 = f64x2.sub(d1, d6);
  const t2 = f64x2.add(d2, d5),
    t5 = f64x2.sub(d2, d5),
    t3 = f64x2.add(d3, d4),
    t4 = f64x2.sub(d3, d4);
  const e10 = f64x2.add(t0, t3),
    e13 = f64x2.sub(t0, t3),
    e11 = f64x2.add(t1, t2),
    e12 = f64x2.sub(t1, t2);
  v128.store(p, f64x2.add(e10, e11));
  v128.store(p + 4 * s, f64x2.sub(e10, e11));
  const z1 = f64x2.mul(f64x2.add(e12, e13), f64x2.splat(0.707106781));
  v128.store(p + 2 * s, f64x2.add(e13, z1));
  v128.store(p + 6 * s, f64x2.sub(e13, z1));
  const o10 = f64x2.add(t4, t5),
    o11 = f64x2.add(t5, t6),
    o12 = f64x2.add(t6, t7);
  const z5 = f64x2.mul(f64x2.sub(o10, o12), f64x2.splat(0.382683433));
  const z2 = f64x2.add(f64x2.mul(f64x2.splat(0.5411961), o10), z5);
  const z4 = f64x2.add(f64x2.mul(f64x2.splat(1.306562965), o12), z5);
  const z3 = f64x2.mul(o11, f64x2.splat(0.707106781));
  const z11 = f64x2.add(t7, z3),
    z13 = f64x2.sub(t7, z3);
  v128.store(p + 5 * s, f64x2.add(z13, z2));
  v128.store(p + 3 * s, f64x2.sub(z13, z2));
  v128.store(p + s, f64x2.add(z11, z4));
  v128.store(p + 7 * s, f64x2.sub(z11, z4));
}

/** In-place inverse 8-point DCT (AAN) of the vectors at p, p + s, ..., their AAN factors already applied. */
// @ts-ignore: decorator
@inline
function idct8(p: usize, s: usize): void {
  const i0 = v128.load(p),
    i1 = v128.load(p + s),
    i2 = v128.load(p + 2 * s),
    i3 = v128.load(p + 3 * s);
  const i4 = v128.load(p + 4 * s),
    i5 = v128.load(p + 5 * s),
    i6 = v128.load(p + 6 * s),
    i7 = v128.load(p + 7 * s);
  const e10 = f64x2.add(i0, i4),
    e11 = f64x2.sub(i0, i4),
    e13 = f64x2.add(i2, i6);
  const e12 = f64x2.sub(f64x2.mul(f64x2.sub(i2, i6), f64x2.splat(1.414213562)), e13);
  const a0 = f64x2.add(e10, e13),
    a3 = f64x2.sub(e10, e13),
    a1 = f64x2.add(e11, e12),
    a2 = f64x2.sub(e11, e12);
  const z13 = f64x2.add(i5, i3),
    z10 = f64x2.sub(i5, i3),
    z11 = f64x2.add(i1, i7),
    z12 = f64x2.sub(i1, i7);
  const b7 = f64x2.add(z11, z13);
  const b11 = f64x2.mul(f64x2.sub(z11, z13), f64x2.splat(1.414213562));
  const z5 = f64x2.mul(f64x2.add(z10, z12), f64x2.splat(1.847759065));
  const b10 = f64x2.sub(z5, f64x2.mul(z12, f64x2.splat(1.0823922)));
  const b12 = f64x2.sub(z5, f64x2.mul(z10, f64x2.splat(2.61312593)));
  const b6 = f64x2.sub(b12, b7);
  const b5 = f64x2.sub(b11, b6);
  const b4 = f64x2.sub(b10, b5);
  v128.store(p, f64x2.add(a0, b7));
  v128.store(p + 7 * s, f64x2.sub(a0, b7));
  v128.store(p + s, f64x2.add(a1, b6));
  v128.store(p + 6 * s, f64x2.sub(a1, b6));
  v128.store(p + 2 * s, f64x2.add(a2, b5));
  v128.store(p + 5 * s, f64x2.sub(a2, b5));
  v128.store(p + 3 * s, f64x2.add(a3, b4));
  v128.store(p + 4 * s, f64x2.sub(a3, b4));
}

/** Rows `a` and `a + s` (8 doubles each) into SCRATCH as 8 pairs: (row a's k, row a + s's k). */
// @ts-ignore: decorator
@inline
function pairRows(a: usize, s: usize): void {
  for (let k: usize = 0; k < 8; k += 2) {
    const x = v128.load(a + (k << 3)),
      y = v128.load(a + s + (k << 3));
    v128.store(SCRATCH + (k << 4), v128.shuffle<f64>(x, y, 0, 2));
    v128.store(SCRATCH + (k << 4) + 16, v128.shuffle<f64>(x, y, 1, 3));
  }
}

/** SCRATCH's pairs back into rows `a` and `a + s`. */
// @ts-ignore: decorator
@inline
function unpairRows(a: usize, s: usize): void {
  for (let k: usize = 0; k < 8; k += 2) {
    const x = v128.load(SCRATCH + (k << 4)),
      y = v128.load(SCRATCH + (k << 4) + 16);
    v128.store(a + (k << 3), v128.shuffle<f64>(x, y, 0, 2));
    v128.store(a + s + (k << 3), v128.shuffle<f64>(x, y, 1, 3));
  }
}

/**
 * Forward DCT, quantisation, dequantisation and inverse DCT of the 8x8 block at `b` (rows `s` bytes apart), in place,
 * as jpeg-pass.ts's roundTripBlock does: `f` holds 64 forward divisors then 64 inverse multipliers. A column pair
 * whose AC terms all quantised to 0 repeats its DC terms; the rows are skipped when every column but the first did
 * (the transforms of such columns and rows give those values exactly).
 */
function roundTripBlock(b: usize, s: usize, f: usize): void {
  for (let r: usize = 0; r < 8; r += 2) {
    pairRows(b + r * s, s);
    fdct8(SCRATCH, 16);
    unpairRows(b + r * s, s);
  }
  const half = f64x2.splat(0.5);
  const zero = f64x2.splat(0);
  let rows = false;
  for (let c: usize = 0; c < 8; c += 2) {
    const p = b + (c << 3);
    fdct8(p, s);
    const dc = f64x2.floor(f64x2.add(f64x2.mul(v128.load(p), v128.load(f + (c << 3))), half));
    const d = f64x2.mul(dc, v128.load(f + 512 + (c << 3)));
    v128.store(p, d);
    let any = zero;
    for (let u: usize = 1; u < 8; u++) {
      const k = (u * 8 + c) << 3;
      const q = f64x2.floor(f64x2.add(f64x2.mul(v128.load(p + u * s), v128.load(f + k)), half));
      v128.store(p + u * s, f64x2.mul(q, v128.load(f + 512 + k)));
      any = v128.or(any, f64x2.ne(q, zero));
    }
    if (v128.any_true(any)) idct8(p, s);
    else for (let u: usize = 1; u < 8; u++) v128.store(p + u * s, d);
    const kept = v128.or(any, f64x2.ne(dc, zero));
    if (c === 0 ? i64x2.extract_lane(kept, 1) !== 0 : v128.any_true(kept)) rows = true;
  }
  if (rows)
    for (let r: usize = 0; r < 8; r += 2) {
      pairRows(b + r * s, s);
      idct8(SCRATCH, 16);
      unpairRows(b + r * s, s);
    }
  else
    for (let r: usize = 0; r < 8; r++) {
      const v = f64x2.splat(load<f64>(b + r * s));
      for (let c: usize = 0; c < 64; c += 16) v128.store(b + r * s + c, v);
    }
}

/**
 * Every block's round trip of the band's planes (luma 16 rows `width` wide, chroma 8 rows half as wide), then back
 * to RGB bytes into `rgb` (the whole picture, `width` pixels a row) at rows `top`..`top` + 15, as jpeg-pass.ts's
 * merge420 does. `luma` and `chroma` are the factor tables of roundTripBlock.
 */
export function transformBand(
  y: usize,
  cb: usize,
  cr: usize,
  width: i32,
  luma: usize,
  chroma: usize,
  rgb: usize,
  top: i32,
): void {
  const W = <usize>width;
  const CW = W >> 1;
  for (let by: usize = 0; by < 16; by += 8)
    for (let bx: usize = 0; bx < W; bx += 8) roundTripBlock(y + ((by * W + bx) << 3), W << 3, luma);
  for (let bx: usize = 0; bx < CW; bx += 8) {
    roundTripBlock(cb + (bx << 3), CW << 3, chroma);
    roundTripBlock(cr + (bx << 3), CW << 3, chroma);
  }
  // Back to bytes two MCU columns' quads (4 pixels of 2 rows) at a time.
  const eighth = f64x2.splat(0.125);
  for (let cy: usize = 0; cy < 8; cy++) {
    const row = rgb + (<usize>top + 2 * cy) * W * 3;
    for (let cx: usize = 0; cx < CW; cx += 2) {
      const cbv = f64x2.mul(v128.load(cb + ((cy * CW + cx) << 3)), eighth),
        crv = f64x2.mul(v128.load(cr + ((cy * CW + cx) << 3)), eighth);
      // The +0.5 rounds as the byte store truncates.
      const dr = f64x2.add(f64x2.mul(f64x2.splat(1.402), crv), f64x2.splat(128.5)),
        dg = f64x2.add(
          f64x2.sub(f64x2.mul(f64x2.splat(-0.344136), cbv), f64x2.mul(f64x2.splat(0.714136), crv)),
          f64x2.splat(128.5),
        ),
        db = f64x2.add(f64x2.mul(f64x2.splat(1.772), cbv), f64x2.splat(128.5));
      const o = y + ((2 * cy * W + 2 * cx) << 3);
      const i = row + 6 * cx;
      put4(i, o, eighth, dr, dg, db);
      put4(i + W * 3, o + (W << 3), eighth, dr, dg, db);
    }
  }
}

/**
 * Four pixels of a row back to bytes at `i`: luma at `o` (centred on 0, times 8) plus each channel's chroma term
 * (lane 0 for the first two pixels, lane 1 for the next two), clamped and truncated as a Uint8Array store does.
 */
// @ts-ignore: decorator
@inline
function put4(i: usize, o: usize, eighth: v128, dr: v128, dg: v128, db: v128): void {
  const l01 = f64x2.mul(v128.load(o), eighth),
    l23 = f64x2.mul(v128.load(o, 16), eighth);
  const r = bytes4(l01, l23, dr),
    g = bytes4(l01, l23, dg),
    b = bytes4(l01, l23, db);
  // r0..r3 g0..g3 b0..b3 as bytes, then interleaved r0 g0 b0 r1 ...
  const rgb = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(r, g), i16x8.narrow_i32x4_s(b, b));
  const out = v128.shuffle<u8>(rgb, rgb, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 0, 0, 0, 0);
  v128.store64_lane(i, out, 0);
  v128.store32_lane(i + 8, out, 2);
}

/** Four levels (two pairs plus each pair's term), clamped to 0..255 and truncated, as i32 lanes. */
// @ts-ignore: decorator
@inline
function bytes4(l01: v128, l23: v128, d: v128): v128 {
  const lo = f64x2.add(l01, v128.shuffle<f64>(d, d, 0, 0)),
    hi = f64x2.add(l23, v128.shuffle<f64>(d, d, 1, 1));
  const zero = f64x2.splat(0),
    top = f64x2.splat(255);
  return v128.shuffle<i32>(
    i32x4.trunc_sat_f64x2_s_zero(f64x2.pmin(f64x2.pmax(lo, zero), top)),
    i32x4.trunc_sat_f64x2_s_zero(f64x2.pmin(f64x2.pmax(hi, zero), top)),
    0,
    1,
    4,
    5,
  );
}

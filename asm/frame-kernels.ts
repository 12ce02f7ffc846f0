// Over 400 lines: each DCT is written out twice (column pairs, row pairs in lanes) so its values stay in registers.
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

/**
 * Rows `a` and `a + s` of a block (8 doubles each) through the forward 8-point DCT (AAN, unscaled), in place: the
 * rows paired in f64x2 lanes (lane 0 row `a`, lane 1 the next), as jpeg-pass.ts's fdct8 runs each one.
 */
// @ts-ignore: decorator
@inline
function fdctRows(a: usize, s: usize): void {
  const x0 = v128.load(a),
    x2 = v128.load(a, 16),
    x4 = v128.load(a, 32),
    x6 = v128.load(a, 48);
  const y0 = v128.load(a + s),
    y2 = v128.load(a + s, 16),
    y4 = v128.load(a + s, 32),
    y6 = v128.load(a + s, 48);
  const d0 = v128.shuffle<f64>(x0, y0, 0, 2),
    d1 = v128.shuffle<f64>(x0, y0, 1, 3);
  const d2 = v128.shuffle<f64>(x2, y2, 0, 2),
    d3 = v128.shuffle<f64>(x2, y2, 1, 3);
  const d4 = v128.shuffle<f64>(x4, y4, 0, 2),
    d5 = v128.shuffle<f64>(x4, y4, 1, 3);
  const d6 = v128.shuffle<f64>(x6, y6, 0, 2),
    d7 = v128.shuffle<f64>(x6, y6, 1, 3);
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
  const o0 = f64x2.add(e10, e11),
    o4 = f64x2.sub(e10, e11);
  const z1 = f64x2.mul(f64x2.add(e12, e13), f64x2.splat(0.707106781));
  const o2 = f64x2.add(e13, z1),
    o6 = f64x2.sub(e13, z1);
  const o10 = f64x2.add(t4, t5),
    o11 = f64x2.add(t5, t6),
    o12 = f64x2.add(t6, t7);
  const z5 = f64x2.mul(f64x2.sub(o10, o12), f64x2.splat(0.382683433));
  const z2 = f64x2.add(f64x2.mul(f64x2.splat(0.5411961), o10), z5);
  const z4 = f64x2.add(f64x2.mul(f64x2.splat(1.306562965), o12), z5);
  const z3 = f64x2.mul(o11, f64x2.splat(0.707106781));
  const z11 = f64x2.add(t7, z3),
    z13 = f64x2.sub(t7, z3);
  const o5 = f64x2.add(z13, z2),
    o3 = f64x2.sub(z13, z2),
    o1 = f64x2.add(z11, z4),
    o7 = f64x2.sub(z11, z4);
  v128.store(a, v128.shuffle<f64>(o0, o1, 0, 2));
  v128.store(a + s, v128.shuffle<f64>(o0, o1, 1, 3));
  v128.store(a, v128.shuffle<f64>(o2, o3, 0, 2), 16);
  v128.store(a + s, v128.shuffle<f64>(o2, o3, 1, 3), 16);
  v128.store(a, v128.shuffle<f64>(o4, o5, 0, 2), 32);
  v128.store(a + s, v128.shuffle<f64>(o4, o5, 1, 3), 32);
  v128.store(a, v128.shuffle<f64>(o6, o7, 0, 2), 48);
  v128.store(a + s, v128.shuffle<f64>(o6, o7, 1, 3), 48);
}

/** Rows `a` and `a + s` through the inverse 8-point DCT (AAN), in place, paired as in fdctRows. */
// @ts-ignore: decorator
@inline
function idctRows(a: usize, s: usize): void {
  const x0 = v128.load(a),
    x2 = v128.load(a, 16),
    x4 = v128.load(a, 32),
    x6 = v128.load(a, 48);
  const y0 = v128.load(a + s),
    y2 = v128.load(a + s, 16),
    y4 = v128.load(a + s, 32),
    y6 = v128.load(a + s, 48);
  const d0 = v128.shuffle<f64>(x0, y0, 0, 2),
    d1 = v128.shuffle<f64>(x0, y0, 1, 3);
  const d2 = v128.shuffle<f64>(x2, y2, 0, 2),
    d3 = v128.shuffle<f64>(x2, y2, 1, 3);
  const d4 = v128.shuffle<f64>(x4, y4, 0, 2),
    d5 = v128.shuffle<f64>(x4, y4, 1, 3);
  const d6 = v128.shuffle<f64>(x6, y6, 0, 2),
    d7 = v128.shuffle<f64>(x6, y6, 1, 3);
  const e10 = f64x2.add(d0, d4),
    e11 = f64x2.sub(d0, d4),
    e13 = f64x2.add(d2, d6);
  const e12 = f64x2.sub(f64x2.mul(f64x2.sub(d2, d6), f64x2.splat(1.414213562)), e13);
  const a0 = f64x2.add(e10, e13),
    a3 = f64x2.sub(e10, e13),
    a1 = f64x2.add(e11, e12),
    a2 = f64x2.sub(e11, e12);
  const z13 = f64x2.add(d5, d3),
    z10 = f64x2.sub(d5, d3),
    z11 = f64x2.add(d1, d7),
    z12 = f64x2.sub(d1, d7);
  const b7 = f64x2.add(z11, z13);
  const b11 = f64x2.mul(f64x2.sub(z11, z13), f64x2.splat(1.414213562));
  const z5 = f64x2.mul(f64x2.add(z10, z12), f64x2.splat(1.847759065));
  const b10 = f64x2.sub(z5, f64x2.mul(z12, f64x2.splat(1.0823922)));
  const b12 = f64x2.sub(z5, f64x2.mul(z10, f64x2.splat(2.61312593)));
  const b6 = f64x2.sub(b12, b7);
  const b5 = f64x2.sub(b11, b6);
  const b4 = f64x2.sub(b10, b5);
  const o0 = f64x2.add(a0, b7),
    o7 = f64x2.sub(a0, b7),
    o1 = f64x2.add(a1, b6),
    o6 = f64x2.sub(a1, b6);
  const o2 = f64x2.add(a2, b5),
    o5 = f64x2.sub(a2, b5),
    o3 = f64x2.add(a3, b4),
    o4 = f64x2.sub(a3, b4);
  v128.store(a, v128.shuffle<f64>(o0, o1, 0, 2));
  v128.store(a + s, v128.shuffle<f64>(o0, o1, 1, 3));
  v128.store(a, v128.shuffle<f64>(o2, o3, 0, 2), 16);
  v128.store(a + s, v128.shuffle<f64>(o2, o3, 1, 3), 16);
  v128.store(a, v128.shuffle<f64>(o4, o5, 0, 2), 32);
  v128.store(a + s, v128.shuffle<f64>(o4, o5, 1, 3), 32);
  v128.store(a, v128.shuffle<f64>(o6, o7, 0, 2), 48);
  v128.store(a + s, v128.shuffle<f64>(o6, o7, 1, 3), 48);
}

/**
 * Columns `c` and `c + 1` of the block at `b` (rows `s` bytes apart): forward DCT, quantisation (rounded as
 * Math.round does), dequantisation and inverse DCT, in place. A pair whose AC terms all quantised to 0 repeats its
 * DC terms (the inverse DCT of such a column gives exactly that). Returns whether a column other than the first
 * kept a term, so that the rows need their inverse DCT.
 */
// @ts-ignore: decorator
@inline
function roundTripColumns(b: usize, s: usize, f: usize, c: usize): bool {
  const p = b + (c << 3);
  const fw = f + (c << 3),
    iv = f + 512 + (c << 3);
  const d0 = v128.load(p);
  const d1 = v128.load(p + 1 * s);
  const d2 = v128.load(p + 2 * s);
  const d3 = v128.load(p + 3 * s);
  const d4 = v128.load(p + 4 * s);
  const d5 = v128.load(p + 5 * s);
  const d6 = v128.load(p + 6 * s);
  const d7 = v128.load(p + 7 * s);
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
  const o0 = f64x2.add(e10, e11),
    o4 = f64x2.sub(e10, e11);
  const z1 = f64x2.mul(f64x2.add(e12, e13), f64x2.splat(0.707106781));
  const o2 = f64x2.add(e13, z1),
    o6 = f64x2.sub(e13, z1);
  const o10 = f64x2.add(t4, t5),
    o11 = f64x2.add(t5, t6),
    o12 = f64x2.add(t6, t7);
  const z5 = f64x2.mul(f64x2.sub(o10, o12), f64x2.splat(0.382683433));
  const z2 = f64x2.add(f64x2.mul(f64x2.splat(0.5411961), o10), z5);
  const z4 = f64x2.add(f64x2.mul(f64x2.splat(1.306562965), o12), z5);
  const z3 = f64x2.mul(o11, f64x2.splat(0.707106781));
  const z11 = f64x2.add(t7, z3),
    z13 = f64x2.sub(t7, z3);
  const o5 = f64x2.add(z13, z2),
    o3 = f64x2.sub(z13, z2),
    o1 = f64x2.add(z11, z4),
    o7 = f64x2.sub(z11, z4);
  const half = f64x2.splat(0.5),
    zero = f64x2.splat(0);
  const q0 = f64x2.floor(f64x2.add(f64x2.mul(o0, v128.load(fw)), half));
  const q1 = f64x2.floor(f64x2.add(f64x2.mul(o1, v128.load(fw, 64)), half));
  const q2 = f64x2.floor(f64x2.add(f64x2.mul(o2, v128.load(fw, 128)), half));
  const q3 = f64x2.floor(f64x2.add(f64x2.mul(o3, v128.load(fw, 192)), half));
  const q4 = f64x2.floor(f64x2.add(f64x2.mul(o4, v128.load(fw, 256)), half));
  const q5 = f64x2.floor(f64x2.add(f64x2.mul(o5, v128.load(fw, 320)), half));
  const q6 = f64x2.floor(f64x2.add(f64x2.mul(o6, v128.load(fw, 384)), half));
  const q7 = f64x2.floor(f64x2.add(f64x2.mul(o7, v128.load(fw, 448)), half));
  const any = v128.or(
    v128.or(v128.or(f64x2.ne(q1, zero), f64x2.ne(q2, zero)), v128.or(f64x2.ne(q3, zero), f64x2.ne(q4, zero))),
    v128.or(v128.or(f64x2.ne(q5, zero), f64x2.ne(q6, zero)), f64x2.ne(q7, zero)),
  );
  const v0 = f64x2.mul(q0, v128.load(iv));
  const v1 = f64x2.mul(q1, v128.load(iv, 64));
  const v2 = f64x2.mul(q2, v128.load(iv, 128));
  const v3 = f64x2.mul(q3, v128.load(iv, 192));
  const v4 = f64x2.mul(q4, v128.load(iv, 256));
  const v5 = f64x2.mul(q5, v128.load(iv, 320));
  const v6 = f64x2.mul(q6, v128.load(iv, 384));
  const v7 = f64x2.mul(q7, v128.load(iv, 448));
  if (v128.any_true(any)) {
    const e10 = f64x2.add(v0, v4),
      e11 = f64x2.sub(v0, v4),
      e13 = f64x2.add(v2, v6);
    const e12 = f64x2.sub(f64x2.mul(f64x2.sub(v2, v6), f64x2.splat(1.414213562)), e13);
    const a0 = f64x2.add(e10, e13),
      a3 = f64x2.sub(e10, e13),
      a1 = f64x2.add(e11, e12),
      a2 = f64x2.sub(e11, e12);
    const z13 = f64x2.add(v5, v3),
      z10 = f64x2.sub(v5, v3),
      z11 = f64x2.add(v1, v7),
      z12 = f64x2.sub(v1, v7);
    const b7 = f64x2.add(z11, z13);
    const b11 = f64x2.mul(f64x2.sub(z11, z13), f64x2.splat(1.414213562));
    const z5 = f64x2.mul(f64x2.add(z10, z12), f64x2.splat(1.847759065));
    const b10 = f64x2.sub(z5, f64x2.mul(z12, f64x2.splat(1.0823922)));
    const b12 = f64x2.sub(z5, f64x2.mul(z10, f64x2.splat(2.61312593)));
    const b6 = f64x2.sub(b12, b7);
    const b5 = f64x2.sub(b11, b6);
    const b4 = f64x2.sub(b10, b5);
    const r0 = f64x2.add(a0, b7),
      r7 = f64x2.sub(a0, b7),
      r1 = f64x2.add(a1, b6),
      r6 = f64x2.sub(a1, b6);
    const r2 = f64x2.add(a2, b5),
      r5 = f64x2.sub(a2, b5),
      r3 = f64x2.add(a3, b4),
      r4 = f64x2.sub(a3, b4);
    v128.store(p, r0);
    v128.store(p + 1 * s, r1);
    v128.store(p + 2 * s, r2);
    v128.store(p + 3 * s, r3);
    v128.store(p + 4 * s, r4);
    v128.store(p + 5 * s, r5);
    v128.store(p + 6 * s, r6);
    v128.store(p + 7 * s, r7);
  } else for (let u: usize = 0; u < 8; u++) v128.store(p + u * s, v0);
  const kept = v128.or(any, f64x2.ne(q0, zero));
  return c === 0 ? i64x2.extract_lane(kept, 1) !== 0 : v128.any_true(kept);
}

/**
 * Forward DCT, quantisation, dequantisation and inverse DCT of the 8x8 block at `b` (rows `s` bytes apart), in place,
 * as jpeg-pass.ts's roundTripBlock does: `f` holds 64 forward divisors then 64 inverse multipliers. The rows' inverse
 * is skipped when every column but the first kept only its DC term (each row is then constant).
 */
function roundTripBlock(b: usize, s: usize, f: usize): void {
  for (let r: usize = 0; r < 8; r += 2) fdctRows(b + r * s, s);
  let rows = false;
  for (let c: usize = 0; c < 8; c += 2) if (roundTripColumns(b, s, f, c)) rows = true;
  if (rows) for (let r: usize = 0; r < 8; r += 2) idctRows(b + r * s, s);
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

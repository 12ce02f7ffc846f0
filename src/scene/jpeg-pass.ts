/**
 * What JPEG compression does to a picture, without the file: colour to YCbCr (JFIF), chroma halved both ways
 * (4:2:0, as the Raspberry Pi's encoder writes), 8x8 DCT, quantisation by the standard tables scaled to a quality
 * (the IJG rule), then back. The entropy coding that a real file adds is lossless, so the pixels match a codec's
 * round trip (test/scene/jpeg-pass.test.ts checks against jpeg-js) at a fraction of its cost. The work goes one
 * MCU (16x16 pixels, 8x8 in 4:4:4) at a time in small buffers that stay in cache, and the inverse DCT skips the
 * columns and rows that quantisation left without AC terms (most of a camera frame): a 640x480 frame in about
 * 3 ms against 12 ms plane by plane and about 100 ms for jpeg-js's encode and decode. Browser-safe.
 */

/** The example quantisation tables of the JPEG standard (ITU T.81 Annex K), row by row. */
const LUMA_TABLE = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22,
  29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103,
  121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
const CHROMA_TABLE = [
  17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99,
  99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
  99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
];

/** The quantiser steps of a quality 1..100 (IJG: 50 is the table, 100 all ones). */
export function quantTable(base: readonly number[], quality: number): number[] {
  const q = Math.min(100, Math.max(1, Math.round(quality)));
  const scale = q < 50 ? 5000 / q : 200 - 2 * q;
  return base.map((v) => Math.min(255, Math.max(1, Math.floor((v * scale + 50) / 100))));
}

/** AAN scale factors: the fast DCT's outputs are the true coefficients times 8 s[u] s[v]. */
const AAN = [1, 1.387039845, 1.306562965, 1.175875602, 1, 0.785694958, 0.5411961, 0.275899379];

export interface Factors {
  readonly fwd: Float64Array;
  readonly inv: Float64Array;
}

/** Divisors for the forward pass and multipliers for the inverse one, folding in the AAN scaling. */
function factors(table: readonly number[]): Factors {
  const fwd = new Float64Array(64);
  const inv = new Float64Array(64);
  for (let u = 0; u < 8; u++)
    for (let v = 0; v < 8; v++) {
      const k = u * 8 + v;
      fwd[k] = 1 / (table[k]! * AAN[u]! * AAN[v]! * 8);
      inv[k] = table[k]! * AAN[u]! * AAN[v]!;
    }
  return { fwd, inv };
}

/** In-place forward 8-point DCT (AAN factorisation, unscaled) of b[o], b[o + s], ... b[o + 7 s]. */
function fdct8(b: Float64Array, o: number, s: number): void {
  const d0 = b[o]!,
    d1 = b[o + s]!,
    d2 = b[o + 2 * s]!,
    d3 = b[o + 3 * s]!;
  const d4 = b[o + 4 * s]!,
    d5 = b[o + 5 * s]!,
    d6 = b[o + 6 * s]!,
    d7 = b[o + 7 * s]!;
  const t0 = d0 + d7,
    t7 = d0 - d7,
    t1 = d1 + d6,
    t6 = d1 - d6;
  const t2 = d2 + d5,
    t5 = d2 - d5,
    t3 = d3 + d4,
    t4 = d3 - d4;
  const e10 = t0 + t3,
    e13 = t0 - t3,
    e11 = t1 + t2,
    e12 = t1 - t2;
  b[o] = e10 + e11;
  b[o + 4 * s] = e10 - e11;
  const z1 = (e12 + e13) * 0.707106781;
  b[o + 2 * s] = e13 + z1;
  b[o + 6 * s] = e13 - z1;
  const o10 = t4 + t5,
    o11 = t5 + t6,
    o12 = t6 + t7;
  const z5 = (o10 - o12) * 0.382683433;
  const z2 = 0.5411961 * o10 + z5;
  const z4 = 1.306562965 * o12 + z5;
  const z3 = o11 * 0.707106781;
  const z11 = t7 + z3,
    z13 = t7 - z3;
  b[o + 5 * s] = z13 + z2;
  b[o + 3 * s] = z13 - z2;
  b[o + s] = z11 + z4;
  b[o + 7 * s] = z11 - z4;
}

/** In-place inverse 8-point DCT (AAN), the inputs already multiplied by their AAN factors. */
function idct8(b: Float64Array, o: number, s: number): void {
  const i0 = b[o]!,
    i1 = b[o + s]!,
    i2 = b[o + 2 * s]!,
    i3 = b[o + 3 * s]!;
  const i4 = b[o + 4 * s]!,
    i5 = b[o + 5 * s]!,
    i6 = b[o + 6 * s]!,
    i7 = b[o + 7 * s]!;
  const e10 = i0 + i4,
    e11 = i0 - i4,
    e13 = i2 + i6;
  const e12 = (i2 - i6) * 1.414213562 - e13;
  const a0 = e10 + e13,
    a3 = e10 - e13,
    a1 = e11 + e12,
    a2 = e11 - e12;
  const z13 = i5 + i3,
    z10 = i5 - i3,
    z11 = i1 + i7,
    z12 = i1 - i7;
  const b7 = z11 + z13;
  const b11 = (z11 - z13) * 1.414213562;
  const z5 = (z10 + z12) * 1.847759065;
  const b10 = z5 - z12 * 1.0823922;
  const b12 = z5 - z10 * 2.61312593;
  const b6 = b12 - b7;
  const b5 = b11 - b6;
  const b4 = b10 - b5;
  b[o] = a0 + b7;
  b[o + 7 * s] = a0 - b7;
  b[o + s] = a1 + b6;
  b[o + 6 * s] = a1 - b6;
  b[o + 2 * s] = a2 + b5;
  b[o + 5 * s] = a2 - b5;
  b[o + 3 * s] = a3 + b4;
  b[o + 4 * s] = a3 - b4;
}

/**
 * Forward DCT, quantisation, dequantisation and inverse DCT of the 8x8 block at `o` of a plane `s` wide, in place,
 * column by column after the rows. The inverse skips a column whose AC terms all quantised to 0 (its inverse is its
 * DC term, repeated), and the rows when every column but the first did (each row is then constant). Split in
 * small functions so that V8 inlines each 1-D transform into its loop.
 */
function roundTripBlock(b: Float64Array, o: number, s: number, f: Factors): void {
  fdctRows(b, o, s);
  if (roundTripColumns(b, o, s, f)) idctRows(b, o, s);
  else
    for (let r = 0, i = o; r < 8; r++, i += s) {
      const v = b[i]!;
      for (let c = 1; c < 8; c++) b[i + c] = v;
    }
}

function fdctRows(b: Float64Array, o: number, s: number): void {
  for (let r = 0; r < 8; r++) fdct8(b, o + r * s, 1);
}

function idctRows(b: Float64Array, o: number, s: number): void {
  for (let r = 0; r < 8; r++) idct8(b, o + r * s, 1);
}

/** Each column's forward DCT, quantisation and inverse DCT; whether a column other than the first kept a term. */
function roundTripColumns(b: Float64Array, o: number, s: number, f: Factors): boolean {
  const { fwd, inv } = f;
  let rows = false;
  for (let c = 0; c < 8; c++) {
    fdct8(b, o + c, s);
    // Rounded as Math.round does; the AC terms OR-ed together, without a branch on their (random) signs.
    const dc = Math.floor(b[o + c]! * fwd[c]! + 0.5);
    b[o + c] = dc * inv[c]!;
    let any = 0;
    for (let k = c + 8, i = o + c + s; k < 64; k += 8, i += s) {
      const q = Math.floor(b[i]! * fwd[k]! + 0.5);
      b[i] = q * inv[k]!;
      any |= q;
    }
    if (any !== 0) idct8(b, o + c, s);
    else for (let u = 1, i = o + c + s, v = b[o + c]!; u < 8; u++, i += s) b[i] = v;
    if (c > 0 && (any !== 0 || dc !== 0)) rows = true;
  }
  return rows;
}

/** JFIF's RGB -> YCbCr weights (a caller filling `planes` itself uses the same). */
export const Y_R = 0.299,
  Y_G = 0.587,
  Y_B = 0.114;
export const CB_R = -0.168736,
  CB_G = -0.331264,
  CB_B = 0.5;
export const CR_R = 0.5,
  CR_G = -0.418688,
  CR_B = -0.081312;

/** Puts RGB pictures through JPEG's losses at one quality, band by band of MCU rows; its buffers are reused. */
export class JpegPass {
  /** Height of an MCU row (a band), pixels. */
  readonly mcu: number;
  /** The luma and chroma blocks' factor tables: forward divisors and inverse multipliers, AAN scaling folded in. */
  readonly luma: Factors;
  readonly chroma: Factors;
  /** One band's planes, centred on 0, in raster order: luma `mcu` rows, chroma 8 rows, padded to whole blocks. */
  #y = new Float64Array(0);
  #cb = new Float64Array(0);
  #cr = new Float64Array(0);

  /** Chroma halved both ways (4:2:0). */
  readonly subsample: boolean;

  /** `subsample` halves the chroma both ways (4:2:0); without it every pixel keeps its own colour (4:4:4). */
  constructor(quality: number, subsample = true) {
    this.subsample = subsample;
    this.mcu = subsample ? 16 : 8;
    this.luma = factors(quantTable(LUMA_TABLE, quality));
    this.chroma = factors(quantTable(CHROMA_TABLE, quality));
  }

  /** The whole picture, in place. */
  roundTrip(rgb: Uint8Array, width: number, height: number): void {
    for (let top = 0; top < height; top += this.mcu) this.band(rgb, width, height, top);
  }

  /**
   * The band of MCU rows whose top is `top` (a multiple of `mcu`), in place: to YCbCr (JFIF; chroma averaged over
   * 2x2 when subsampled, edges repeated into the padding), every block's round trip, back to RGB.
   */
  band(rgb: Uint8Array, width: number, height: number, top: number): void {
    const W = Math.ceil(width / this.mcu) * this.mcu;
    this.planes(width);
    if (this.subsample) this.#split420(rgb, width, height, top, W);
    else this.#split444(rgb, width, height, top);
    this.transformBand(rgb, width, height, top);
  }

  /**
   * One band's planes for a picture `width` wide (`stride` values a row: luma `mcu` rows, chroma 8), centred on 0,
   * for a caller that computes the colour conversion itself (as `band` does) before `transformBand`.
   */
  planes(width: number): { y: Float64Array; cb: Float64Array; cr: Float64Array; stride: number } {
    const mcu = this.mcu;
    const W = Math.ceil(width / mcu) * mcu;
    const CW = this.subsample ? W / 2 : W;
    if (this.#y.length !== W * mcu) {
      this.#y = new Float64Array(W * mcu);
      this.#cb = new Float64Array(CW * 8);
      this.#cr = new Float64Array(CW * 8);
    }
    return { y: this.#y, cb: this.#cb, cr: this.#cr, stride: W };
  }

  /** Every block's round trip of the band's planes (filled as `band` does), then back to RGB into `rgb`. */
  transformBand(rgb: Uint8Array, width: number, height: number, top: number): void {
    const mcu = this.mcu;
    const W = Math.ceil(width / mcu) * mcu;
    const CW = this.subsample ? W / 2 : W;
    const Y = this.#y,
      Cb = this.#cb,
      Cr = this.#cr;
    for (let by = 0; by < mcu; by += 8)
      for (let bx = 0; bx < W; bx += 8) roundTripBlock(Y, by * W + bx, W, this.luma);
    for (let bx = 0; bx < CW; bx += 8) {
      roundTripBlock(Cb, bx, CW, this.chroma);
      roundTripBlock(Cr, bx, CW, this.chroma);
    }
    if (this.subsample) this.#merge420(rgb, width, height, top, W);
    else this.#merge444(rgb, width, height, top);
  }

  #split420(rgb: Uint8Array, width: number, height: number, top: number, W: number): void {
    const Y = this.#y,
      Cb = this.#cb,
      Cr = this.#cr;
    const CW = W / 2;
    const last = width - 1;
    for (let cy = 0; cy < 8; cy++) {
      const y0 = Math.min(height - 1, top + 2 * cy),
        y1 = Math.min(height - 1, top + 2 * cy + 1);
      const r0 = y0 * width,
        r1 = y1 * width;
      for (let cx = 0, o = 2 * cy * W; cx < CW; cx++, o += 2) {
        const xa = Math.min(last, 2 * cx),
          xb = Math.min(last, 2 * cx + 1);
        const i = (r0 + xa) * 3,
          j = (r0 + xb) * 3,
          k = (r1 + xa) * 3,
          l = (r1 + xb) * 3;
        const ra = rgb[i]!,
          ga = rgb[i + 1]!,
          ba = rgb[i + 2]!;
        const rb = rgb[j]!,
          gb = rgb[j + 1]!,
          bb = rgb[j + 2]!;
        const rc = rgb[k]!,
          gc = rgb[k + 1]!,
          bc = rgb[k + 2]!;
        const rd = rgb[l]!,
          gd = rgb[l + 1]!,
          bd = rgb[l + 2]!;
        Y[o] = Y_R * ra + Y_G * ga + Y_B * ba - 128;
        Y[o + 1] = Y_R * rb + Y_G * gb + Y_B * bb - 128;
        Y[o + W] = Y_R * rc + Y_G * gc + Y_B * bc - 128;
        Y[o + W + 1] = Y_R * rd + Y_G * gd + Y_B * bd - 128;
        const r = ra + rb + rc + rd,
          g = ga + gb + gc + gd,
          b = ba + bb + bc + bd;
        Cb[cy * CW + cx] = (CB_R * r + CB_G * g + CB_B * b) * 0.25;
        Cr[cy * CW + cx] = (CR_R * r + CR_G * g + CR_B * b) * 0.25;
      }
    }
  }

  #merge420(rgb: Uint8Array, width: number, height: number, top: number, W: number): void {
    const Y = this.#y,
      Cb = this.#cb,
      Cr = this.#cr;
    const CW = W / 2;
    const pairs = width >> 1;
    for (let cy = 0; cy < 8; cy++) {
      const y0 = top + 2 * cy;
      if (y0 >= height) break;
      const both = y0 + 1 < height;
      for (let cx = 0, o = 2 * cy * W; 2 * cx < width; cx++, o += 2) {
        const cb = Cb[cy * CW + cx]! * 0.125,
          cr = Cr[cy * CW + cx]! * 0.125;
        // The +0.5 rounds as the byte store truncates.
        const dr = 1.402 * cr + 128.5,
          dg = -0.344136 * cb - 0.714136 * cr + 128.5,
          db = 1.772 * cb + 128.5;
        const i = (y0 * width + 2 * cx) * 3;
        put(rgb, i, Y[o]! * 0.125, dr, dg, db);
        if (cx < pairs) put(rgb, i + 3, Y[o + 1]! * 0.125, dr, dg, db);
        if (both) {
          const j = i + width * 3;
          put(rgb, j, Y[o + W]! * 0.125, dr, dg, db);
          if (cx < pairs) put(rgb, j + 3, Y[o + W + 1]! * 0.125, dr, dg, db);
        }
      }
    }
  }

  #split444(rgb: Uint8Array, width: number, height: number, top: number): void {
    const Y = this.#y,
      Cb = this.#cb,
      Cr = this.#cr;
    const W = Y.length / 8;
    for (let py = 0; py < 8; py++) {
      const row = Math.min(height - 1, top + py) * width;
      for (let x = 0, o = py * W; x < W; x++, o++) {
        const i = (row + Math.min(width - 1, x)) * 3;
        const r = rgb[i]!,
          g = rgb[i + 1]!,
          b = rgb[i + 2]!;
        Y[o] = Y_R * r + Y_G * g + Y_B * b - 128;
        Cb[o] = CB_R * r + CB_G * g + CB_B * b;
        Cr[o] = CR_R * r + CR_G * g + CR_B * b;
      }
    }
  }

  #merge444(rgb: Uint8Array, width: number, height: number, top: number): void {
    const Y = this.#y,
      Cb = this.#cb,
      Cr = this.#cr;
    const W = Y.length / 8;
    for (let py = 0; py < 8 && top + py < height; py++)
      for (let x = 0, o = py * W, i = (top + py) * width * 3; x < width; x++, o++, i += 3) {
        const cb = Cb[o]! * 0.125,
          cr = Cr[o]! * 0.125;
        put(
          rgb,
          i,
          Y[o]! * 0.125,
          1.402 * cr + 128.5,
          -0.344136 * cb - 0.714136 * cr + 128.5,
          1.772 * cb + 128.5,
        );
      }
  }
}

/** One pixel back to bytes: luma `l` (centred on 0) plus each channel's chroma term, clamped. */
function put(rgb: Uint8Array, i: number, l: number, dr: number, dg: number, db: number): void {
  const r = l + dr,
    g = l + dg,
    b = l + db;
  rgb[i] = r < 0 ? 0 : r > 255 ? 255 : r;
  rgb[i + 1] = g < 0 ? 0 : g > 255 ? 255 : g;
  rgb[i + 2] = b < 0 ? 0 : b > 255 ? 255 : b;
}

/**
 * Puts an RGB picture through JPEG's losses at `quality` (1..100), in place. `subsample` halves the chroma both
 * ways (4:2:0); without it every pixel keeps its own colour (4:4:4).
 */
export function jpegRoundTrip(
  rgb: Uint8Array,
  width: number,
  height: number,
  quality: number,
  subsample = true,
): void {
  new JpegPass(quality, subsample).roundTrip(rgb, width, height);
}

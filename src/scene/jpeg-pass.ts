/**
 * What JPEG compression does to a picture, without the file: colour to YCbCr (JFIF), chroma halved both ways
 * (4:2:0, as the Raspberry Pi's encoder writes), 8x8 DCT, quantisation by the standard tables scaled to a quality
 * (the IJG rule), then back. The entropy coding that a real file adds is lossless, so the pixels match a codec's
 * round trip (test/scene/jpeg-pass.test.ts checks against jpeg-js) at a fraction of its cost: a 640x480 frame in a
 * few milliseconds against about 100 ms for jpeg-js's encode and decode. Browser-safe.
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

/** Divisors for the forward pass and multipliers for the inverse one, folding in the AAN scaling. */
function factors(table: readonly number[]): { fwd: Float32Array; inv: Float32Array } {
  const fwd = new Float32Array(64);
  const inv = new Float32Array(64);
  for (let u = 0; u < 8; u++)
    for (let v = 0; v < 8; v++) {
      const k = u * 8 + v;
      fwd[k] = 1 / (table[k]! * AAN[u]! * AAN[v]! * 8);
      inv[k] = table[k]! * AAN[u]! * AAN[v]!;
    }
  return { fwd, inv };
}

/** In-place forward 8-point DCT (AAN factorisation, unscaled) of b[o], b[o + s], ... b[o + 7 s]. */
function fdct8(b: Float32Array, o: number, s: number): void {
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
function idct8(b: Float32Array, o: number, s: number): void {
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

/** Forward DCT, quantise, dequantise, inverse DCT of every 8x8 block of a plane (padded to whole blocks), in place. */
function roundTripPlane(
  plane: Float32Array,
  stride: number,
  rows: number,
  f: { fwd: Float32Array; inv: Float32Array },
): void {
  const { fwd, inv } = f;
  for (let by = 0; by < rows; by += 8)
    for (let bx = 0; bx < stride; bx += 8) {
      const top = by * stride + bx;
      for (let r = 0; r < 8; r++) fdct8(plane, top + r * stride, 1);
      for (let c = 0; c < 8; c++) fdct8(plane, top + c, stride);
      for (let r = 0, k = 0; r < 8; r++) {
        const o = top + r * stride;
        for (let c = 0; c < 8; c++, k++) plane[o + c] = Math.round(plane[o + c]! * fwd[k]!) * inv[k]!;
      }
      for (let c = 0; c < 8; c++) idct8(plane, top + c, stride);
      for (let r = 0; r < 8; r++) idct8(plane, top + r * stride, 1);
    }
}

const planes = new Map<string, Float32Array[]>();

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
  const cw = subsample ? 16 : 8;
  const W = Math.ceil(width / cw) * cw;
  const H = Math.ceil(height / cw) * cw;
  const CW = subsample ? W / 2 : W;
  const CH = subsample ? H / 2 : H;
  const key = `${W}x${H}x${subsample}`;
  let buffers = planes.get(key);
  if (!buffers) {
    buffers = [new Float32Array(W * H), new Float32Array(CW * CH), new Float32Array(CW * CH)];
    planes.set(key, buffers);
  }
  const [Y, Cb, Cr] = buffers as [Float32Array, Float32Array, Float32Array];
  // To YCbCr centred on 0 (chroma averaged over 2x2 when subsampled); edges repeated into the padding.
  const step = subsample ? 2 : 1;
  const share = subsample ? 0.25 : 1;
  for (let cy = 0; cy < CH; cy++)
    for (let cx = 0; cx < CW; cx++) {
      let cb = 0,
        cr = 0;
      for (let dy = 0; dy < step; dy++) {
        const y = cy * step + dy;
        const row = (y < height ? y : height - 1) * width;
        for (let dx = 0; dx < step; dx++) {
          const x = cx * step + dx;
          const i = (row + (x < width ? x : width - 1)) * 3;
          const r = rgb[i]!,
            g = rgb[i + 1]!,
            b = rgb[i + 2]!;
          Y[y * W + x] = 0.299 * r + 0.587 * g + 0.114 * b - 128;
          cb += -0.168736 * r - 0.331264 * g + 0.5 * b;
          cr += 0.5 * r - 0.418688 * g - 0.081312 * b;
        }
      }
      Cb[cy * CW + cx] = cb * share;
      Cr[cy * CW + cx] = cr * share;
    }
  roundTripPlane(Y, W, H, factors(quantTable(LUMA_TABLE, quality)));
  const chroma = factors(quantTable(CHROMA_TABLE, quality));
  roundTripPlane(Cb, CW, CH, chroma);
  roundTripPlane(Cr, CW, CH, chroma);
  for (let cy = 0; cy < CH; cy++)
    for (let cx = 0; cx < CW; cx++) {
      const cb = Cb[cy * CW + cx]! * 0.125,
        cr = Cr[cy * CW + cx]! * 0.125;
      const dr = 1.402 * cr + 0.5,
        dg = -0.344136 * cb - 0.714136 * cr + 0.5,
        db = 1.772 * cb + 0.5;
      for (let dy = 0; dy < step; dy++) {
        const y = cy * step + dy;
        if (y >= height) break;
        for (let dx = 0; dx < step; dx++) {
          const x = cx * step + dx;
          if (x >= width) break;
          const l = Y[y * W + x]! * 0.125 + 128;
          const i = (y * width + x) * 3;
          const r = l + dr,
            g = l + dg,
            b = l + db;
          rgb[i] = r < 0 ? 0 : r > 255 ? 255 : r;
          rgb[i + 1] = g < 0 ? 0 : g > 255 ? 255 : g;
          rgb[i + 2] = b < 0 ? 0 : b > 255 ? 255 : b;
        }
      }
    }
}

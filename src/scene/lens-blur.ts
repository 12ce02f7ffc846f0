/**
 * The lens's blurs for the camera model (src/scene/camera-model.ts), on linear pictures: focus blur from the aperture
 * and each pixel's depth, and motion blur over the exposure. docs/sensors.md gives the settings and their sources.
 * Browser-safe.
 */
import type { Rect } from './colour.ts';

/** Largest box half-width of the focus blur (a card held a few centimetres from the lens). */
const MAX_BOX = 12;
const MAX_MOTION_TAPS = 24;

/** The focus blur of one picture size, with the buffers it keeps between pictures (its per-row scan). */
export class FocusBlur {
  readonly width: number;
  readonly height: number;
  readonly #sat: Int32Array;
  /** One row's 3-row column sums, per channel (blur3). */
  readonly #columns: Int32Array;
  /** The scan per row: nearest and farthest 1/depth, first and last pixel to blur (-1: none). */
  readonly #rowLo: Float64Array;
  readonly #rowHi: Float64Array;
  readonly #rowFirst: Int32Array;
  readonly #rowLast: Int32Array;

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    this.#sat = new Int32Array((width + 1) * (height + 1) * 3);
    this.#columns = new Int32Array(width * 3);
    this.#rowLo = new Float64Array(height);
    this.#rowHi = new Float64Array(height);
    this.#rowFirst = new Int32Array(height);
    this.#rowLast = new Int32Array(height);
  }

  /**
   * Depth-dependent blur: each pixel becomes the mean of a box as wide as its circle of confusion (radius
   * `k` |1/depth - 1/focus| pixels, a disc matched by variance), read from a summed-area table (from column sums
   * when no box passes 3x3, see blur3). Returns the largest radius, 0 when nothing needed blurring (then `out` is not
   * the picture). With `changed`, `out` holds this blur of a picture that differs from `src` only there: the pixels
   * within a box of it are redone.
   */
  apply(
    src: Uint16Array,
    out: Uint16Array,
    invDepth: Float32Array,
    k: number,
    invFocus: number,
    changed: Rect | undefined,
  ): number {
    const { width, height } = this;
    // One pass: the nearest and farthest depths, and the bounding box of the pixels whose box would be at least
    // 0.05 px wide (the others stay sharp), the only part the summed-area table needs (plus the widest box's reach).
    const sharpBelow = Math.sqrt(((2 * 0.05 + 1) ** 2 - 1) / 3) / k;
    const nearLimit = invFocus + sharpBelow,
      farLimit = invFocus - sharpBelow;
    // Kept per row: with `changed`, the rows outside it are those of the picture the last call scanned.
    const rowLo = this.#rowLo,
      rowHi = this.#rowHi,
      rowFirst = this.#rowFirst,
      rowLast = this.#rowLast;
    const scan0 = changed ? Math.max(0, changed.y0) : 0,
      scan1 = changed ? Math.min(height - 1, changed.y1) : height - 1;
    for (let y = scan0; y <= scan1; y++) {
      let first = -1,
        last = -1,
        lo = Infinity,
        hi = 0;
      for (let x = 0, i = y * width; x < width; x++, i++) {
        const z = invDepth[i]!;
        if (z < lo) lo = z;
        if (z > hi) hi = z;
        if (z <= farLimit || z >= nearLimit) {
          if (first < 0) first = x;
          last = x;
        }
      }
      rowLo[y] = lo;
      rowHi[y] = hi;
      rowFirst[y] = first;
      rowLast[y] = last;
    }
    let lo = Infinity,
      hi = 0;
    let bx0 = width,
      bx1 = -1,
      by0 = height,
      by1 = -1;
    for (let y = 0; y < height; y++) {
      if (rowLo[y]! < lo) lo = rowLo[y]!;
      if (rowHi[y]! > hi) hi = rowHi[y]!;
      const first = rowFirst[y]!;
      if (first < 0) continue;
      if (first < bx0) bx0 = first;
      if (rowLast[y]! > bx1) bx1 = rowLast[y]!;
      if (y < by0) by0 = y;
      by1 = y;
    }
    const maxRadius = k * Math.max(Math.abs(hi - invFocus), Math.abs(lo - invFocus));
    if (maxRadius < 0.25 || bx1 < 0) return 0;
    // How far any box reaches past its pixel: the widest one's half-width (as the loop below rounds it), plus one.
    const reach = Math.floor(Math.min(MAX_BOX, (Math.sqrt(1 + 3 * maxRadius * maxRadius) - 1) / 2)) + 1;
    // The pixels written: all, or those whose box may reach the changed ones.
    let px0 = 0,
      px1 = width - 1,
      py0 = 0,
      py1 = height - 1;
    if (changed) {
      if (changed.x0 > changed.x1 || changed.y0 > changed.y1) return maxRadius;
      px0 = Math.max(0, changed.x0 - reach);
      px1 = Math.min(width - 1, changed.x1 + reach);
      py0 = Math.max(0, changed.y0 - reach);
      py1 = Math.min(height - 1, changed.y1 + reach);
      for (let y = py0; y <= py1; y++)
        out.set(src.subarray((y * width + px0) * 3, (y * width + px1 + 1) * 3), (y * width + px0) * 3);
    } else out.set(src);
    // Blurred: the pixels written within the box of those that need it. The summed-area table spans their boxes:
    // a box never reaches past its pixel by more than `reach`, so it is clamped by the picture's edges only.
    const x0 = Math.max(bx0, px0),
      x1 = Math.min(bx1, px1),
      y0 = Math.max(by0, py0),
      y1 = Math.min(by1, py1);
    if (x0 > x1 || y0 > y1) return maxRadius;
    if (reach === 1) {
      const rows = { first: rowFirst, last: rowLast };
      const lens = { k, invFocus, farLimit, nearLimit };
      blur3(src, out, invDepth, width, height, { x0, y0, x1, y1 }, rows, lens, this.#columns);
      return maxRadius;
    }
    const sx0 = Math.max(0, x0 - reach),
      sx1 = Math.min(width, x1 + reach + 1);
    const sy0 = Math.max(0, y0 - reach),
      sy1 = Math.min(height, y1 + reach + 1);
    const sat = this.#sat;
    const W = width + 1;
    // Summed-area table of the region, per channel, in int32 arithmetic (| 0): its entries wrap modulo 2^32 and
    // differences of them are exact while a box's sum stays below 2^31 (4095 x 27 x 27 at most).
    for (let x = sx0; x <= sx1; x++) for (let c = 0; c < 3; c++) sat[(sy0 * W + x) * 3 + c] = 0;
    for (let y = sy0; y < sy1; y++) {
      let r = 0,
        g = 0,
        b = 0;
      const row = (y + 1) * W * 3;
      // (Row sums stay below 2^31: 4095 x 640.)
      const above = y * W * 3;
      sat[row + sx0 * 3] = sat[row + sx0 * 3 + 1] = sat[row + sx0 * 3 + 2] = 0;
      for (let x = sx0; x < sx1; x++) {
        const i = (y * width + x) * 3;
        r += src[i]!;
        g += src[i + 1]!;
        b += src[i + 2]!;
        const o = row + (x + 1) * 3;
        const a = above + (x + 1) * 3;
        sat[o] = (sat[a]! + r) | 0;
        sat[o + 1] = (sat[a + 1]! + g) | 0;
        sat[o + 2] = (sat[a + 2]! + b) | 0;
      }
    }
    for (let y = y0; y <= y1; y++)
      for (let x = x0; x <= x1; x++) {
        const i = y * width + x;
        const z = invDepth[i]!;
        if (z > farLimit && z < nearLimit) continue;
        const radius = k * Math.abs(z - invFocus);
        // Box half-width whose variance is the disc's: b (b + 1) / 3 = R^2 / 4.
        const half = Math.min(MAX_BOX, (Math.sqrt(1 + 3 * radius * radius) - 1) / 2);
        const o = i * 3;
        const b0 = Math.floor(half);
        const t = half - b0;
        // The two boxes (half-widths b0 and b0 + 1) clamped to the region, their corners' offsets in the table.
        const ix0 = Math.max(0, x - b0),
          ix1 = Math.min(width, x + b0 + 1),
          iy0 = Math.max(0, y - b0),
          iy1 = Math.min(height, y + b0 + 1);
        const ox0 = Math.max(0, x - b0 - 1),
          ox1 = Math.min(width, x + b0 + 2),
          oy0 = Math.max(0, y - b0 - 1),
          oy1 = Math.min(height, y + b0 + 2);
        const ia = (iy1 * W + ix1) * 3,
          ib = (iy0 * W + ix1) * 3,
          ic = (iy1 * W + ix0) * 3,
          id = (iy0 * W + ix0) * 3;
        const oa = (oy1 * W + ox1) * 3,
          ob = (oy0 * W + ox1) * 3,
          oc = (oy1 * W + ox0) * 3,
          od = (oy0 * W + ox0) * 3;
        const iArea = 1 / ((ix1 - ix0) * (iy1 - iy0)),
          oArea = 1 / ((ox1 - ox0) * (oy1 - oy0));
        const ir = ((sat[ia]! - sat[ib]! - sat[ic]! + sat[id]!) | 0) * iArea,
          ig = ((sat[ia + 1]! - sat[ib + 1]! - sat[ic + 1]! + sat[id + 1]!) | 0) * iArea,
          ib_ = ((sat[ia + 2]! - sat[ib + 2]! - sat[ic + 2]! + sat[id + 2]!) | 0) * iArea;
        const or = ((sat[oa]! - sat[ob]! - sat[oc]! + sat[od]!) | 0) * oArea,
          og = ((sat[oa + 1]! - sat[ob + 1]! - sat[oc + 1]! + sat[od + 1]!) | 0) * oArea,
          ob_ = ((sat[oa + 2]! - sat[ob + 2]! - sat[oc + 2]! + sat[od + 2]!) | 0) * oArea;
        out[o] = ir + (or - ir) * t + 0.5;
        out[o + 1] = ig + (og - ig) * t + 0.5;
        out[o + 2] = ib_ + (ob_ - ib_) * t + 0.5;
      }
    return maxRadius;
  }
}

/**
 * The focus blur when every box's half-width is under 1 (`apply`'s `reach` is 1): each pixel of `rect` that needs
 * it (from `rows.first` to `rows.last` on its row) blended between itself and its 3x3 box, the box's sum from column
 * sums: the same integers a summed-area table gives, so the same values, without building one.
 */
function blur3(
  src: Uint16Array,
  out: Uint16Array,
  invDepth: Float32Array,
  width: number,
  height: number,
  rect: Rect,
  rows: { readonly first: Int32Array; readonly last: Int32Array },
  lens: {
    readonly k: number;
    readonly invFocus: number;
    readonly farLimit: number;
    readonly nearLimit: number;
  },
  columns: Int32Array,
): void {
  const { k, invFocus, farLimit, nearLimit } = lens;
  const stride = width * 3;
  for (let y = rect.y0; y <= rect.y1; y++) {
    const first = Math.max(rect.x0, rows.first[y]!),
      last = Math.min(rect.x1, rows.last[y]!);
    if (first < 0 || first > last) continue;
    const top = Math.max(0, y - 1) * stride,
      bottom = Math.min(height - 1, y + 1) * stride,
      middle = y * stride;
    const count = (bottom - top) / stride + 1;
    // Column sums over the box's rows, from one left of the first pixel to one right of the last.
    const c0 = Math.max(0, first - 1) * 3,
      c1 = Math.min(width - 1, last + 1) * 3;
    if (count === 3)
      for (let c = c0; c <= c1 + 2; c++) columns[c] = src[top + c]! + src[middle + c]! + src[bottom + c]!;
    else for (let c = c0; c <= c1 + 2; c++) columns[c] = src[top + c]! + src[bottom + c]!;
    for (let x = first, i = y * width + first; x <= last; x++, i++) {
      const z = invDepth[i]!;
      if (z > farLimit && z < nearLimit) continue;
      const radius = k * Math.abs(z - invFocus);
      // As `apply`: the box half-width whose variance is the disc's, blended between widths 0 and 1.
      const t = Math.min(MAX_BOX, (Math.sqrt(1 + 3 * radius * radius) - 1) / 2);
      const o = i * 3;
      let r = columns[x * 3]!,
        g = columns[x * 3 + 1]!,
        b = columns[x * 3 + 2]!,
        n = 1;
      if (x > 0) {
        r += columns[x * 3 - 3]!;
        g += columns[x * 3 - 2]!;
        b += columns[x * 3 - 1]!;
        n++;
      }
      if (x < width - 1) {
        r += columns[x * 3 + 3]!;
        g += columns[x * 3 + 4]!;
        b += columns[x * 3 + 5]!;
        n++;
      }
      const area = 1 / (n * count);
      const ir = src[o]!,
        ig = src[o + 1]!,
        ib = src[o + 2]!;
      out[o] = ir + (r * area - ir) * t + 0.5;
      out[o + 1] = ig + (g * area - ig) * t + 0.5;
      out[o + 2] = ib + (b * area - ib) * t + 0.5;
    }
  }
}

/**
 * The picture averaged along the path (mx, my) pixels it slid during the exposure, centred on mid-exposure.
 * False (and `out` untouched) when the path is under half a pixel.
 */
export function motionBlur(
  src: Uint16Array,
  out: Uint16Array,
  width: number,
  height: number,
  mx: number,
  my: number,
): boolean {
  const length = Math.hypot(mx, my);
  if (length < 0.5) return false;
  const taps = Math.min(MAX_MOTION_TAPS, Math.ceil(length) + 1);
  const offsets: number[] = [];
  for (let t = 0; t < taps; t++) {
    const f = t / (taps - 1) - 0.5;
    offsets.push(Math.round(mx * f), Math.round(my * f));
  }
  const acc = new Uint32Array(width * 3);
  for (let y = 0; y < height; y++) {
    acc.fill(0);
    for (let t = 0; t < taps; t++) {
      const sy = Math.min(height - 1, Math.max(0, y + offsets[2 * t + 1]!));
      const dx = offsets[2 * t]!;
      const row = sy * width;
      for (let x = 0; x < width; x++) {
        const sx = x + dx < 0 ? 0 : x + dx >= width ? width - 1 : x + dx;
        const s = (row + sx) * 3;
        const a = x * 3;
        acc[a] = acc[a]! + src[s]!;
        acc[a + 1] = acc[a + 1]! + src[s + 1]!;
        acc[a + 2] = acc[a + 2]! + src[s + 2]!;
      }
    }
    const o = y * width * 3;
    for (let a = 0; a < width * 3; a++) out[o + a] = acc[a]! / taps;
  }
  return true;
}

// Over 400 lines: the camera's passes run over one frame's buffers in order; kept together so they stay inlined and cheap.
/**
 * The camera module's physics between the light of the scene (the rasteriser's linear picture) and the bytes a
 * program gets: focus blur from the lens aperture and the depth of each pixel, motion blur over the exposure,
 * radial lens distortion, auto-exposure (exposure time, then gain), photon (shot) and read noise, white balance,
 * the sRGB curve and JPEG's losses. Every setting is in src/config/camera-realism.ts; docs/sensors.md gives their
 * sources. Tables are built once per resolution and setting; the per-pixel work is table look-ups, the distortion
 * map's point samples and a seeded table of Gaussian noise. Browser-safe.
 */
import type { CameraRealism } from '../config/camera-realism.ts';
import type { Frame } from '../core/backend.ts';
import { mulberry32 } from '../core/prng.ts';
import {
  LINEAR_MAX,
  LINEAR_WHITE,
  type LinearImage,
  type Rect,
  kelvinLinear,
  linearToSrgb,
} from './colour.ts';
import { CB_B, CB_G, CB_R, CR_B, CR_G, CR_R, JpegPass, Y_B, Y_G, Y_R } from './jpeg-pass.ts';

/** A setting the model cannot honour, named as the robot config spells it. */
export class RealismError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CaptureConditions {
  /** How fast the picture slides during the exposure, pixels per second (x right, y down). */
  readonly motion?: readonly [number, number];
  /** The room's light relative to its nominal light (1 = as configured). */
  readonly lightLevel?: number;
}

/** What the camera decided for the last frame. */
export interface ExposureReport {
  /** Exposure time, seconds. */
  readonly exposure: number;
  readonly gain: number;
  /** White balance gains (red, green, blue). */
  readonly whiteBalance: readonly [number, number, number];
  /** Motion blur length, pixels. */
  readonly motionBlur: number;
  /** Largest focus blur radius in the picture, pixels. */
  readonly focusBlur: number;
  /** Median distance of what the picture shows, metres (over a sparse grid). */
  readonly medianDepth: number;
}

const NOISE_SIZE = 1 << 16;
/** White balance gains that correct lamps of 2500 .. 8000 K, every 100 K. */
const AWB_CANDIDATES: [number, [number, number, number]][] = Array.from({ length: 56 }, (_, i) => {
  const kelvin = 2500 + 100 * i;
  const [r, , b] = kelvinLinear(kelvin);
  return [kelvin, [1 / r, 1, 1 / b]];
});
/** The undistorted radius (in focal lengths) of a distorted one, by Newton's method on r (1 + k1 r^2 + k2 r^4). */
function undistortRadius(rd: number, k1: number, k2: number): number {
  let ru = rd;
  for (let i = 0; i < 30; i++) {
    const r2 = ru * ru;
    const g = ru * (1 + k1 * r2 + k2 * r2 * r2) - rd;
    const dg = 1 + 3 * k1 * r2 + 5 * k2 * r2 * r2;
    ru -= g / dg;
  }
  return ru;
}

/**
 * Throws a RealismError for settings the camera cannot have: an exposure longer than a frame, or a distortion that
 * folds the picture (r (1 + k1 r^2 + k2 r^4) must keep growing out to the corners). Cheap: a robot config is checked
 * at start, while the model's maps are built on the first realistic frame.
 */
export function checkLens(
  width: number,
  height: number,
  hfovDeg: number,
  fps: number,
  settings: CameraRealism,
): void {
  if (typeof settings.exposure === 'number' && settings.exposure > 1 / fps)
    throw new RealismError(
      'camera.realism.exposure',
      `${settings.exposure} s is longer than a frame (1/${fps} s)`,
    );
  const focal = width / 2 / Math.tan((hfovDeg * Math.PI) / 360);
  const { k1, k2 } = settings;
  const corner = Math.hypot(width / 2, height / 2) / focal;
  const ruCorner = undistortRadius(corner, k1, k2);
  for (let r = 0; r <= ruCorner * 1.001; r += ruCorner / 200) {
    if (1 + 3 * k1 * r * r + 5 * k2 * r ** 4 <= 0.05)
      throw new RealismError(
        'camera.realism.k1',
        `k1 ${k1} and k2 ${k2} fold the picture before its corners`,
      );
  }
  if (!(Math.abs(ruCorner * (1 + k1 * ruCorner ** 2 + k2 * ruCorner ** 4) - corner) < 1e-6))
    throw new RealismError('camera.realism.k1', `k1 ${k1} and k2 ${k2} give no undistorted corner`);
}

/** Largest box half-width of the focus blur (a card held a few centimetres from the lens). */
const MAX_BOX = 12;
const MAX_MOTION_TAPS = 24;

export class CameraModel {
  readonly width: number;
  readonly height: number;
  /** Focal length the scene must be drawn with, pixels (wider than the output's when the lens has barrel distortion). */
  readonly renderFocal: number;
  /** Focal length of the output picture, pixels. */
  readonly focal: number;
  readonly #settings: CameraRealism;
  readonly #maxExposure: number;
  /** Per output pixel: the offset (x 3 channels) of the source pixel nearest to where the lens bends its ray from. */
  readonly #map: Int32Array;
  readonly #noise: Float32Array;
  readonly #sat: Int32Array;
  /** One row's 3-row column sums, per channel (blur3). */
  readonly #columns: Int32Array;
  readonly #work: Uint16Array;
  readonly #work2: Uint16Array;
  readonly #jpeg: JpegPass | undefined;
  /** The light reaching the sensor through the lens (linear levels after the blurs, read through #map). */
  #lens:
    | {
        source: Uint16Array;
        version: number | undefined;
        mx: number;
        my: number;
        src: Uint16Array;
        focusBlur: number;
        /** Whether the motion blur applied. */
        motion: boolean;
        medianDepth: number;
      }
    | undefined;
  /** The focus blur's scan per row: nearest and farthest 1/depth, first and last pixel to blur (-1: none). */
  readonly #rowLo: Float64Array;
  readonly #rowHi: Float64Array;
  readonly #rowFirst: Int32Array;
  readonly #rowLast: Int32Array;
  /** Exposure tables: mean output byte and noise sigma side by side, for each linear input level, per channel. */
  readonly #tone = new Float32Array(2 * 3 * (LINEAR_MAX + 1));
  #tableKey = '';
  #last: ExposureReport | undefined;

  constructor(width: number, height: number, hfovDeg: number, fps: number, settings: CameraRealism) {
    this.width = width;
    this.height = height;
    this.#settings = settings;
    this.#maxExposure = Math.min(settings.maxExposure, 1 / fps);
    checkLens(width, height, hfovDeg, fps, settings);
    this.focal = width / 2 / Math.tan((hfovDeg * Math.PI) / 360);
    const { k1, k2 } = settings;
    const cx = width / 2,
      cy = height / 2;
    const undistort = (rd: number) => undistortRadius(rd, k1, k2);
    // Undistorted position of each output pixel centre, in focal lengths.
    const n = width * height;
    const ux = new Float64Array(n);
    const uy = new Float64Array(n);
    let reach = 1;
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) {
        const xd = (x + 0.5 - cx) / this.focal;
        const yd = (y + 0.5 - cy) / this.focal;
        const rd = Math.hypot(xd, yd);
        const k = rd > 0 ? undistort(rd) / rd : 1;
        const i = y * width + x;
        ux[i] = xd * k;
        uy[i] = yd * k;
        reach = Math.max(
          reach,
          (Math.abs(ux[i]) * this.focal) / (cx - 0.5),
          (Math.abs(uy[i]) * this.focal) / (cy - 0.5),
        );
      }
    // Draw wide enough that every output pixel finds its source inside the drawn picture.
    this.renderFocal = this.focal / reach;
    // A point sample: the picture is drawn at nearly the output's scale, so the nearest pixel is within half a pixel.
    this.#map = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const sx = Math.min(width - 1, Math.max(0, Math.round(cx + ux[i]! * this.renderFocal - 0.5)));
      const sy = Math.min(height - 1, Math.max(0, Math.round(cy + uy[i]! * this.renderFocal - 0.5)));
      this.#map[i] = (sy * width + sx) * 3;
    }
    this.#rowLo = new Float64Array(height);
    this.#rowHi = new Float64Array(height);
    this.#rowFirst = new Int32Array(height);
    this.#rowLast = new Int32Array(height);
    // Gaussian noise table (Box-Muller from the seeded PRNG).
    const rand = mulberry32(settings.seed);
    this.#noise = new Float32Array(NOISE_SIZE);
    for (let i = 0; i < NOISE_SIZE; i += 2) {
      const r = Math.sqrt(-2 * Math.log(1 - rand()));
      const t = 2 * Math.PI * rand();
      this.#noise[i] = r * Math.cos(t);
      this.#noise[i + 1] = r * Math.sin(t);
    }
    this.#sat = new Int32Array((width + 1) * (height + 1) * 3);
    this.#columns = new Int32Array(width * 3);
    this.#work = new Uint16Array(n * 3);
    this.#work2 = new Uint16Array(n * 3);
    this.#jpeg = settings.jpegQuality > 0 ? new JpegPass(settings.jpegQuality) : undefined;
  }

  /** What the camera decided for the last frame (undefined before the first). */
  get lastExposure(): ExposureReport | undefined {
    return this.#last;
  }

  /** The exposure time the next frame of this picture would get, seconds (for the motion blur's length). */
  exposureFor(image: LinearImage, lightLevel = 1): number {
    return this.#autoExposure(this.#meter(image.rgb), lightLevel).exposure;
  }

  /** Turns the scene's light into the frame a program receives; `frameIndex` picks the noise. */
  capture(image: LinearImage, frameIndex: number, conditions: CaptureConditions = {}): Frame {
    const { width, height } = this;
    if (image.width !== width || image.height !== height)
      throw new RangeError('image size differs from the camera');
    const s = this.#settings;
    const light = conditions.lightLevel ?? 1;
    const means = this.#meter(image.rgb);
    const { exposure, gain } = this.#autoExposure(means, light);
    const wb = this.#whiteBalance(means);
    const [vx, vy] = conditions.motion ?? [0, 0];
    const mx = vx * exposure,
      my = vy * exposure;
    // The light reaching each sensor pixel (lens blurs, then the distortion map) is kept while the picture, its
    // motion and the exposure time stay: a still view only draws new noise.
    let lens = this.#lens;
    const still =
      lens !== undefined &&
      image.version !== undefined &&
      lens.source === image.rgb &&
      lens.version === image.version &&
      lens.mx === mx &&
      lens.my === my;
    if (!still) {
      // Only a rectangle changed since the picture the lens holds (no motion blur then or now): the focus blur is
      // redone where it reaches, the same values as in full (the map reads the picture as each frame develops).
      const changed =
        lens !== undefined &&
        image.changed !== undefined &&
        lens.source === image.rgb &&
        lens.version === image.changed.since &&
        lens.mx === mx &&
        lens.my === my &&
        !lens.motion
          ? image.changed.rect
          : undefined;
      // Lens: focus blur (depth of each pixel), then motion blur over the exposure.
      let src = image.rgb;
      const aperture = s.focalLengthMm / 1000 / s.fNumber;
      // The blur in part needs the last picture's blur in #work.
      const blurChanged = changed && lens!.src === this.#work ? changed : undefined;
      const blur = this.#focusBlur(
        src,
        this.#work,
        image.invDepth,
        (aperture * image.focal) / 2,
        1 / s.focusDistance,
        blurChanged,
      );
      if (blur > 0) src = this.#work;
      const out = src === this.#work ? this.#work2 : this.#work;
      const motion = motionBlur(src, out, width, height, mx, my);
      if (motion) src = out;
      lens = this.#lens = {
        source: image.rgb,
        version: image.version,
        mx,
        my,
        src,
        focusBlur: blur,
        motion,
        medianDepth: this.#medianDepth(image.invDepth),
      };
    }
    // Sensor and processing, band by band so the JPEG pass finds the rows still in cache.
    this.#tables(exposure, gain, wb, light);
    const rgb = new Uint8Array(width * height * 3);
    const rowRand = mulberry32((s.seed * 7919 + frameIndex * 104729) >>> 0);
    const jpeg = this.#jpeg;
    const band = jpeg ? jpeg.mcu : height;
    // 4:2:0 in whole MCUs: the exposure's bytes go straight into JPEG's colour planes, as the pass would compute them.
    const direct = jpeg !== undefined && jpeg.subsample && width % 16 === 0 && height % 16 === 0;
    for (let top = 0; top < height; top += band) {
      const bottom = Math.min(height, top + band);
      if (jpeg && direct) {
        this.#develop420(lens!.src, jpeg, rowRand, top);
        jpeg.transformBand(rgb, width, height, top);
      } else {
        this.#develop(lens!.src, rgb, rowRand, top, bottom);
        jpeg?.band(rgb, width, height, top);
      }
    }
    this.#last = {
      exposure,
      gain,
      whiteBalance: wb,
      motionBlur: Math.hypot(mx, my),
      focusBlur: lens!.focusBlur,
      medianDepth: lens!.medianDepth,
    };
    return { width, height, rgb };
  }

  /** Mean linear level per channel over a sparse grid (what the ISP's statistics see). */
  #meter(rgb: Uint16Array): [number, number, number] {
    const { width, height } = this;
    let r = 0,
      g = 0,
      b = 0,
      n = 0;
    for (let y = 2; y < height; y += 8)
      for (let x = 3; x < width; x += 8) {
        const i = (y * width + x) * 3;
        r += rgb[i]!;
        g += rgb[i + 1]!;
        b += rgb[i + 2]!;
        n++;
      }
    return [r / n / LINEAR_WHITE, g / n / LINEAR_WHITE, b / n / LINEAR_WHITE];
  }

  #medianDepth(invDepth: Float32Array): number {
    const { width, height } = this;
    const samples: number[] = [];
    for (let y = 4; y < height; y += 16)
      for (let x = 4; x < width; x += 16) samples.push(invDepth[y * width + x]!);
    samples.sort((a, b) => a - b);
    const z = samples[samples.length >> 1]!;
    return z > 0 ? 1 / z : Infinity;
  }

  /** Exposure time first (up to its limit), then gain, to bring the mean to the target. */
  #autoExposure(means: readonly number[], light: number): { exposure: number; gain: number } {
    const s = this.#settings;
    if (s.exposure !== 'auto') return { exposure: s.exposure, gain: 1 };
    const level = Math.max(1e-4, (0.299 * means[0]! + 0.587 * means[1]! + 0.114 * means[2]!) * light);
    // Output = level x (t / saturationExposure) x gain: the product that reaches the target.
    const needed = (s.exposureTarget / level) * s.saturationExposure;
    const exposure = Math.min(this.#maxExposure, Math.max(1e-5, needed));
    const gain = Math.min(s.maxGain, Math.max(1, needed / exposure));
    return { exposure, gain };
  }

  #whiteBalance(means: readonly number[]): [number, number, number] {
    const s = this.#settings;
    if (s.whiteBalance !== 'auto') {
      const [r, , b] = kelvinLinear(s.whiteBalance);
      return [1 / r, 1, 1 / b];
    }
    // Grey world along the lamps' curve: the lamp temperature (2500..8000 K) whose correction brings the picture's
    // average nearest to grey. A picture of one colour is thus not turned grey, as the ISP's AWB does not either.
    const g = Math.max(1e-4, means[1]!);
    const lr = Math.log(Math.max(1e-4, means[0]!) / g);
    const lb = Math.log(Math.max(1e-4, means[2]!) / g);
    let best: [number, number, number] = [1, 1, 1];
    let bestError = Infinity;
    for (const [, gains] of AWB_CANDIDATES) {
      const error = (lr + Math.log(gains[0])) ** 2 + (lb + Math.log(gains[2])) ** 2;
      if (error < bestError) {
        bestError = error;
        best = gains;
      }
    }
    return best;
  }

  /** Mean output byte and its noise for every linear level, per channel (rebuilt when the exposure changes). */
  #tables(exposure: number, gain: number, wb: readonly number[], light: number): void {
    const s = this.#settings;
    const electronsPerLevel = (light * exposure * s.wellElectrons) / (s.saturationExposure * LINEAR_WHITE);
    // Tables are reused while the exposure moves by under 1/64 of a stop and the balance by under 1 %.
    const key = [
      Math.round(Math.log2(electronsPerLevel) * 64),
      Math.round(Math.log2(gain) * 64),
      Math.round(wb[0]! * 100),
      Math.round(wb[2]! * 100),
    ].join();
    if (key === this.#tableKey) return;
    this.#tableKey = key;
    const W = s.wellElectrons;
    const read2 = s.readNoiseElectrons ** 2;
    for (let c = 0; c < 3; c++) {
      const k = (gain * wb[c]!) / W;
      for (let v = 0; v <= LINEAR_MAX; v++) {
        const e = Math.min(W, v * electronsPerLevel);
        const y = e * k;
        const i = c * (LINEAR_MAX + 1) + v;
        if (y >= 1 || e >= W) {
          this.#tone[2 * i] = 255;
          this.#tone[2 * i + 1] = 0;
          continue;
        }
        const sy = Math.sqrt(e + read2) * k;
        const mean = 255 * linearToSrgb(y);
        // The noise through the sRGB curve: its slope at y (finite difference).
        const slope = (255 * linearToSrgb(Math.min(1, y + sy)) - mean) / Math.max(sy, 1e-9);
        this.#tone[2 * i] = mean + 0.5;
        this.#tone[2 * i + 1] = sy * slope;
      }
    }
  }

  /** Exposure tables and noise: the light of `src` through the lens's map -> output bytes, rows `top` to `bottom` - 1. */
  #develop(src: Uint16Array, out: Uint8Array, rowRand: () => number, top: number, bottom: number): void {
    const { width } = this;
    const map = this.#map;
    const tone = this.#tone,
      noise = this.#noise;
    const G = 2 * (LINEAR_MAX + 1),
      B = 4 * (LINEAR_MAX + 1);
    const mask = NOISE_SIZE - 1;
    for (let y = top; y < bottom; y++) {
      let k = (rowRand() * NOISE_SIZE) | 0;
      for (let i = y * width, o = i * 3, end = o + width * 3; o < end; i++, o += 3) {
        const s = map[i]!;
        const tr = 2 * src[s]!,
          tg = G + 2 * src[s + 1]!,
          tb = B + 2 * src[s + 2]!;
        const vr = tone[tr]! + tone[tr + 1]! * noise[k++ & mask]!;
        const vg = tone[tg]! + tone[tg + 1]! * noise[k++ & mask]!;
        const vb = tone[tb]! + tone[tb + 1]! * noise[k++ & mask]!;
        out[o] = vr < 0 ? 0 : vr > 255 ? 255 : vr;
        out[o + 1] = vg < 0 ? 0 : vg > 255 ? 255 : vg;
        out[o + 2] = vb < 0 ? 0 : vb > 255 ? 255 : vb;
      }
    }
  }

  /**
   * #develop then the JPEG pass's colour split for the band at `top` (4:2:0, whole MCUs), without the bytes in
   * between: the same noise draws, the same bytes, the same YCbCr values (bit for bit) in the pass's planes.
   */
  #develop420(src: Uint16Array, jpeg: JpegPass, rowRand: () => number, top: number): void {
    const { width } = this;
    const map = this.#map;
    const tone = this.#tone,
      noise = this.#noise;
    const G = 2 * (LINEAR_MAX + 1),
      B = 4 * (LINEAR_MAX + 1);
    const mask = NOISE_SIZE - 1;
    const { y: Y, cb: Cb, cr: Cr, stride: W } = jpeg.planes(width);
    const CW = W / 2;
    for (let cy = 0; cy < 8; cy++) {
      // One noise offset per row, drawn in row order as #develop draws them.
      let k0 = (rowRand() * NOISE_SIZE) | 0;
      let k1 = (rowRand() * NOISE_SIZE) | 0;
      for (
        let cx = 0, i = (top + 2 * cy) * width, p = 2 * cy * W, c = cy * CW;
        cx < CW;
        cx++, i += 2, p += 2, c++
      ) {
        // The four pixels' sources: a and b on this row, c and d below them.
        const sa = map[i]!,
          sb = map[i + 1]!,
          sc = map[i + width]!,
          sd = map[i + width + 1]!;
        let t = 2 * src[sa]!;
        const ra = toByte(tone[t]! + tone[t + 1]! * noise[k0++ & mask]!);
        t = G + 2 * src[sa + 1]!;
        const ga = toByte(tone[t]! + tone[t + 1]! * noise[k0++ & mask]!);
        t = B + 2 * src[sa + 2]!;
        const ba = toByte(tone[t]! + tone[t + 1]! * noise[k0++ & mask]!);
        t = 2 * src[sb]!;
        const rb = toByte(tone[t]! + tone[t + 1]! * noise[k0++ & mask]!);
        t = G + 2 * src[sb + 1]!;
        const gb = toByte(tone[t]! + tone[t + 1]! * noise[k0++ & mask]!);
        t = B + 2 * src[sb + 2]!;
        const bb = toByte(tone[t]! + tone[t + 1]! * noise[k0++ & mask]!);
        t = 2 * src[sc]!;
        const rc = toByte(tone[t]! + tone[t + 1]! * noise[k1++ & mask]!);
        t = G + 2 * src[sc + 1]!;
        const gc = toByte(tone[t]! + tone[t + 1]! * noise[k1++ & mask]!);
        t = B + 2 * src[sc + 2]!;
        const bc = toByte(tone[t]! + tone[t + 1]! * noise[k1++ & mask]!);
        t = 2 * src[sd]!;
        const rd = toByte(tone[t]! + tone[t + 1]! * noise[k1++ & mask]!);
        t = G + 2 * src[sd + 1]!;
        const gd = toByte(tone[t]! + tone[t + 1]! * noise[k1++ & mask]!);
        t = B + 2 * src[sd + 2]!;
        const bd = toByte(tone[t]! + tone[t + 1]! * noise[k1++ & mask]!);
        Y[p] = Y_R * ra + Y_G * ga + Y_B * ba - 128;
        Y[p + 1] = Y_R * rb + Y_G * gb + Y_B * bb - 128;
        Y[p + W] = Y_R * rc + Y_G * gc + Y_B * bc - 128;
        Y[p + W + 1] = Y_R * rd + Y_G * gd + Y_B * bd - 128;
        const r = ra + rb + rc + rd,
          g = ga + gb + gc + gd,
          b = ba + bb + bc + bd;
        Cb[c] = (CB_R * r + CB_G * g + CB_B * b) * 0.25;
        Cr[c] = (CR_R * r + CR_G * g + CR_B * b) * 0.25;
      }
    }
  }

  /**
   * Depth-dependent blur: each pixel becomes the mean of a box as wide as its circle of confusion (radius
   * `k` |1/depth - 1/focus| pixels, a disc matched by variance), read from a summed-area table (from column sums
   * when no box passes 3x3, see blur3). Returns the largest radius, 0 when nothing needed blurring (then `out` is not
   * the picture). With `changed`,
   * `out` holds this blur of a picture that differs from `src` only there: the pixels within a box of it are redone.
   */
  #focusBlur(
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
 * The focus blur when every box's half-width is under 1 (#focusBlur's `reach` is 1): each pixel of `rect` that needs
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
      // As #focusBlur: the box half-width whose variance is the disc's, blended between widths 0 and 1.
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

/** A developed level as the byte a Uint8Array would store: clamped, then truncated (the tables add the 0.5). */
function toByte(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : v | 0;
}

/**
 * The picture averaged along the path (mx, my) pixels it slid during the exposure, centred on mid-exposure.
 * False (and `out` untouched) when the path is under half a pixel.
 */
function motionBlur(
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

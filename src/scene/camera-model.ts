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
import { LINEAR_MAX, LINEAR_WHITE, type LinearImage, kelvinLinear, linearToSrgb } from './colour.ts';
import { CB_B, CB_G, CB_R, CR_B, CR_G, CR_R, JpegPass, Y_B, Y_G, Y_R } from './jpeg-pass.ts';
import { FrameKernels } from './frame-kernels.ts';
import { FocusBlur, motionBlur } from './lens-blur.ts';

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
  readonly #work: Uint16Array;
  readonly #work2: Uint16Array;
  readonly #jpeg: JpegPass | undefined;
  /** The develop and JPEG passes in WebAssembly (4:2:0 in whole MCUs), holding the buffers above. */
  readonly #kernels: FrameKernels | undefined;
  /** The light reaching the sensor through the lens (linear levels after the blurs, read through #map). */
  #lens:
    | {
        source: Uint16Array;
        version: number | undefined;
        mx: number;
        my: number;
        src: Uint16Array;
        /** `src`, or its copy in the kernels' memory. */
        read: Uint16Array;
        focusBlur: number;
        /** Whether the motion blur applied. */
        motion: boolean;
        medianDepth: number;
      }
    | undefined;
  readonly #focus: FocusBlur;
  /** Exposure tables: mean output byte and noise sigma side by side, for each linear input level, per channel. */
  readonly #tone: Float32Array;
  #tableKey = '';
  #last: ExposureReport | undefined;

  /** `webAssembly: false` keeps every pass in JavaScript (the same bytes; tests compare the two). */
  constructor(
    width: number,
    height: number,
    hfovDeg: number,
    fps: number,
    settings: CameraRealism,
    options: { webAssembly?: boolean } = {},
  ) {
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
    this.#jpeg = settings.jpegQuality > 0 ? new JpegPass(settings.jpegQuality) : undefined;
    const jpeg = this.#jpeg;
    this.#kernels =
      jpeg && jpeg.subsample && width % 16 === 0 && height % 16 === 0 && options.webAssembly !== false
        ? new FrameKernels(width, height, NOISE_SIZE, jpeg.luma, jpeg.chroma)
        : undefined;
    const k = this.#kernels;
    this.#map = k?.map ?? new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const sx = Math.min(width - 1, Math.max(0, Math.round(cx + ux[i]! * this.renderFocal - 0.5)));
      const sy = Math.min(height - 1, Math.max(0, Math.round(cy + uy[i]! * this.renderFocal - 0.5)));
      this.#map[i] = (sy * width + sx) * 3;
    }
    // Gaussian noise table (Box-Muller from the seeded PRNG).
    const rand = mulberry32(settings.seed);
    this.#noise = k?.noise ?? new Float32Array(NOISE_SIZE);
    for (let i = 0; i < NOISE_SIZE; i += 2) {
      const r = Math.sqrt(-2 * Math.log(1 - rand()));
      const t = 2 * Math.PI * rand();
      this.#noise[i] = r * Math.cos(t);
      this.#noise[i + 1] = r * Math.sin(t);
    }
    this.#focus = new FocusBlur(width, height);
    this.#work = k?.work ?? new Uint16Array(n * 3);
    this.#work2 = k?.work2 ?? new Uint16Array(n * 3);
    this.#tone = k?.tone ?? new Float32Array(2 * 3 * (LINEAR_MAX + 1));
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
      const blur = this.#focus.apply(
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
      const k = this.#kernels;
      let read = src;
      if (k && !k.holds(src)) {
        k.source.set(src);
        read = k.source;
      }
      lens = this.#lens = {
        source: image.rgb,
        version: image.version,
        mx,
        my,
        src,
        read,
        focusBlur: blur,
        motion,
        medianDepth: this.#medianDepth(image.invDepth),
      };
    }
    // Sensor and processing, band by band so the JPEG pass finds the rows still in cache.
    this.#tables(exposure, gain, wb, light);
    const kernels = this.#kernels;
    let rgb = kernels ? kernels.rgb : new Uint8Array(width * height * 3);
    const rowRand = mulberry32((s.seed * 7919 + frameIndex * 104729) >>> 0);
    const jpeg = this.#jpeg;
    const band = jpeg ? jpeg.mcu : height;
    // 4:2:0 in whole MCUs: the exposure's bytes go straight into JPEG's colour planes, as the pass would compute them.
    const direct = jpeg !== undefined && jpeg.subsample && width % 16 === 0 && height % 16 === 0;
    for (let top = 0; top < height; top += band) {
      const bottom = Math.min(height, top + band);
      if (kernels) {
        // One noise offset per row, in row order as #develop draws them.
        for (let r = 0; r < 16; r++) kernels.rows[r] = (rowRand() * NOISE_SIZE) | 0;
        kernels.band(lens!.read, top);
      } else if (jpeg && direct) {
        this.#develop420(lens!.src, jpeg, rowRand, top);
        jpeg.transformBand(rgb, width, height, top);
      } else {
        this.#develop(lens!.src, rgb, rowRand, top, bottom);
        jpeg?.band(rgb, width, height, top);
      }
    }
    if (kernels) rgb = rgb.slice();
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
        out[o] = developed(tone, tr, noise[k++ & mask]!);
        out[o + 1] = developed(tone, tg, noise[k++ & mask]!);
        out[o + 2] = developed(tone, tb, noise[k++ & mask]!);
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
        const ra = developed(tone, 2 * src[sa]!, noise[k0++ & mask]!);
        const ga = developed(tone, G + 2 * src[sa + 1]!, noise[k0++ & mask]!);
        const ba = developed(tone, B + 2 * src[sa + 2]!, noise[k0++ & mask]!);
        const rb = developed(tone, 2 * src[sb]!, noise[k0++ & mask]!);
        const gb = developed(tone, G + 2 * src[sb + 1]!, noise[k0++ & mask]!);
        const bb = developed(tone, B + 2 * src[sb + 2]!, noise[k0++ & mask]!);
        const rc = developed(tone, 2 * src[sc]!, noise[k1++ & mask]!);
        const gc = developed(tone, G + 2 * src[sc + 1]!, noise[k1++ & mask]!);
        const bc = developed(tone, B + 2 * src[sc + 2]!, noise[k1++ & mask]!);
        const rd = developed(tone, 2 * src[sd]!, noise[k1++ & mask]!);
        const gd = developed(tone, G + 2 * src[sd + 1]!, noise[k1++ & mask]!);
        const bd = developed(tone, B + 2 * src[sd + 2]!, noise[k1++ & mask]!);
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
}

/** A developed level as the byte a Uint8Array would store: clamped, then truncated (the tables add the 0.5). */
/** One channel's byte: the exposure table's mean and noise sigma (at `t`) for its level, with a noise draw, clamped. */
function developed(tone: Float32Array, t: number, noise: number): number {
  const v = tone[t]! + tone[t + 1]! * noise;
  return v < 0 ? 0 : v > 255 ? 255 : v | 0;
}

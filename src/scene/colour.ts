/**
 * Colour helpers shared by the room, the rasteriser and the camera model: sRGB <-> linear, lamp colours, and the
 * linear picture they pass along (no three.js here: the camera model loads without the renderer).
 */

/** Linear light of white paper facing a lamp of intensity 1 at the rasteriser's reference distance. */
export const LINEAR_WHITE = 1024;
/** Brightest linear value stored (a lamp panel, a window): 4x white. */
export const LINEAR_MAX = 4095;

/** The physical picture: linear RGB (LINEAR_WHITE = white paper) and 1/depth (1/m, 0 = nothing) per pixel. */
export interface LinearImage {
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint16Array;
  readonly invDepth: Float32Array;
  /** Focal length it was drawn with, pixels. */
  readonly focal: number;
  /** Same version from the same rasteriser, same pixels (a still scene is not drawn again); none: unknown. */
  readonly version?: number;
  /** Only this rectangle (pixels, inclusive) differs from version `since` of the same buffers; none: anything may. */
  readonly changed?: { readonly since: number; readonly rect: Rect };
}

/** A rectangle of pixels, bounds inclusive (empty when x0 > x1 or y0 > y1). */
export interface Rect {
  readonly x0: number;
  readonly y0: number;
  readonly x1: number;
  readonly y1: number;
}

/** sRGB-encoded 0..1 to linear 0..1 (IEC 61966-2-1). */
export function srgbToLinear(c: number): number {
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** Linear 0..1 to sRGB-encoded 0..1. */
export function linearToSrgb(c: number): number {
  return c <= 0.0031308 ? c * 12.92 : 1.055 * c ** (1 / 2.4) - 0.055;
}

/** Blackbody colours (sRGB bytes, brightest channel 255) by temperature: the usual published table, rounded. */
const BLACKBODY: readonly (readonly [number, number, number, number])[] = [
  [1000, 255, 56, 0],
  [1500, 255, 109, 0],
  [2000, 255, 137, 18],
  [2500, 255, 161, 72],
  [3000, 255, 180, 107],
  [3500, 255, 196, 137],
  [4000, 255, 209, 163],
  [4500, 255, 219, 186],
  [5000, 255, 228, 206],
  [5500, 255, 236, 224],
  [6000, 255, 243, 239],
  [6500, 255, 249, 253],
  [7000, 245, 243, 255],
  [8000, 227, 233, 255],
  [10000, 204, 219, 255],
  [15000, 181, 205, 255],
  [20000, 170, 199, 255],
];

/** Linear RGB of a lamp of `kelvin`, scaled so that its green channel is 1 (white balance keeps green fixed). */
export function kelvinLinear(kelvin: number): [number, number, number] {
  const k = Math.min(20000, Math.max(1000, kelvin));
  let i = 0;
  while (i < BLACKBODY.length - 2 && BLACKBODY[i + 1]![0] < k) i++;
  const a = BLACKBODY[i]!;
  const b = BLACKBODY[i + 1]!;
  const t = (k - a[0]) / (b[0] - a[0]);
  const lin = [1, 2, 3].map((c) => srgbToLinear((a[c]! + (b[c]! - a[c]!) * t) / 255));
  const g = Math.max(lin[1]!, 1e-3);
  return [lin[0]! / g, 1, lin[2]! / g];
}

/**
 * The clean picture's optional effects (src/scene/rasterizer.ts `render`): blur and seeded noise on sRGB bytes, so
 * tests can make frames harder. The realistic camera's effects are the camera model's (src/scene/camera-model.ts).
 */

export interface ImageEffects {
  /** Multiplies the light (1 = as lit). */
  readonly exposure?: number;
  /** Box blur radius in pixels (0 = sharp). */
  readonly blur?: number;
  /** Standard deviation of the added noise, grey levels (0 = none). */
  readonly noise?: number;
  /** Seed of the noise (same seed, same frame). */
  readonly seed?: number;
}

/** Separable box blur of radius r on an RGB image, in place. */
export function boxBlur(rgb: Uint8Array, width: number, height: number, r: number): void {
  const tmp = new Float32Array(rgb.length);
  const size = 2 * r + 1;
  for (let y = 0; y < height; y++) {
    for (let k = 0; k < 3; k++) {
      let sum = 0;
      const row = y * width;
      for (let x = -r; x <= r; x++) sum += rgb[(row + clamp(x, 0, width - 1)) * 3 + k]!;
      for (let x = 0; x < width; x++) {
        tmp[(row + x) * 3 + k] = sum / size;
        sum +=
          rgb[(row + clamp(x + r + 1, 0, width - 1)) * 3 + k]! -
          rgb[(row + clamp(x - r, 0, width - 1)) * 3 + k]!;
      }
    }
  }
  for (let x = 0; x < width; x++) {
    for (let k = 0; k < 3; k++) {
      let sum = 0;
      for (let y = -r; y <= r; y++) sum += tmp[(clamp(y, 0, height - 1) * width + x) * 3 + k]!;
      for (let y = 0; y < height; y++) {
        rgb[(y * width + x) * 3 + k] = Math.round(sum / size);
        sum +=
          tmp[(clamp(y + r + 1, 0, height - 1) * width + x) * 3 + k]! -
          tmp[(clamp(y - r, 0, height - 1) * width + x) * 3 + k]!;
      }
    }
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** Adds zero-mean noise of standard deviation `sigma` (sum of three uniforms), seeded. */
export function addNoise(rgb: Uint8Array, sigma: number, seed: number): void {
  let state = seed >>> 0 || 1;
  // xorshift32: fast and good enough for image noise.
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
  const scale = sigma * 2; // three uniforms in [-0.5, 0.5) sum to a variance of 1/4
  for (let i = 0; i < rgb.length; i++) {
    const v = rgb[i]! + (next() + next() + next() - 1.5) * scale;
    rgb[i] = v < 0 ? 0 : v > 255 ? 255 : v;
  }
}

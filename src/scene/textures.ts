/**
 * Procedural textures of the room (wood, tiles, paint, pictures), drawn from a seeded PRNG so every run gets the
 * same room. RGBA data textures, rows bottom-up as three.js lays them out. Browser-safe.
 */
import * as THREE from 'three';
import { mulberry32 } from '../core/prng.ts';

export type Rgb = readonly [number, number, number];

export function hexRgb(hex: string): Rgb {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** A texture from a function of the pixel (x right, y up), repeating when `repeat`. */
export function proceduralTexture(
  width: number,
  height: number,
  pixel: (x: number, y: number) => Rgb,
  repeat = false,
): THREE.DataTexture {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      const o = (y * width + x) * 4;
      data[o] = clampByte(r);
      data[o + 1] = clampByte(g);
      data[o + 2] = clampByte(b);
      data[o + 3] = 255;
    }
  const texture = new THREE.DataTexture(data, width, height, THREE.RGBAFormat);
  texture.colorSpace = THREE.SRGBColorSpace;
  texture.magFilter = THREE.LinearFilter;
  if (repeat) texture.wrapS = texture.wrapT = THREE.RepeatWrapping;
  texture.needsUpdate = true;
  return texture;
}

function clampByte(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : Math.round(v);
}

function shade(c: Rgb, k: number): Rgb {
  return [c[0] * k, c[1] * k, c[2] * k];
}

/** Smooth 1-D value noise over a period of `cells`, from a table of random values. */
function noise1(rand: () => number, cells: number): (t: number) => number {
  const values = Array.from({ length: cells }, () => rand());
  return (t) => {
    const x = (((t % cells) + cells) % cells) as number;
    const i = Math.floor(x);
    const f = x - i;
    const s = f * f * (3 - 2 * f);
    return values[i]! * (1 - s) + values[(i + 1) % cells]! * s;
  };
}

/** Floor boards along x: each plank its own tone, grain lines along it, dark joints. 256x256, one tile = 1 m. */
export function planksTexture(base: Rgb, seed = 11): THREE.DataTexture {
  const rand = mulberry32(seed);
  const planks = 8;
  const tones = Array.from({ length: planks }, () => 0.82 + rand() * 0.3);
  const offsets = Array.from({ length: planks }, () => Math.floor(rand() * 256));
  const grain = noise1(rand, 64);
  return proceduralTexture(
    256,
    256,
    (x, y) => {
      const p = Math.floor(y / 32);
      const yy = y % 32;
      const xx = (x + offsets[p]!) % 256;
      if (yy === 0 || xx === 0) return shade(base, 0.45);
      const g = grain(yy * 0.9 + xx * 0.04 + p * 7) * 0.18 + grain(xx * 0.25 + p * 3) * 0.08;
      return shade(base, tones[p]! * (0.9 + g));
    },
    true,
  );
}

/** Square floor tiles with grout, 256x256 = 4 tiles. */
export function tilesTexture(base: Rgb, seed = 12): THREE.DataTexture {
  const rand = mulberry32(seed);
  const tones = Array.from({ length: 4 }, () => 0.9 + rand() * 0.15);
  return proceduralTexture(
    256,
    256,
    (x, y) => {
      if (x % 128 < 3 || y % 128 < 3) return [200, 200, 195];
      return shade(base, tones[(x >> 7) + 2 * (y >> 7)]! * (0.97 + 0.06 * rand()));
    },
    true,
  );
}

/** Wood grain for a table top: 256x128, rings along x. */
export function woodTexture(base: Rgb, seed = 13): THREE.DataTexture {
  const rand = mulberry32(seed);
  const wobble = noise1(rand, 32);
  const fine = noise1(rand, 128);
  return proceduralTexture(256, 128, (x, y) => {
    const ring = Math.sin((y + wobble(x / 24) * 18) * 0.45) * 0.5 + 0.5;
    return shade(base, 0.82 + ring * 0.16 + (fine(y * 1.7 + x * 0.05) - 0.5) * 0.1);
  });
}

/** A suspended ceiling: square panels with a faint speckle in a metal grid. 128x128 = one 0.6 m panel. */
export function ceilingTexture(base: Rgb, seed = 17): THREE.DataTexture {
  const rand = mulberry32(seed);
  return proceduralTexture(
    128,
    128,
    (x, y) => {
      if (x < 3 || y < 3) return shade(base, 0.7);
      return shade(base, rand() < 0.04 ? 0.86 : 0.98);
    },
    true,
  );
}

/** A view through a window: sky fading to a row of trees and a lawn. 128x96. */
export function windowTexture(seed = 15): THREE.DataTexture {
  const rand = mulberry32(seed);
  const skyline = noise1(rand, 16);
  return proceduralTexture(128, 96, (x, y) => {
    const top = 34 + skyline(x / 8) * 26;
    if (y < 22) return [96 + (y % 5) * 3, 140 + (x % 7), 80];
    if (y < top) return [58 + skyline(x / 3) * 30, 96 + skyline(x / 5) * 40, 52];
    const t = (y - top) / (96 - top);
    return [170 + 40 * t, 205 + 25 * t, 240];
  });
}

/** A whiteboard with a few coloured strokes and a grid of boxes drawn on it. 128x96. */
export function whiteboardTexture(seed = 16): THREE.DataTexture {
  const rand = mulberry32(seed);
  const strokes = Array.from({ length: 6 }, () => ({
    y: 14 + rand() * 70,
    x0: 8 + rand() * 40,
    len: 30 + rand() * 70,
    c: (
      [
        [40, 70, 170],
        [180, 40, 40],
        [30, 130, 60],
      ] as const
    )[Math.floor(rand() * 3)]!,
    wave: rand() * 0.3,
  }));
  return proceduralTexture(128, 96, (x, y) => {
    for (const s of strokes) {
      if (x < s.x0 || x > s.x0 + s.len) continue;
      if (Math.abs(y - s.y - Math.sin(x * s.wave) * 3) < 1.1) return s.c;
    }
    return [238, 240, 238];
  });
}

/** A poster of coloured discs and bands (no black squares: nothing a marker detector could take for a card). */
export function posterTexture(seed: number): THREE.DataTexture {
  const rand = mulberry32(seed);
  const palette: Rgb[] = [
    [214, 88, 60],
    [240, 190, 70],
    [70, 130, 180],
    [90, 160, 110],
    [150, 90, 160],
  ];
  const bg = palette[Math.floor(rand() * palette.length)]!;
  const discs = Array.from({ length: 5 }, () => ({
    x: rand() * 96,
    y: rand() * 128,
    r: 8 + rand() * 26,
    c: palette[Math.floor(rand() * palette.length)]!,
  }));
  return proceduralTexture(96, 128, (x, y) => {
    for (const d of discs) if ((x - d.x) ** 2 + (y - d.y) ** 2 < d.r * d.r) return d.c;
    return shade(bg, 0.75 + 0.25 * Math.sin(y / 9));
  });
}

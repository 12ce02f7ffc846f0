/**
 * Debian's chromium driven by playwright-core for the web view's tests. Missing chromium is a failure with the fix,
 * never a skip: CI installs it (.ci/run), and so does the README's set-up.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { PNG } from 'pngjs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // WebGL without a GPU: SwiftShader, the software renderer chromium ships.
  '--use-gl=angle',
  '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader',
];

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** A headless chromium with a fresh profile directory, removed on close. */
export async function launchChromium(viewport = { width: 1200, height: 720 }): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `chromium is not installed at ${CHROMIUM}: the web view's browser tests need it. ` +
        'Install it with "sudo apt-get install chromium" (.ci/run does), or set CHROMIUM_PATH.',
    );
  const profile = await mkdtemp(path.join(os.tmpdir(), 'poppy-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export interface Picture {
  readonly width: number;
  readonly height: number;
  /** RGBA. */
  readonly data: Buffer;
}

export function decodePng(png: Buffer): Picture {
  const image = PNG.sync.read(png);
  return { width: image.width, height: image.height, data: image.data };
}

/** Sum of the absolute RGB differences of one pixel in two pictures of the same size. */
export function pixelDifference(a: Picture, b: Picture, x: number, y: number): number {
  const i = (Math.round(y) * a.width + Math.round(x)) * 4;
  return (
    Math.abs(a.data[i]! - b.data[i]!) +
    Math.abs(a.data[i + 1]! - b.data[i + 1]!) +
    Math.abs(a.data[i + 2]! - b.data[i + 2]!)
  );
}

/** Pixels that differ by more than `threshold` between two pictures. */
export function differingPixels(a: Picture, b: Picture, threshold = 30): { x: number; y: number }[] {
  const out: { x: number; y: number }[] = [];
  for (let y = 0; y < a.height; y++)
    for (let x = 0; x < a.width; x++) if (pixelDifference(a, b, x, y) > threshold) out.push({ x, y });
  return out;
}

/** Share of the pixels in a square of half-side `r` around (x, y) that differ between two pictures. */
export function changedShare(a: Picture, b: Picture, x: number, y: number, r = 6, threshold = 30): number {
  let changed = 0;
  let total = 0;
  for (let dy = -r; dy <= r; dy++)
    for (let dx = -r; dx <= r; dx++) {
      const px = Math.round(x) + dx;
      const py = Math.round(y) + dy;
      if (px < 0 || py < 0 || px >= a.width || py >= a.height) continue;
      total++;
      if (pixelDifference(a, b, px, py) > threshold) changed++;
    }
  return total ? changed / total : 0;
}

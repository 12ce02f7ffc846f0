/**
 * PNG encoding of camera frames. pngjs with the "up" filter and a light deflate was the fastest of the
 * encoders measured on rendered 640x480 frames (about 2.5 ms against 20 ms for @napi-rs/canvas; bench/vision.ts).
 */
import { PNG } from 'pngjs';
import type { Frame } from '../core/backend.ts';

const PNG_FILTER_UP = 2;
const PNG_RGB = 2;

export function encodePng(frame: Frame): Buffer {
  const png = new PNG({ width: frame.width, height: frame.height, colorType: PNG_RGB, inputHasAlpha: false });
  png.data = Buffer.from(frame.rgb.buffer, frame.rgb.byteOffset, frame.width * frame.height * 3);
  return PNG.sync.write(png, {
    colorType: PNG_RGB,
    inputColorType: PNG_RGB,
    inputHasAlpha: false,
    filterType: PNG_FILTER_UP,
    deflateLevel: 3,
  });
}

/** Decodes a PNG into an RGB frame (tests, and frames read back from disk). */
export function decodePng(buffer: Buffer): Frame {
  const png = PNG.sync.read(buffer);
  const rgb = new Uint8Array(png.width * png.height * 3);
  for (let i = 0, j = 0; i < rgb.length; i += 3, j += 4) {
    rgb[i] = png.data[j]!;
    rgb[i + 1] = png.data[j + 1]!;
    rgb[i + 2] = png.data[j + 2]!;
  }
  return { width: png.width, height: png.height, rgb };
}

/** The `frame` register's value: the PNG as a data URL (CONTRACT.md 3). */
export function pngDataUrl(png: Buffer): string {
  return `data:image/png;base64,${png.toString('base64')}`;
}

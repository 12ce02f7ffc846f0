/**
 * PNG encoding of camera frames. pngjs with the "up" filter and a light deflate was the fastest of the
 * encoders measured on rendered 640x480 frames (about 2.5 ms against 20 ms for @napi-rs/canvas; bench/vision.ts).
 * The server uses the asynchronous form: zlib deflates on libuv's thread pool, off the thread that steps the
 * physics.
 */
import { PNG } from 'pngjs';
import type { Frame } from '../core/backend.ts';

const PNG_FILTER_UP = 2;
const PNG_RGB = 2;

const OPTIONS = {
  colorType: PNG_RGB,
  inputColorType: PNG_RGB,
  inputHasAlpha: false,
  filterType: PNG_FILTER_UP,
  deflateLevel: 3,
} as const;

function pngOf(frame: Frame): PNG {
  const png = new PNG({ width: frame.width, height: frame.height, ...OPTIONS });
  png.data = Buffer.from(frame.rgb.buffer, frame.rgb.byteOffset, frame.width * frame.height * 3);
  return png;
}

export function encodePng(frame: Frame): Buffer {
  return PNG.sync.write(pngOf(frame), OPTIONS);
}

/** The same bytes as encodePng, the deflate done on the thread pool. */
export function encodePngAsync(frame: Frame): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const png = pngOf(frame);
    png.on('data', (chunk: Buffer) => chunks.push(chunk));
    png.on('end', () => resolve(Buffer.concat(chunks)));
    png.on('error', reject);
    png.pack();
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

/** The `frame` register's value: the PNG as a data URL (docs/reference/contract.md 3). */
export function pngDataUrl(png: Buffer): string {
  return `data:image/png;base64,${png.toString('base64')}`;
}

/**
 * `npm run detect -- photo.jpg [more.png ...]`: the marker detector on pictures from any camera (PNG or JPEG), so a
 * user can check it on their own robot's frames. Prints, per picture, each marker's id, card name and corners
 * (pixels: the marker's own top-left, top-right, bottom-right, bottom-left). A file that is not a PNG or JPEG
 * picture stops it with one line and exit code 2.
 */
import { readFile } from 'node:fs/promises';
import jpeg from 'jpeg-js';
import type { Frame } from '../core/backend.ts';
import { detectMarkers } from './detect.ts';
import { decodePng } from './png.ts';

/** Largest picture decoded, megabytes of pixels (jpeg-js's guard against a hostile file). */
const MAX_DECODE_MB = 512;

class PictureError extends Error {}

/** Decodes a PNG or JPEG by its first bytes (not its name). */
export function decodePicture(bytes: Buffer, name: string): Frame {
  const png = bytes.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
  const jpg = bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  if (!png && !jpg) throw new PictureError(`${name} is not a PNG or JPEG picture`);
  try {
    if (png) return decodePng(bytes);
    const img = jpeg.decode(bytes, {
      useTArray: true,
      formatAsRGBA: true,
      maxMemoryUsageInMB: MAX_DECODE_MB,
    });
    const rgb = new Uint8Array(img.width * img.height * 3);
    for (let i = 0, j = 0; i < rgb.length; i += 3, j += 4) {
      rgb[i] = img.data[j]!;
      rgb[i + 1] = img.data[j + 1]!;
      rgb[i + 2] = img.data[j + 2]!;
    }
    return { width: img.width, height: img.height, rgb };
  } catch (err) {
    throw new PictureError(`${name} is a damaged ${png ? 'PNG' : 'JPEG'} picture: ${(err as Error).message}`);
  }
}

const fmt = (p: readonly [number, number]) => `(${p[0].toFixed(1)}, ${p[1].toFixed(1)})`;

async function main(files: string[]): Promise<void> {
  if (!files.length) {
    console.error('usage: npm run detect -- <picture.png|picture.jpg> [...]');
    process.exit(2);
  }
  for (const file of files) {
    let frame: Frame;
    try {
      frame = decodePicture(await readFile(file), file);
    } catch (err) {
      const message =
        err instanceof PictureError ? err.message : `cannot read ${file}: ${(err as Error).message}`;
      console.error(`error: ${message}`);
      process.exit(2);
    }
    const markers = detectMarkers(frame);
    console.log(
      `${file}: ${frame.width}x${frame.height}, ${markers.length} marker${markers.length === 1 ? '' : 's'}`,
    );
    for (const m of markers)
      console.log(
        `  id ${m.id}${m.name ? ` (${m.name})` : ''}  corners ${m.corners.map(fmt).join(' ')}  centre ${fmt(m.centre)}`,
      );
  }
}

await main(process.argv.slice(2));

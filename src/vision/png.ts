/**
 * PNG encoding of camera frames: each row filtered "up" (the difference with the row above, four bytes at a time),
 * then node:zlib's deflate at level 1. On a realistic 640x480 frame (sensor noise, JPEG blocks) that is about
 * 2.5 ms and 95 KB, where pngjs's own filter loop with deflate level 3 and its RLE strategy took 5.5 ms for
 * 130 KB (bench/render-stages.ts, docs/decisions/0051-camera-frame-cost.md). The server uses a PngEncoder (the
 * filter in WebAssembly) and its asynchronous form: zlib deflates on libuv's thread pool, off the thread that steps
 * the physics. pngjs decodes.
 */
import zlib from 'node:zlib';
import { PNG } from 'pngjs';
import type { Frame } from '../core/backend.ts';
import { PngFilter } from './png-filter.ts';

const SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);
const PNG_FILTER_UP = 2;
const PNG_RGB = 2;
const DEFLATE: zlib.ZlibOptions = { level: 1 };

let crcTable: Int32Array | undefined;

/** CRC-32 (PNG's, zlib's) by table, for a Node without zlib.crc32 (before 20.15: 20.11, npm's newest armv7l). */
export function tableCrc32(data: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c;
    }
  }
  let c = -1;
  for (let i = 0; i < data.length; i++) c = crcTable[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

const crc32 = (zlib as { crc32?: (data: Uint8Array) => number }).crc32 ?? tableCrc32;

/** One chunk: length, type, data, CRC of type and data. */
function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** The rows, each led by its filter byte, every byte but the first row's minus the one above it (mod 256). */
function filtered(frame: Frame): Buffer {
  const { width, height, rgb } = frame;
  const stride = width * 3;
  const out = Buffer.allocUnsafe((stride + 1) * height);
  if (height === 0) return out;
  out[0] = PNG_FILTER_UP;
  out.set(rgb.subarray(0, stride), 1);
  const words = stride % 4 === 0 && rgb.byteOffset % 4 === 0;
  const row = new Uint32Array(words ? stride / 4 : 0);
  const rowBytes = new Uint8Array(row.buffer);
  const all = words ? new Uint32Array(rgb.buffer, rgb.byteOffset, (stride / 4) * height) : row;
  for (let y = 1; y < height; y++) {
    const o = y * (stride + 1);
    out[o] = PNG_FILTER_UP;
    if (words) {
      // Byte-wise a - b in 32-bit words: the high bits kept apart so no borrow crosses a byte.
      for (let k = 0, i = (y * stride) / 4, j = i - stride / 4; k < row.length; k++, i++, j++) {
        const a = all[i]!,
          b = all[j]!;
        row[k] = ((a | 0x80808080) - (b & 0x7f7f7f7f)) ^ ((a ^ ~b) & 0x80808080);
      }
      out.set(rowBytes, o + 1);
    } else {
      for (let x = 0, i = y * stride; x < stride; x++, i++) out[o + 1 + x] = rgb[i]! - rgb[i - stride]!;
    }
  }
  return out;
}

function header(frame: Frame): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(frame.width, 0);
  ihdr.writeUInt32BE(frame.height, 4);
  ihdr[8] = 8; // bits per channel
  ihdr[9] = PNG_RGB;
  return Buffer.concat([SIGNATURE, chunk('IHDR', ihdr)]);
}

const END = chunk('IEND', new Uint8Array(0));

export function encodePng(frame: Frame): Buffer {
  return Buffer.concat([header(frame), chunk('IDAT', zlib.deflateSync(filtered(frame), DEFLATE)), END]);
}

/** The same bytes as encodePng, the deflate done on the thread pool. */
export function encodePngAsync(frame: Frame): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zlib.deflate(filtered(frame), DEFLATE, (error, data) => {
      if (error) reject(error);
      else resolve(Buffer.concat([header(frame), chunk('IDAT', data), END]));
    });
  });
}

/**
 * encodePng and encodePngAsync's bytes, the rows filtered in WebAssembly in a memory kept between frames (0.05
 * against 0.7 ms for 640x480): one encoder per camera consumer (a route, a bench), not shared between threads.
 */
export class PngEncoder {
  readonly #filter = new PngFilter();

  #rows(frame: Frame): Uint8Array {
    return this.#filter.filter(frame.rgb, frame.width * 3, frame.height);
  }

  encode(frame: Frame): Buffer {
    return Buffer.concat([header(frame), chunk('IDAT', zlib.deflateSync(this.#rows(frame), DEFLATE)), END]);
  }

  /** The deflate runs on the thread pool: it gets a copy of the rows, as the next frame reuses the memory. */
  encodeAsync(frame: Frame): Promise<Buffer> {
    const rows = Buffer.from(this.#rows(frame));
    return new Promise((resolve, reject) => {
      zlib.deflate(rows, DEFLATE, (error, data) => {
        if (error) reject(error);
        else resolve(Buffer.concat([header(frame), chunk('IDAT', data), END]));
      });
    });
  }
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

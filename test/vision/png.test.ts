/** The PNG encoders (src/vision/png.ts): the WebAssembly row filter gives the JavaScript one's bytes, the table CRC zlib's. */
import zlib from 'node:zlib';
import { expect } from 'chai';
import type { Frame } from '../../src/core/backend.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { PngEncoder, decodePng, encodePng, tableCrc32 } from '../../src/vision/png.ts';

/** Noise over a gradient: every byte differs from the one above it in some rows, equals it in others. */
function frame(width: number, height: number, seed: number): Frame {
  const rand = mulberry32(seed);
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < rgb.length; i++)
    rgb[i] = (i % 7 === 0 ? 0 : i & 255) ^ (rand() < 0.5 ? 0 : rand() * 256);
  return { width, height, rgb };
}

describe('the PNG encoder with its rows filtered in WebAssembly', () => {
  it("gives encodePng's bytes for any size, its memory reused and grown", () => {
    const png = new PngEncoder();
    for (const [w, h] of [
      [640, 480],
      [7, 5],
      [1, 1],
      [640, 480],
      [1000, 700],
      [33, 2],
    ] as const) {
      const f = frame(w, h, w + h);
      const ours = png.encode(f);
      expect(ours.equals(encodePng(f)), `${w}x${h}`).to.equal(true);
      expect(Buffer.from(decodePng(ours).rgb).equals(Buffer.from(f.rgb)), `${w}x${h}`).to.equal(true);
    }
  });

  it('encodes a frame asynchronously while the next one is filtered', async () => {
    const png = new PngEncoder();
    const a = frame(320, 240, 1);
    const b = frame(320, 240, 2);
    const pending = png.encodeAsync(a);
    png.encode(b);
    const [decoded, other] = [decodePng(await pending), decodePng(await png.encodeAsync(b))];
    expect(Buffer.from(decoded.rgb).equals(Buffer.from(a.rgb))).to.equal(true);
    expect(Buffer.from(other.rgb).equals(Buffer.from(b.rgb))).to.equal(true);
  });
});

describe("the PNG chunks' CRC without zlib.crc32 (Node 20.11)", () => {
  it("gives zlib's CRC-32 on empty, short and frame-sized data", () => {
    const rand = mulberry32(7);
    for (const n of [0, 1, 3, 4, 13, 1000, 95_000]) {
      const data = Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
      expect(tableCrc32(data), `${n} bytes`).to.equal(zlib.crc32(data));
    }
    expect(tableCrc32(Buffer.from('IEND'))).to.equal(0xae426082);
  });
});

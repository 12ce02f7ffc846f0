/** The camera model's JPEG pass gives the pixels a real JPEG codec's round trip gives (jpeg-js). */
import { expect } from 'chai';
import jpeg from 'jpeg-js';
import { mulberry32 } from '../../src/core/prng.ts';
import { jpegRoundTrip, quantTable } from '../../src/scene/jpeg-pass.ts';

const width = 96;
const height = 72;

/** Edges, gradients and noise: what JPEG has to work on. */
function picture(): Uint8Array {
  const rand = mulberry32(5);
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const square = x > 20 && x < 60 && y > 10 && y < 50;
      rgb[i] = square ? 30 : 128 + 90 * Math.sin(x / 7);
      rgb[i + 1] = square ? 30 : (x * 2 + y) & 255;
      rgb[i + 2] = square ? 40 : 100 + rand() * 60;
    }
  return rgb;
}

function meanDifference(a: ArrayLike<number>, b: ArrayLike<number>, bStep = 3): number {
  let sum = 0;
  for (let p = 0; p < width * height; p++)
    for (let c = 0; c < 3; c++) sum += Math.abs(a[p * 3 + c]! - b[p * bStep + c]!);
  return sum / (width * height * 3);
}

describe('the JPEG pass of the camera model', () => {
  it('scales the standard tables by quality as libjpeg does', () => {
    expect(quantTable([16, 11, 255], 50)).to.deep.equal([16, 11, 255]);
    expect(quantTable([16, 11, 255], 100)).to.deep.equal([1, 1, 1]);
    expect(quantTable([16, 11, 10], 75)).to.deep.equal([8, 6, 5]);
    expect(quantTable([16, 11, 10], 10)).to.deep.equal([80, 55, 50]);
  });

  for (const quality of [90, 75, 30]) {
    it(`matches jpeg-js's encode and decode at quality ${quality} (4:4:4, as jpeg-js writes)`, () => {
      const original = picture();
      const ours = new Uint8Array(original);
      jpegRoundTrip(ours, width, height, quality, false);
      const rgba = new Uint8Array(width * height * 4);
      for (let p = 0; p < width * height; p++) {
        rgba.set(original.subarray(p * 3, p * 3 + 3), p * 4);
        rgba[p * 4 + 3] = 255;
      }
      const codec = jpeg.decode(jpeg.encode({ data: rgba, width, height }, quality).data, {
        useTArray: true,
      });
      const loss = meanDifference(ours, original);
      const codecLoss = meanDifference(original, codec.data, 4);
      // The same losses as the codec's, pixel by pixel: what is left is the codecs' rounding.
      expect(loss).to.be.closeTo(codecLoss, codecLoss * 0.1 + 0.2);
      expect(meanDifference(ours, codec.data, 4)).to.be.below(Math.max(1.5, loss / 3));
    });
  }

  it('4:2:0 keeps the grey levels of a flat picture and loses more detail at a lower quality', () => {
    const flat = new Uint8Array(width * height * 3).fill(140);
    jpegRoundTrip(flat, width, height, 75);
    expect(Math.max(...flat) - Math.min(...flat)).to.be.at.most(1);
    const losses = [95, 75, 30].map((q) => {
      const img = picture();
      jpegRoundTrip(img, width, height, q);
      return meanDifference(img, picture());
    });
    expect(losses[0]).to.be.below(losses[1]!);
    expect(losses[1]).to.be.below(losses[2]!);
  });
});

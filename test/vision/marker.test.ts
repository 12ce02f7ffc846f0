import { expect } from 'chai';
import type { Frame } from '../../src/core/backend.ts';
import { detectMarkers } from '../../src/vision/detect.ts';
import {
  CARD_MARGIN_CELLS,
  MARKER_CELLS,
  MARKER_CODES,
  MAX_MARKER_ID,
  decodeDataCells,
  hammingDecode,
  hammingEncode,
  markerGrid,
  markerImage,
  markerPicture,
} from '../../src/vision/marker.ts';

/** The pictures of docs/reference/camera.md 7, as printed on the robot's cards. */
const PICTURES: Record<string, string[]> = {
  tetris: [
    '#########',
    '#..##..##',
    '##..##..#',
    '#########',
    '#.......#',
    '#########',
    '#.#..#.##',
    '##.##.#.#',
    '#########',
  ],
  caribou: [
    '#########',
    '#.#.#.#.#',
    '##.#.#.##',
    '##....###',
    '#.......#',
    '#.......#',
    '####....#',
    '###..##.#',
    '#########',
  ],
  lapin: [
    '#########',
    '##.#.#.##',
    '#.#..#.##',
    '#...#####',
    '##....###',
    '#.#..#.##',
    '#.#.#.#.#',
    '###.#..##',
    '#########',
  ],
};

/** Rotates an RGB frame by a quarter turn clockwise, `turns` times. */
function rotate(frame: Frame, turns: number): Frame {
  let f = frame;
  for (let t = 0; t < turns; t++) {
    const { width: w, height: h } = f;
    const rgb = new Uint8Array(w * h * 3);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        const nx = h - 1 - y;
        const ny = x;
        rgb.set(f.rgb.subarray((y * w + x) * 3, (y * w + x) * 3 + 3), (ny * h + nx) * 3);
      }
    f = { width: h, height: w, rgb };
  }
  return f;
}

/** Pastes a card into a grey frame at (x, y). */
function onBackground(card: Frame, x: number, y: number, width = 320, height = 240): Frame {
  const rgb = new Uint8Array(width * height * 3).fill(110);
  for (let r = 0; r < card.height; r++)
    rgb.set(card.rgb.subarray(r * card.width * 3, (r + 1) * card.width * 3), ((y + r) * width + x) * 3);
  return { width, height, rgb };
}

describe('marker cards: the 9x9 Hamming(7,4) format (docs/reference/camera.md 7)', () => {
  it('draws the three cards exactly as docs/reference/camera.md 7 pictures them', () => {
    for (const [name, picture] of Object.entries(PICTURES))
      expect(markerPicture(MARKER_CODES[name]!)).to.equal(picture.join('\n'));
  });

  it('encodes every nibble into a code word that decodes back, and rejects any single flipped cell', () => {
    for (let n = 0; n < 16; n++) {
      const word = hammingEncode(n);
      expect(hammingDecode(word)).to.equal(n);
      for (let k = 0; k < 7; k++) {
        const flipped = [...word];
        flipped[k] = flipped[k]! ^ 1;
        expect(hammingDecode(flipped)).to.equal(-1);
      }
    }
  });

  it('round-trips ids of every class: 0, the largest, the cards and random ones; borders are black', () => {
    let seed = 7;
    const random = () => (seed = (Math.imul(seed, 48271) + 11) >>> 0) % (MAX_MARKER_ID + 1);
    const ids = [
      1,
      15,
      16,
      0x0f0f0f0,
      MAX_MARKER_ID - 1,
      ...Object.values(MARKER_CODES),
      ...Array.from({ length: 200 }, random),
    ];
    for (const id of ids) {
      const grid = markerGrid(id);
      for (let i = 0; i < MARKER_CELLS; i++)
        for (const cell of [grid[0]![i], grid[8]![i], grid[i]![0], grid[i]![8]]) expect(cell).to.equal(0);
      const data = grid.slice(1, 8).map((row) => row.slice(1, 8));
      expect(decodeDataCells(data)).to.equal(id);
    }
    // All-black and all-white interiors are not markers (hampy rejects them).
    expect(
      decodeDataCells(
        markerGrid(0)
          .slice(1, 8)
          .map((r) => r.slice(1, 8)),
      ),
    ).to.equal(-1);
    expect(() => markerGrid(MAX_MARKER_ID + 1)).to.throw(RangeError);
    expect(() => markerGrid(-1)).to.throw(RangeError);
    expect(() => markerImage(5, 0)).to.throw(RangeError);
  });

  it('markerImage is the grid with a white margin, pixelsPerCell pixels a cell', () => {
    const img = markerImage(MARKER_CODES.tetris!, 4);
    const side = (MARKER_CELLS + 2 * CARD_MARGIN_CELLS) * 4;
    expect([img.width, img.height, img.rgb.length]).to.deep.equal([side, side, side * side * 3]);
    expect(img.rgb[0]).to.equal(255); // margin
    const at = (cellRow: number, cellCol: number) =>
      img.rgb[(((cellRow + CARD_MARGIN_CELLS) * 4 + 2) * side + (cellCol + CARD_MARGIN_CELLS) * 4 + 2) * 3];
    expect(at(0, 0)).to.equal(0); // border
    expect(at(1, 1)).to.equal(255); // tetris row 1: #..##..##
    expect(at(1, 3)).to.equal(0);
  });

  it('the detector reads generated cards in all four rotations, with corners in the marker’s own order', () => {
    let seed = 3;
    const random = () => (seed = (Math.imul(seed, 48271) + 11) >>> 0) % (MAX_MARKER_ID + 1);
    const ids = [...new Set(Object.values(MARKER_CODES)), ...Array.from({ length: 12 }, random)];
    for (const id of ids) {
      const card = markerImage(id, 6);
      for (let turns = 0; turns < 4; turns++) {
        const frame = onBackground(rotate(card, turns), 90, 50);
        const found = detectMarkers(frame);
        expect(
          found.map((m) => m.id),
          `id ${id}, ${turns} quarter turns`,
        ).to.include(id);
        const m = found.find((f) => f.id === id)!;
        // The marker's own top-left corner, after `turns` clockwise quarter turns of the picture.
        const side = 9 * 6;
        const x0 = 90 + 6;
        const y0 = 50 + 6;
        const expected = [
          [x0, y0],
          [x0 + side, y0],
          [x0 + side, y0 + side],
          [x0, y0 + side],
        ][turns]!;
        expect(m.corners[0][0]).to.be.closeTo(expected[0]!, 1.01);
        expect(m.corners[0][1]).to.be.closeTo(expected[1]!, 1.01);
        expect(m.centre[0]).to.be.closeTo(x0 + side / 2, 1);
        expect(m.centre[1]).to.be.closeTo(y0 + side / 2, 1);
      }
    }
  });

  it('does not read a mirrored card (the camera sees cards unmirrored)', () => {
    const card = markerImage(MARKER_CODES.tetris!, 6);
    const mirrored = new Uint8Array(card.rgb.length);
    for (let y = 0; y < card.height; y++)
      for (let x = 0; x < card.width; x++)
        mirrored.set(
          card.rgb.subarray((y * card.width + x) * 3, (y * card.width + x) * 3 + 3),
          (y * card.width + card.width - 1 - x) * 3,
        );
    const found = detectMarkers(onBackground({ ...card, rgb: mirrored }, 90, 50));
    expect(found.map((m) => m.id)).to.not.include(MARKER_CODES.tetris);
  });

  it('names the three cards and leaves other ids unnamed', () => {
    const frame = onBackground(markerImage(12345, 5), 20, 20);
    const [m] = detectMarkers(frame);
    expect(m!.id).to.equal(12345);
    expect(m!.name).to.equal(undefined);
    const [lapin] = detectMarkers(onBackground(markerImage(MARKER_CODES.rabbit!, 5), 20, 20));
    expect(lapin!.name).to.equal('lapin');
  });
});

/**
 * The robot's printed marker cards (docs/reference/camera.md 7, hampy's format): a 9x9 grid of cells, a black one-cell border
 * around 7x7 data cells; each data row is one Hamming(7,4) code word, so 7 rows carry 28 bits, ids 0 .. 2^28-1.
 * Cell white = 1, black = 0. Written here from the format's description; no image of a card is ever stored.
 */
import type { Frame } from '../core/backend.ts';

export const MARKER_CELLS = 9;
export const DATA_CELLS = 7;
export const MAX_MARKER_ID = 2 ** 28 - 1;
/** White cells around the 9x9 grid on a printed card (each side), so the black border stands out. */
export const CARD_MARGIN_CELLS = 1;

/** The card names the REST API knows (docs/reference/contract.md 3); lapin and rabbit are one marker, tertis is the spec's typo. */
export const MARKER_CODES: Readonly<Record<string, number>> = Object.freeze(
  Object.assign(Object.create(null) as Record<string, number>, {
    tetris: 112259237,
    tertis: 112259237,
    caribou: 221052793,
    lapin: 44616414,
    rabbit: 44616414,
  }),
);

/** The name a detected id is reported under (the first spelling the API lists), or undefined. */
export function markerName(id: number): string | undefined {
  if (id === MARKER_CODES.tetris) return 'tetris';
  if (id === MARKER_CODES.caribou) return 'caribou';
  if (id === MARKER_CODES.lapin) return 'lapin';
  return undefined;
}

/** Hamming(7,4) code word (c0..c6) of a nibble d1 d2 d3 d4 (d1 the most significant bit). */
export function hammingEncode(nibble: number): number[] {
  const d1 = (nibble >> 3) & 1;
  const d2 = (nibble >> 2) & 1;
  const d3 = (nibble >> 1) & 1;
  const d4 = nibble & 1;
  return [d1 ^ d2 ^ d4, d1 ^ d3 ^ d4, d1, d2 ^ d3 ^ d4, d2, d3, d4];
}

/**
 * The nibble of a code word, or -1 when a parity check fails. Like hampy, no error correction: a row with a
 * flipped cell is rejected, which keeps random patterns from ever reading as a marker.
 */
export function hammingDecode(word: readonly number[]): number {
  const [c0, c1, c2, c3, c4, c5, c6] = word as [number, number, number, number, number, number, number];
  if ((c3 ^ c4 ^ c5 ^ c6) !== 0 || (c1 ^ c2 ^ c5 ^ c6) !== 0 || (c0 ^ c2 ^ c4 ^ c6) !== 0) return -1;
  return (c2 << 3) | (c4 << 2) | (c5 << 1) | c6;
}

function checkId(id: number): void {
  if (!Number.isInteger(id) || id < 0 || id > MAX_MARKER_ID)
    throw new RangeError(`marker id must be an integer in 0 .. ${MAX_MARKER_ID}, got ${id}`);
}

/** The 9x9 cell grid of a marker, rows top to bottom, 1 = white, 0 = black. */
export function markerGrid(id: number): number[][] {
  checkId(id);
  const grid: number[][] = [];
  for (let r = 0; r < MARKER_CELLS; r++) grid.push(new Array<number>(MARKER_CELLS).fill(0));
  for (let row = 0; row < DATA_CELLS; row++) {
    const nibble = Math.floor(id / 2 ** (4 * (DATA_CELLS - 1 - row))) % 16;
    hammingEncode(nibble).forEach((bit, col) => (grid[row + 1]![col + 1] = bit));
  }
  return grid;
}

/**
 * Reads the id of a 7x7 block of data cells (rows top to bottom, 1 = white) in this orientation only; -1 when
 * a row is not a code word or the block is all black or all white (hampy rejects those).
 */
export function decodeDataCells(cells: readonly (readonly number[])[]): number {
  let id = 0;
  let ones = 0;
  for (let row = 0; row < DATA_CELLS; row++) {
    const word = cells[row]!;
    for (const c of word) ones += c;
    const nibble = hammingDecode(word);
    if (nibble < 0) return -1;
    id = id * 16 + nibble;
  }
  if (ones === 0 || ones === DATA_CELLS * DATA_CELLS) return -1;
  return id;
}

/** Text picture of a marker as docs/reference/camera.md 7 draws them: '#' black, '.' white, one line per row. */
export function markerPicture(id: number): string {
  return markerGrid(id)
    .map((row) => row.map((c) => (c ? '.' : '#')).join(''))
    .join('\n');
}

/**
 * The printed card of a marker as an RGB frame: the 9x9 grid with a white margin of CARD_MARGIN_CELLS cells,
 * `pixelsPerCell` pixels per cell, top row first.
 */
export function markerImage(id: number, pixelsPerCell: number): Frame {
  if (!Number.isInteger(pixelsPerCell) || pixelsPerCell < 1)
    throw new RangeError(`pixelsPerCell must be a positive integer, got ${pixelsPerCell}`);
  const grid = markerGrid(id);
  const cells = MARKER_CELLS + 2 * CARD_MARGIN_CELLS;
  const side = cells * pixelsPerCell;
  const rgb = new Uint8Array(side * side * 3);
  for (let y = 0; y < side; y++) {
    const r = Math.floor(y / pixelsPerCell) - CARD_MARGIN_CELLS;
    for (let x = 0; x < side; x++) {
      const c = Math.floor(x / pixelsPerCell) - CARD_MARGIN_CELLS;
      const inGrid = r >= 0 && r < MARKER_CELLS && c >= 0 && c < MARKER_CELLS;
      const v = !inGrid || grid[r]![c] ? 255 : 0;
      const i = (y * side + x) * 3;
      rgb[i] = rgb[i + 1] = rgb[i + 2] = v;
    }
  }
  return { width: side, height: side, rgb };
}

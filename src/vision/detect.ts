/**
 * Finds the robot's marker cards (docs/reference/camera.md 7) in any RGB frame, rendered or from a real camera: grey, adaptive
 * threshold, contours, convex quadrilaterals, perspective unwarp, cell sampling, the four rotations, Hamming
 * decode. The blur, threshold, contour and polygon routines are js-aruco2's; the unwarp (its warp samples one
 * pixel off), the cell reading and the decode are ours.
 */
import cvModule from 'js-aruco2/src/cv.js';
import type { Frame } from '../core/backend.ts';
import { DATA_CELLS, MARKER_CELLS, decodeDataCells, markerName } from './marker.ts';

const CV = cvModule.CV;

export type Point = [number, number];

export interface DetectedMarker {
  /** The 28-bit marker id. */
  readonly id: number;
  /** The card's name when the id is one of the robot's cards (tetris, caribou, lapin). */
  readonly name?: string;
  /** Image pixels, the marker's own top-left, top-right, bottom-right, bottom-left corners (outer border edge). */
  readonly corners: [Point, Point, Point, Point];
  /** Image pixels: where the diagonals cross (the centre under perspective). */
  readonly centre: Point;
}

/** Tuning of the detector; the defaults suit 320x240 .. 1280x960 frames. */
export interface DetectOptions {
  /** Radius of the box blur the adaptive threshold compares with (pixels). */
  readonly thresholdRadius?: number;
  /** How much darker than its neighbourhood a pixel must be to count as ink (grey levels). */
  readonly thresholdOffset?: number;
  /** Smallest marker side that is searched for, pixels. */
  readonly minSide?: number;
}

/** Samples per cell and axis, spread over the middle half of the cell (its edges blur into the neighbours). */
const CELL_SAMPLES = 3;
/** Least grey-level difference between the white and the black cells of a real marker. */
const MIN_CONTRAST = 30;

/** Scratch buffers reused between frames of the same size (grey, threshold, contour labels, warp). */
class Scratch {
  readonly grey: Uint8ClampedArray;
  readonly smooth: Uint8ClampedArray;
  readonly thres: Uint8ClampedArray;
  readonly labels: Int32Array;
  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.grey = new Uint8ClampedArray(width * height);
    this.smooth = new Uint8ClampedArray(width * height);
    this.thres = new Uint8ClampedArray(width * height);
    this.labels = new Int32Array((width + 2) * (height + 2));
  }
}

/**
 * A detector keeps its scratch buffers between calls (one per camera); `detectMarkers` below makes a fresh
 * one each time.
 */
export class MarkerDetector {
  #scratch: Scratch | undefined;
  readonly #opts: Required<DetectOptions>;

  constructor(opts: DetectOptions = {}) {
    this.#opts = { thresholdRadius: 3, thresholdOffset: 7, minSide: 12, ...opts };
  }

  detect(frame: Frame): DetectedMarker[] {
    const { width, height, rgb } = frame;
    if (rgb.length < width * height * 3) throw new RangeError('frame.rgb is shorter than width * height * 3');
    if (this.#scratch?.width !== width || this.#scratch.height !== height)
      this.#scratch = new Scratch(width, height);
    const s = this.#scratch;
    const grey = s.grey;
    for (let i = 0, j = 0; i < grey.length; i++, j += 3)
      grey[i] = (rgb[j]! * 77 + rgb[j + 1]! * 150 + rgb[j + 2]! * 29) >> 8;
    const greyImage = new CV.Image(width, height, grey);
    const smoothImage = new CV.Image(width, height, s.smooth);
    const thresImage = new CV.Image(width, height, s.thres);
    // A 3x3 blur first: sensor noise would otherwise break the threshold into thousands of specks to trace.
    CV.stackBoxBlur(greyImage, smoothImage, 1);
    CV.adaptiveThreshold(smoothImage, thresImage, this.#opts.thresholdRadius, this.#opts.thresholdOffset);
    s.labels.fill(0);
    const contours = CV.findContours(thresImage, s.labels);

    const found = new Map<number, DetectedMarker>();
    const minPerimeter = 4 * this.#opts.minSide;
    for (const contour of contours) {
      if (contour.length < minPerimeter) continue;
      const poly = CV.approxPolyDP(contour, contour.length * 0.05);
      if (poly.length !== 4 || !CV.isContourConvex(poly) || CV.minEdgeLength(poly) < this.#opts.minSide)
        continue;
      const quad = clockwise(outerEdge(poly));
      const cells = readCells(grey, width, height, quad);
      if (!cells) continue;
      for (let rotation = 0; rotation < 4; rotation++) {
        const id = decodeDataCells(rotatedData(cells, rotation));
        if (id < 0 || found.has(id)) continue;
        const corners = [0, 1, 2, 3].map((k) => quad[(k + rotation) % 4]!) as DetectedMarker['corners'];
        const name = markerName(id);
        found.set(id, { id, ...(name ? { name } : {}), corners, centre: diagonalsCross(corners) });
      }
    }
    return [...found.values()];
  }
}

/** Finds every marker in an RGB frame (see MarkerDetector to reuse buffers across frames). */
export function detectMarkers(frame: Frame, opts?: DetectOptions): DetectedMarker[] {
  return new MarkerDetector(opts).detect(frame);
}

/** The marker centre normalised as pypot reports it: [-1, 1] both ways, (0, 0) the image centre, y down. */
export function normalisedPosition(centre: Point, width: number, height: number): Point {
  return [(centre[0] - width / 2) / (width / 2), (centre[1] - height / 2) / (height / 2)];
}

/**
 * The contour runs through the centres of the border's outermost ink pixels; the printed edge lies half a
 * pixel further out, away from the quad's middle.
 */
function outerEdge(poly: readonly { x: number; y: number }[]): Point[] {
  const mx = poly.reduce((a, p) => a + p.x, 0) / poly.length;
  const my = poly.reduce((a, p) => a + p.y, 0) / poly.length;
  return poly.map((p) => [p.x + 0.5 + (p.x > mx ? 0.5 : -0.5), p.y + 0.5 + (p.y > my ? 0.5 : -0.5)]);
}

/** Orders a quad so that it turns clockwise on screen (y down): read unmirrored, a card's cells come out right. */
function clockwise(q: Point[]): Point[] {
  const [a, b, , d] = q as [Point, Point, Point, Point];
  const cross = (b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0]);
  return cross >= 0 ? q : [q[0]!, q[3]!, q[2]!, q[1]!];
}

/**
 * The 9x9 cells of a candidate quad (1 = white), or undefined when it is no marker: the border must be black
 * all round and the white and black cells must differ clearly. Each cell is the mean of a few points in its
 * middle, mapped into the image through the square-to-quad homography and sampled bilinearly.
 */
function readCells(
  grey: Uint8ClampedArray,
  width: number,
  height: number,
  quad: Point[],
): number[][] | undefined {
  const h = squareToQuad(quad);
  const means = new Float64Array(MARKER_CELLS * MARKER_CELLS);
  let min = 255;
  let max = 0;
  for (let r = 0; r < MARKER_CELLS; r++) {
    for (let c = 0; c < MARKER_CELLS; c++) {
      let sum = 0;
      for (let i = 0; i < CELL_SAMPLES; i++) {
        const v = (r + 0.25 + (0.5 * (i + 0.5)) / CELL_SAMPLES) / MARKER_CELLS;
        for (let j = 0; j < CELL_SAMPLES; j++) {
          const u = (c + 0.25 + (0.5 * (j + 0.5)) / CELL_SAMPLES) / MARKER_CELLS;
          const w = h[6] * u + h[7] * v + 1;
          sum += bilinear(
            grey,
            width,
            height,
            (h[0] * u + h[1] * v + h[2]) / w,
            (h[3] * u + h[4] * v + h[5]) / w,
          );
        }
      }
      const mean = sum / (CELL_SAMPLES * CELL_SAMPLES);
      means[r * MARKER_CELLS + c] = mean;
      if (mean < min) min = mean;
      if (mean > max) max = mean;
    }
  }
  if (max - min < MIN_CONTRAST) return undefined;
  const threshold = otsu(means);
  const cells: number[][] = [];
  let white = 0;
  let black = 0;
  let whiteSum = 0;
  let blackSum = 0;
  for (let r = 0; r < MARKER_CELLS; r++) {
    const row: number[] = [];
    for (let c = 0; c < MARKER_CELLS; c++) {
      const m = means[r * MARKER_CELLS + c]!;
      const bit = m >= threshold ? 1 : 0;
      const border = r === 0 || c === 0 || r === MARKER_CELLS - 1 || c === MARKER_CELLS - 1;
      if (border && bit) return undefined;
      if (bit) {
        white++;
        whiteSum += m;
      } else {
        black++;
        blackSum += m;
      }
      row.push(bit);
    }
    cells.push(row);
  }
  if (!white || whiteSum / white - blackSum / black < MIN_CONTRAST) return undefined;
  // Just outside the border there must be paper: a quad drawn inside a marker (or across two) has ink there.
  let outside = 0;
  let paper = 0;
  for (let k = -1; k <= MARKER_CELLS; k++) {
    for (const [r, c] of [
      [-1, k],
      [MARKER_CELLS, k],
      [k, -1],
      [k, MARKER_CELLS],
    ] as const) {
      const u = (c + 0.5) / MARKER_CELLS;
      const v = (r + 0.5) / MARKER_CELLS;
      const w = h[6] * u + h[7] * v + 1;
      const x = (h[0] * u + h[1] * v + h[2]) / w;
      const y = (h[3] * u + h[4] * v + h[5]) / w;
      if (!(w > 0) || x < 0 || y < 0 || x >= width || y >= height) continue;
      outside++;
      if (bilinear(grey, width, height, x, y) >= threshold) paper++;
    }
  }
  if (outside && paper < 0.75 * outside) return undefined;
  return cells;
}

/**
 * The homography taking the unit square (u right, v down; corners (0,0) (1,0) (1,1) (0,1)) onto the quad,
 * as [a, b, c, d, e, f, g, h]: x = (a u + b v + c) / (g u + h v + 1), y = (d u + e v + f) / (g u + h v + 1).
 */
function squareToQuad(q: Point[]): [number, number, number, number, number, number, number, number] {
  const [[x0, y0], [x1, y1], [x2, y2], [x3, y3]] = q as [Point, Point, Point, Point];
  const sx = x0 - x1 + x2 - x3;
  const sy = y0 - y1 + y2 - y3;
  if (Math.abs(sx) < 1e-12 && Math.abs(sy) < 1e-12) return [x1 - x0, x3 - x0, x0, y1 - y0, y3 - y0, y0, 0, 0];
  const dx1 = x1 - x2;
  const dx2 = x3 - x2;
  const dy1 = y1 - y2;
  const dy2 = y3 - y2;
  const den = dx1 * dy2 - dx2 * dy1;
  const g = (sx * dy2 - dx2 * sy) / den;
  const h = (dx1 * sy - sx * dy1) / den;
  return [x1 - x0 + g * x1, x3 - x0 + h * x3, x0, y1 - y0 + g * y1, y3 - y0 + h * y3, y0, g, h];
}

/** Grey level at a sub-pixel position (pixel centres at integer + 0.5), clamped at the image edges. */
function bilinear(grey: Uint8ClampedArray, width: number, height: number, x: number, y: number): number {
  const fx = Math.min(width - 1, Math.max(0, x - 0.5));
  const fy = Math.min(height - 1, Math.max(0, y - 0.5));
  const x0 = fx | 0;
  const y0 = fy | 0;
  const x1 = Math.min(width - 1, x0 + 1);
  const y1 = Math.min(height - 1, y0 + 1);
  const dx = fx - x0;
  const dy = fy - y0;
  const top = grey[y0 * width + x0]! * (1 - dx) + grey[y0 * width + x1]! * dx;
  const bottom = grey[y1 * width + x0]! * (1 - dx) + grey[y1 * width + x1]! * dx;
  return top * (1 - dy) + bottom * dy;
}

/** Otsu's threshold over a few values: the split that maximises the between-class variance. */
function otsu(values: Float64Array): number {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  const total = sorted.reduce((a, b) => a + b, 0);
  let best = -1;
  let threshold = (sorted[0]! + sorted[n - 1]!) / 2;
  let sumLow = 0;
  for (let k = 1; k < n; k++) {
    sumLow += sorted[k - 1]!;
    const meanLow = sumLow / k;
    const meanHigh = (total - sumLow) / (n - k);
    const between = k * (n - k) * (meanHigh - meanLow) ** 2;
    if (between > best) {
      best = between;
      threshold = (sorted[k - 1]! + sorted[k]!) / 2;
    }
  }
  return threshold;
}

/**
 * The 7x7 data cells as the marker reads when the quad's corner `rotation` is its top-left corner (the quad's
 * corners go clockwise, so its rows run from corner `rotation` to corner `rotation + 1`).
 */
function rotatedData(cells: readonly (readonly number[])[], rotation: number): number[][] {
  const n = MARKER_CELLS - 1;
  const out: number[][] = [];
  for (let r = 1; r <= DATA_CELLS; r++) {
    const row: number[] = [];
    for (let c = 1; c <= DATA_CELLS; c++) {
      let rr = r;
      let cc = c;
      // Each quarter turn of the starting corner maps (r, c) -> (c, n - r) in the quad's own grid.
      for (let k = 0; k < rotation; k++) [rr, cc] = [cc, n - rr];
      row.push(cells[rr]![cc]!);
    }
    out.push(row);
  }
  return out;
}

function diagonalsCross(c: DetectedMarker['corners']): Point {
  const [p0, , p2] = c;
  const p1 = c[1];
  const p3 = c[3];
  // p0 + t (p2 - p0) = p1 + u (p3 - p1)
  const d1x = p2[0] - p0[0];
  const d1y = p2[1] - p0[1];
  const d2x = p3[0] - p1[0];
  const d2y = p3[1] - p1[1];
  const den = d1x * d2y - d1y * d2x;
  if (Math.abs(den) < 1e-9) return [(p0[0] + p2[0]) / 2, (p0[1] + p2[1]) / 2];
  const t = ((p1[0] - p0[0]) * d2y - (p1[1] - p0[1]) * d2x) / den;
  return [p0[0] + t * d1x, p0[1] + t * d1y];
}

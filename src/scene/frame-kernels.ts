/**
 * The camera model's develop and JPEG passes in WebAssembly (asm/frame-kernels.ts, f64x2 SIMD): the same
 * expressions in the same order as the JavaScript ones, so the same bytes, in about half their time (no bounds
 * checks, two DCT columns at once). One instance per camera model, its buffers laid out once in a memory of fixed
 * size (never grown, so the typed-array views stay valid). The module is compiled once per process. Browser-safe.
 */
import { LINEAR_MAX } from './colour.ts';
import { wasmModule } from '../core/wasm-module.ts';
import { FRAME_KERNELS_WASM } from './frame-kernels.wasm.ts';
import type { Factors } from './jpeg-pass.ts';

interface Exports {
  develop420(
    src: number,
    map: number,
    tone: number,
    noise: number,
    rows: number,
    y: number,
    cb: number,
    cr: number,
    width: number,
    top: number,
  ): void;
  transformBand(
    y: number,
    cb: number,
    cr: number,
    width: number,
    luma: number,
    chroma: number,
    rgb: number,
    top: number,
  ): void;
}

const MODULE = wasmModule(FRAME_KERNELS_WASM);
/** The first 64 KB are the kernels' own scratch. */
const RESERVED = 1 << 16;
const PAGE = 1 << 16;

/** A camera model's buffers in WebAssembly memory and the kernels that work on them (4:2:0, sizes multiple of 16). */
export class FrameKernels {
  readonly width: number;
  readonly height: number;
  /** Lens buffers (linear RGB after the blurs), and a copy of a picture the kernels read otherwise. */
  readonly work: Uint16Array;
  readonly work2: Uint16Array;
  readonly source: Uint16Array;
  /** Per output pixel, the offset (x 3 channels) of its source pixel. */
  readonly map: Int32Array;
  readonly noise: Float32Array;
  /** Mean and noise sigma per linear level, per channel (as CameraModel's tone tables). */
  readonly tone: Float32Array;
  /** Each band row's first noise draw. */
  readonly rows: Int32Array;
  /** The developed, JPEG-compressed picture. */
  readonly rgb: Uint8Array;
  readonly #memory: WebAssembly.Memory;
  readonly #exports: Exports;
  readonly #y: number;
  readonly #cb: number;
  readonly #cr: number;
  readonly #luma: number;
  readonly #chroma: number;

  constructor(width: number, height: number, noiseSize: number, luma: Factors, chroma: Factors) {
    if (width % 16 !== 0 || height % 16 !== 0) throw new RangeError('frame kernels need whole 16x16 MCUs');
    // asm/frame-kernels.ts has these sizes built in (NOISE_MASK, TONE_G and TONE_B).
    if (noiseSize !== 1 << 16 || LINEAR_MAX !== 4095)
      throw new RangeError('asm/frame-kernels.ts expects 65536 noise draws and 4096 linear levels');
    this.width = width;
    this.height = height;
    const n = width * height;
    const sizes = {
      work: n * 6,
      work2: n * 6,
      source: n * 6,
      map: n * 4,
      noise: noiseSize * 4,
      tone: 2 * 3 * (LINEAR_MAX + 1) * 4,
      rows: 16 * 4,
      rgb: n * 3,
      y: width * 16 * 8,
      cb: (width / 2) * 8 * 8,
      cr: (width / 2) * 8 * 8,
      luma: 128 * 8,
      chroma: 128 * 8,
    };
    const at: Record<string, number> = {};
    let end = RESERVED;
    for (const [name, size] of Object.entries(sizes)) {
      at[name] = end;
      end += Math.ceil(size / 16) * 16;
    }
    const pages = Math.ceil(end / PAGE);
    this.#memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    const instance = new WebAssembly.Instance(MODULE, { env: { memory: this.#memory } });
    this.#exports = instance.exports as unknown as Exports;
    const buffer = this.#memory.buffer;
    this.work = new Uint16Array(buffer, at.work, n * 3);
    this.work2 = new Uint16Array(buffer, at.work2, n * 3);
    this.source = new Uint16Array(buffer, at.source, n * 3);
    this.map = new Int32Array(buffer, at.map, n);
    this.noise = new Float32Array(buffer, at.noise, noiseSize);
    this.tone = new Float32Array(buffer, at.tone, 2 * 3 * (LINEAR_MAX + 1));
    this.rows = new Int32Array(buffer, at.rows, 16);
    this.rgb = new Uint8Array(buffer, at.rgb, n * 3);
    this.#y = at.y!;
    this.#cb = at.cb!;
    this.#cr = at.cr!;
    this.#luma = at.luma!;
    this.#chroma = at.chroma!;
    const f = new Float64Array(buffer);
    for (const [table, base] of [
      [luma, this.#luma],
      [chroma, this.#chroma],
    ] as const) {
      f.set(table.fwd, base / 8);
      f.set(table.inv, base / 8 + 64);
    }
  }

  /** Whether `a` lives in this memory (and so can be read by the kernels as it is). */
  holds(a: Uint16Array): boolean {
    return a.buffer === this.#memory.buffer;
  }

  /**
   * Develops the 16 rows from `top` of the light in `src` (one of this memory's buffers) through the map, tone
   * tables and noise (each row's first draw in `rows`), then JPEG's round trip, into `rgb`.
   */
  band(src: Uint16Array, top: number): void {
    const e = this.#exports;
    e.develop420(
      src.byteOffset,
      this.map.byteOffset,
      this.tone.byteOffset,
      this.noise.byteOffset,
      this.rows.byteOffset,
      this.#y,
      this.#cb,
      this.#cr,
      this.width,
      top,
    );
    e.transformBand(
      this.#y,
      this.#cb,
      this.#cr,
      this.width,
      this.#luma,
      this.#chroma,
      this.rgb.byteOffset,
      top,
    );
  }
}

/**
 * The rasteriser's textured fill in WebAssembly (asm/triangle-fill.ts): the same expressions in the same order as
 * src/scene/triangle-fill.ts, so the same pixels, without bounds checks. The picture and its depth live in this
 * memory, which is never grown (the views stay valid); each texture is copied in once, and one that no longer fits is
 * filled by the JavaScript loop. The module is compiled once per process. Browser-safe.
 */
import { wasmModule } from '../core/wasm-module.ts';
import { TRIANGLE_FILL_WASM } from './triangle-fill.wasm.ts';

/** asm/triangle-fill.ts `texturedTriangle`: its 43 arguments in order (booleans as 0 or 1). */
type TexturedTriangle = (...args: number[]) => void;

const MODULE = wasmModule(TRIANGLE_FILL_WASM);
const PAGE = 1 << 16;
/** Room for textures' texels (floats, RGBA): the default room's take 0.5 MB per picture kind (physical, clean). */
const TEXTURE_BYTES = 8 << 20;

/** A picture's colour (3 x u16) and 1/depth (f32) buffers in WebAssembly memory, and the fill that writes them. */
export class TexturedFill {
  readonly colour: Uint16Array;
  readonly depth: Float32Array;
  /** The fill, and the addresses of the picture's buffers it takes first. */
  readonly texturedTriangle: TexturedTriangle;
  readonly colourAt: number;
  readonly depthAt: number;
  readonly #memory: WebAssembly.Memory;
  /** Each texture's texels' address, by the texel array the JavaScript fill reads. */
  readonly #textures = new WeakMap<Float32Array, number>();
  readonly #texturesAt: number;
  #free: number;

  constructor(width: number, height: number) {
    const n = width * height;
    this.depthAt = 0;
    this.colourAt = n * 4;
    this.#texturesAt = this.#free = align16(this.colourAt + n * 6);
    const pages = Math.ceil((this.#free + TEXTURE_BYTES) / PAGE);
    this.#memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    const exports = new WebAssembly.Instance(MODULE, { env: { memory: this.#memory } }).exports;
    this.texturedTriangle = exports.texturedTriangle as TexturedTriangle;
    this.depth = new Float32Array(this.#memory.buffer, this.depthAt, n);
    this.colour = new Uint16Array(this.#memory.buffer, this.colourAt, n * 3);
  }

  /** Bytes of texels copied in so far. */
  get textureBytes(): number {
    return this.#free - this.#texturesAt;
  }

  /** The texels' address in this memory, copied in on first use; undefined when they do not fit. */
  texture(texels: Float32Array): number | undefined {
    let at = this.#textures.get(texels);
    if (at !== undefined) return at;
    if (this.#free + texels.byteLength > this.#memory.buffer.byteLength) return undefined;
    at = this.#free;
    new Float32Array(this.#memory.buffer, at, texels.length).set(texels);
    this.#free = align16(at + texels.byteLength);
    this.#textures.set(texels, at);
    return at;
  }
}

const align16 = (n: number) => (n + 15) & ~15;

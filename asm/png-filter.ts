/**
 * AssemblyScript source of src/vision/png-filter.wasm.ts (`npm run build:wasm` regenerates it): PNG's "up" filter
 * (each byte minus the one above it, mod 256) sixteen bytes at a time. Buffers in the caller's memory, by address.
 */

const PNG_FILTER_UP: u8 = 2;

/** `height` rows of `stride` bytes at `src` into `dst`, each row led by its filter byte (the first row as it is). */
export function filterUp(src: usize, dst: usize, stride: usize, height: usize): void {
  if (height === 0) return;
  store<u8>(dst, PNG_FILTER_UP);
  memory.copy(dst + 1, src, stride);
  for (let y: usize = 1; y < height; y++) {
    const o = dst + y * (stride + 1) + 1;
    store<u8>(o - 1, PNG_FILTER_UP);
    const a = src + y * stride;
    let x: usize = 0;
    for (; x + 16 <= stride; x += 16) v128.store(o + x, i8x16.sub(v128.load(a + x), v128.load(a + x - stride)));
    for (; x < stride; x++) store<u8>(o + x, load<u8>(a + x) - load<u8>(a + x - stride));
  }
}

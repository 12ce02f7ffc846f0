/** A WebAssembly module from its bytes in base64, as `npm run build:wasm` commits them (the `.wasm.ts` files). */
export function wasmModule(base64: string): WebAssembly.Module {
  return new WebAssembly.Module(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
}

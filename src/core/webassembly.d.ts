/**
 * The part of the WebAssembly API the project calls (src/core/wasm-module.ts and the kernels that use it): its
 * libraries (ES2023, @types/node 20) declare none of it; a browser's DOM library declares the whole.
 */
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number });
    readonly buffer: ArrayBuffer;
  }
}

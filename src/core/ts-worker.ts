/**
 * Starting a worker thread on a TypeScript module: the worker does not inherit the loader the server was started with
 * (`node --import tsx`), so its boot code registers tsx first, then imports the entry module.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { BUILT } from './entry.ts';

/** Code for `new Worker(code, { eval: true })` that runs the TypeScript module at `entry` (a file URL). */
export function typescriptWorkerBoot(entry: string): string {
  const resolve = createRequire(import.meta.url).resolve;
  const apis = ['tsx/esm/api', 'tsx/cjs/api'].map((m) =>
    JSON.stringify(pathToFileURL(resolve(m).replace(/\.cjs$/, '.mjs')).href),
  );
  return `Promise.all([import(${apis[0]}), import(${apis[1]})]).then(([esm, cjs]) => { esm.register(); cjs.register(); return import(${JSON.stringify(entry)}); });`;
}

/**
 * Boot code for a worker that needs no TypeScript of its own: the bare import when built (no tsx to load: about
 * 100 ms less per worker), the TypeScript boot when the sources run.
 */
export function workerBoot(entry: string): string {
  return BUILT ? `import(${JSON.stringify(entry)});` : typescriptWorkerBoot(entry);
}

/**
 * Where the project's own files are, whether it runs from its sources (tsx) or from its build (dist/, made by
 * scripts/build.js): the package's root, and the modules it starts in worker threads or child processes.
 */
import { fileURLToPath } from 'node:url';

/** True when this code runs from the build (dist/*.js), false when tsx runs the sources (src/**.ts). */
export const BUILT = !import.meta.url.endsWith('.ts');

/** The package's root folder (robots/, urdf/, src/): dist/ and src/core/ sit at different depths below it. */
export const PACKAGE_ROOT = fileURLToPath(new URL(BUILT ? '..' : '../..', import.meta.url));

/**
 * The module to start in a worker or child process: its source (`source`, resolved by the caller against its own
 * import.meta.url) under tsx, or the bundle scripts/build.js makes of it under `name` (ENTRIES there) when built.
 */
export function entryModule(source: URL, name: string): URL {
  return BUILT ? new URL(`./${name}.js`, import.meta.url) : source;
}

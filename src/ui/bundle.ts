/**
 * The browser code of the view, bundled by esbuild from the project's own dependencies (three): no CDN, works
 * offline. The built server serves the bundle scripts/build.js made beside it (dist/ui/app.js, the same options:
 * bundle-options.json), so no request spends seconds of CPU on it beside a live robot; run from the sources (tsx),
 * it is bundled on first request and kept in memory. A failed build is reported and retried on the next request.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BUILT, PACKAGE_ROOT } from '../core/entry.ts';

export const BROWSER_DIR = path.join(PACKAGE_ROOT, 'src/ui/browser/');
/** Where scripts/build.js writes the bundle. */
export const PREBUILT_BUNDLE = path.join(PACKAGE_ROOT, 'dist/ui/app.js');

export class BrowserBundle {
  readonly #entry: string;
  #built: Promise<string> | undefined;

  readonly #prebuilt: string | undefined;

  /** `prebuilt`: a bundle file to serve instead of building (the built server's; none from the sources). */
  constructor(entry = `${BROWSER_DIR}main.ts`, prebuilt = BUILT ? PREBUILT_BUNDLE : undefined) {
    this.#entry = entry;
    this.#prebuilt = prebuilt;
  }

  /** The bundled JavaScript (an ES module). Starts the build if it has not started. */
  script(): Promise<string> {
    this.#built ??= this.#build().catch((err: unknown) => {
      this.#built = undefined;
      throw err;
    });
    return this.#built;
  }

  async #build(): Promise<string> {
    if (this.#prebuilt) return readFile(this.#prebuilt, 'utf8');
    // Loaded on first use: a server nobody opens the view of never pays for esbuild.
    const { build } = await import('esbuild');
    const options = JSON.parse(await readFile(`${BROWSER_DIR}bundle-options.json`, 'utf8')) as object;
    const result = await build({ ...options, entryPoints: [this.#entry], write: false, logLevel: 'silent' });
    return result.outputFiles[0]!.text;
  }
}

/**
 * The browser code of the view, bundled by esbuild from the project's own dependencies (three, urdf-loader) on first
 * request and kept in memory: no build step, no CDN, works offline. A failed build is reported and retried on the
 * next request.
 */
import path from 'node:path';
import { PACKAGE_ROOT } from '../core/entry.ts';

export const BROWSER_DIR = path.join(PACKAGE_ROOT, 'src/ui/browser/');

export class BrowserBundle {
  readonly #entry: string;
  #built: Promise<string> | undefined;

  constructor(entry = `${BROWSER_DIR}main.ts`) {
    this.#entry = entry;
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
    // Loaded on first use: a server nobody opens the view of never pays for esbuild.
    const { build } = await import('esbuild');
    const result = await build({
      entryPoints: [this.#entry],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
    });
    return result.outputFiles[0]!.text;
  }
}

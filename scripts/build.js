/**
 * The server's build: esbuild bundles src/ into dist/ (run by `prepare` at `npm ci`, and by `npm start` or the bin
 * when src/ changed since), so a start runs JavaScript and compiles no TypeScript. Plain JavaScript: it runs before
 * anything is built. `node scripts/build.js` builds; `--if-stale` builds only when src/ is newer than dist/.
 */
import { readdirSync, statSync, readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import process from 'node:process';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(ROOT, 'dist');
const STAMP = path.join(DIST, 'build-stamp.json');

/**
 * The bundles: the server, and the modules it starts in worker threads or child processes (each found by
 * src/core/entry.ts under the same name). Their output names are stable: the stamp and the workers rely on them.
 */
export const ENTRIES = {
  main: 'src/main.ts',
  'primitive-worker': 'src/primitives/isolated/worker.ts',
  'detect-worker': 'src/vision/detect-worker.ts',
  'bus-process': 'src/real/bus-process.ts',
  'calibration-fit-worker': 'src/calibration/fit-worker.ts',
  'shadow-twin-worker': 'src/shadow/twin-engine-worker.ts',
  'classroom-shard': 'src/classroom/shard-host.ts',
  service: 'src/service/main.ts',
};

/**
 * Packages left to Node at run time: native addons (serialport, esbuild), loaders (tsx) and pino-pretty (loaded only
 * for a terminal). @fastify/swagger-ui is bundled: src/http/openapi.ts gives it its folder, found at run time.
 */
const EXTERNAL = ['serialport', '@serialport/*', 'esbuild', 'tsx', 'tsx/*', 'pino-pretty'];

/**
 * Rapier's compat package carries its WebAssembly as base64 decoded by a JavaScript loop at init: 200-600 ms of a
 * start on this machine. The build writes the bytes to dist/rapier.wasm and the bundle reads that file: no decoding,
 * and no 2.8 MB string kept twice in memory (the literal and the source V8 holds). If a later version reads
 * differently, the package is bundled as it is (and the start is slower, not broken).
 */
const RAPIER_WASM = 'rapier.wasm';
const wasmFromFile = {
  name: 'rapier-wasm-file',
  setup(build) {
    build.onLoad({ filter: /rapier3d-simd-compat[\\/]dist[\\/]rapier\.mjs$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const call = /[\w$]+\.toByteArray\("([A-Za-z0-9+/=]+)"\)/.exec(text);
      if (!call) return { contents: text, loader: 'js', warnings: [{ text: 'base64 call not found' }] };
      writeFileSync(path.join(DIST, RAPIER_WASM), Buffer.from(call[1], 'base64'));
      const read = `require("node:fs").readFileSync(new URL(${JSON.stringify('./' + RAPIER_WASM)}, import.meta.url))`;
      // Given bytes, the loader's checks for a fetch Request or Response never hold; reading those globals would
      // load Node's fetch (undici): 30 ms of every start.
      const fetchChecks = /"function"==typeof (?:Request|Response)&&/g;
      return { contents: text.replace(call[0], read).replace(fetchChecks, 'false&&'), loader: 'js' };
    });
  },
};

/** What a build depends on: the sources, this script and the lock file (a dependency's update rebuilds). */
function inputs() {
  const files = [fileURLToPath(import.meta.url), path.join(ROOT, 'package-lock.json')];
  for (const entry of readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true }))
    if (entry.isFile()) files.push(path.join(entry.parentPath ?? entry.path, entry.name));
  return files;
}

/** A cheap fingerprint of the inputs: how many, and the newest modification time (a few ms for ~200 files). */
function fingerprint() {
  let newest = 0;
  const files = inputs();
  for (const f of files) newest = Math.max(newest, statSync(f).mtimeMs);
  return { files: files.length, newest };
}

/** Why dist/ cannot be trusted for the sources as they are now, or undefined when it can. */
export function staleness() {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return 'no build yet';
  }
  let now;
  try {
    now = fingerprint();
  } catch {
    return undefined; // no sources beside the build (an installed package): the build is all there is
  }
  if (now.files !== stamp.files) return 'files were added to or removed from src/';
  if (now.newest > stamp.newest) return 'src/ changed since the last build';
  return undefined;
}

export async function build() {
  const before = fingerprint();
  const esbuild = await import('esbuild');
  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(DIST, { recursive: true });
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: ENTRIES,
    outdir: DIST,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    // Bundled CommonJS packages call require(): give the ES module bundle one.
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    sourcemap: 'linked',
    // No comments or indentation: V8 keeps every module's source in memory, and one non-ASCII character in a
    // comment would make a whole chunk's source two bytes a character (the Torso's idle RSS, issue 31).
    minifyWhitespace: true,
    // The licence notices go beside each bundle (<name>.js.LEGAL.txt), kept but out of the source V8 holds.
    legalComments: 'external',
    plugins: [wasmFromFile],
    logLevel: 'warning',
  });
  // The web view's browser bundle (src/ui/bundle.ts serves it from the built server), with the options it uses.
  await esbuild.build({
    ...JSON.parse(readFileSync(path.join(ROOT, 'src/ui/browser/bundle-options.json'), 'utf8')),
    absWorkingDir: ROOT,
    entryPoints: ['src/ui/browser/main.ts'],
    outfile: path.join(DIST, 'ui', 'app.js'),
    logLevel: 'warning',
  });
  // The stamp describes the sources the build started from: an edit made during the build makes it stale.
  writeFileSync(STAMP, JSON.stringify(before));
}

/** The lock of a build in progress: a directory (mkdir is atomic), beside dist/. */
const LOCK = path.join(ROOT, 'dist.lock');
/** A lock older than this was left by a build that died: taken over. */
const STALE_LOCK_MS = 5 * 60 * 1000;

/** When `lock` was taken (ms since the epoch), or undefined when it is free. */
function lockedSince(lock) {
  try {
    return statSync(lock).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * Runs `fn` holding `lock` (a directory path): two processes that find dist/ stale at once (two test files, two
 * starts) build one after the other, not into the same folder together. Waits for a holder; takes over a lock older
 * than `staleMs`.
 */
export async function withLock(fn, lock = LOCK, staleMs = STALE_LOCK_MS) {
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const since = lockedSince(lock);
      if (since === undefined) continue; // released meanwhile
      if (Date.now() - since > staleMs) rmSync(lock, { recursive: true, force: true });
      else await sleep(100);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Builds when dist/ is missing or older than src/; says why on stderr (stdout is the server's log). */
export async function buildIfStale() {
  if (!staleness()) return;
  await withLock(async () => {
    // Asked again under the lock: a build that held it may have just made dist/ fresh.
    const why = staleness();
    if (!why) return;
    const t0 = performance.now();
    await build();
    process.stderr.write(`poppy-twin: built dist/ (${why}) in ${Math.round(performance.now() - t0)} ms\n`);
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--if-stale')) await buildIfStale();
  else await build();
}

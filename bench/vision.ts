/**
 * Vision benchmarks (issue 10): render and render + PNG at 320x240 and 640x480, detection at 640x480 with and
 * without a card, the detection rate over a seeded sweep of card poses with noise and blur, false detections
 * on views without cards, frame.png requests per second and the sim's real-time factor while a client pulls
 * frames as fast as it can. The server runs in its own process; the client shares this machine's cores.
 */
import { PNG } from 'pngjs';
import type { Frame } from '../src/core/backend.ts';
import { detectMarkers, MarkerDetector } from '../src/vision/detect.ts';
import { PngEncoder } from '../src/vision/png.ts';
import { CARDS, addClutter, ergoJrView } from '../test/vision/views.ts';
import { startServerProcess, stopServerProcess } from './server.ts';

export interface Timing {
  readonly medianMs: number;
  readonly p99Ms: number;
  /** Median CPU time of this process per call (all its threads), ms: what a loaded machine's waits leave out. */
  readonly cpuMedianMs?: number;
}

export interface VisionResult {
  readonly render: Record<string, Timing>;
  readonly renderPng: Record<string, Timing>;
  /** PNG encoders compared on one rendered 640x480 frame: time and size. */
  readonly encoders: Record<string, Timing & { bytes: number }>;
  readonly detectWithCard: Timing;
  readonly detectEmpty: Timing;
  readonly sweep: { trials: number; found: number; wrong: number };
  readonly falsePositives: { frames: number; detections: number };
  readonly framePng: { requestsPerSecond: number; realTimeFactor: number };
}

function time(n: number, fn: () => unknown): Timing {
  const samples: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < 5; i++) fn(); // warm-up
  for (let i = 0; i < n; i++) {
    const c = process.cpuUsage();
    const t = performance.now();
    fn();
    samples.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  samples.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return {
    medianMs: samples[n >> 1]!,
    p99Ms: samples[Math.min(n - 1, Math.floor(n * 0.99))]!,
    cpuMedianMs: cpu[n >> 1]!,
  };
}

function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

export async function runVisionBench(quick: boolean): Promise<VisionResult> {
  const n = quick ? 40 : 200;
  const render: Record<string, Timing> = {};
  const renderPng: Record<string, Timing> = {};
  for (const resolution of [
    [320, 240],
    [640, 480],
  ] as [number, number][]) {
    const view = await ergoJrView({ resolution });
    view.hold('tetris', { distance: 0.25, yaw: 0.3 });
    const key = resolution.join('x');
    render[key] = time(n, () => view.camera.render());
    const png = new PngEncoder();
    renderPng[key] = time(n, () => png.encode(view.camera.render()));
  }

  const view = await ergoJrView();
  view.hold('tetris', { distance: 0.25, yaw: 0.3 });
  const encoders = compareEncoders(view.camera.render(), n);
  view.cards.putAway('tetris');
  const detector = new MarkerDetector();
  view.hold('caribou', { distance: 0.25, yaw: 0.3 });
  const withCard = view.camera.render();
  view.cards.putAway('caribou');
  const empty = view.camera.render();
  const detectWithCard = time(n, () => detector.detect(withCard));
  const detectEmpty = time(n, () => detector.detect(empty));

  // The sweep of the tests, longer: whole card in view, each side >= 40 px, tilt <= 50 deg, noise and blur.
  const rand = seeded(2026);
  const trials = quick ? 200 : 1000;
  let found = 0;
  let wrong = 0;
  const f = 320 / Math.tan(Math.PI / 6);
  for (let t = 0; t < trials; t++) {
    const { name, id } = CARDS[t % 3]!;
    view.camera.effects = {
      noise: 3 + rand() * 5,
      blur: rand() < 0.5 ? 1 : 0,
      exposure: 0.7 + rand() * 0.6,
      seed: t + 1,
    };
    for (;;) {
      const distance = 0.1 + rand() * 0.8;
      const tilt = ((rand() * 50) / 180) * Math.PI;
      const direction = rand() * 2 * Math.PI;
      view.hold(name, {
        distance,
        x: (rand() - 0.5) * distance * 0.9,
        y: (rand() - 0.5) * distance * 0.7,
        yaw: tilt * Math.cos(direction),
        pitch: tilt * Math.sin(direction),
        roll: rand() * 2 * Math.PI,
      });
      // Foreshortened side >= 40 px: size * cos(tilt) * f / distance, a slight underestimate off-axis.
      if (view.camera.sees(view.cards.get(name)) && (0.06 * Math.cos(tilt) * f) / (distance + 0.03) >= 40)
        break;
    }
    const ids = detectMarkers(view.camera.render()).map((m) => m.id);
    if (ids.includes(id)) found++;
    wrong += ids.filter((i) => i !== id).length;
    view.cards.putAway(name);
  }

  const frames = quick ? 200 : 1000;
  let detections = 0;
  for (let t = 0; t < frames; t++) {
    view.pose.m1 = (rand() - 0.5) * 160;
    view.pose.m5 = -20 + rand() * 90;
    view.pose.m6 = -40 + rand() * 80;
    const clutter = addClutter(view, t + 1);
    view.camera.effects = { noise: rand() * 6, blur: rand() < 0.3 ? 1 : 0, seed: t + 1 };
    detections += detector.detect(view.camera.render()).length;
    clutter.removeFromParent();
  }

  const server = await startServerProcess(['--robot', 'ergo-jr', '--speed', '1']);
  let framePng: VisionResult['framePng'];
  try {
    await fetch(`${server.url}/sim/cards/tetris/show.json`, { method: 'POST', body: '{}' });
    const status = async () =>
      (await (await fetch(`${server.url}/sim/status.json`)).json()) as {
        sim_time: number;
        wall_time: number;
      };
    const pull = async (ms: number) => {
      let count = 0;
      for (const end = performance.now() + ms; performance.now() < end;) {
        const res = await fetch(`${server.url}/sensors/camera/frame.png`);
        await res.arrayBuffer();
        if (res.ok) count++;
      }
      return count;
    };
    // Warm-up, as the HTTP bench does: the server settles, the renderer and the encoder get compiled.
    await new Promise((r) => setTimeout(r, 2000));
    await pull(1000);
    const before = await status();
    const started = performance.now();
    const count = await pull(quick ? 3000 : 10000);
    const seconds = (performance.now() - started) / 1000;
    const after = await status();
    framePng = {
      requestsPerSecond: count / seconds,
      realTimeFactor: (after.sim_time - before.sim_time) / (after.wall_time - before.wall_time),
    };
  } finally {
    await stopServerProcess(server);
  }
  return {
    render,
    renderPng,
    encoders,
    detectWithCard,
    detectEmpty,
    sweep: { trials, found, wrong },
    falsePositives: { frames, detections },
    framePng,
  };
}

/**
 * The encoder used (src/vision/png.ts: rows filtered "up", node:zlib level 1) against pngjs's settings on the same
 * frame. @napi-rs/canvas was measured here too (about 20 ms a 640x480 frame, 2026-11-22, bench/README.md) and dropped
 * from the dependencies: the registry this project installs from carries only two of its nine platform binaries.
 */
function compareEncoders(frame: Frame, n: number): Record<string, Timing & { bytes: number }> {
  const out: Record<string, Timing & { bytes: number }> = {};
  let bytes = 0;
  for (const [label, filterType, deflateLevel] of [
    ['pngjs filter none, level 1', 0, 1],
    ['pngjs filter sub, level 3', 1, 3],
    ['pngjs filter up, level 3', 2, 3],
    ['pngjs adaptive filter, level 6', -1, 6],
  ] as const) {
    const t = time(n, () => {
      const png = new PNG({ width: frame.width, height: frame.height, colorType: 2, inputHasAlpha: false });
      png.data = Buffer.from(frame.rgb.buffer, frame.rgb.byteOffset, frame.rgb.length);
      bytes = PNG.sync.write(png, {
        colorType: 2,
        inputColorType: 2,
        inputHasAlpha: false,
        filterType,
        deflateLevel,
      }).length;
    });
    out[label] = { ...t, bytes };
  }
  let used: Buffer = Buffer.alloc(0);
  const encoder = new PngEncoder();
  out['ours: filter up, zlib level 1 (used)'] = {
    ...time(n, () => {
      used = encoder.encode(frame);
    }),
    bytes: used.length,
  };
  // The encoder used must give back the frame's pixels, read by another decoder.
  const back = PNG.sync.read(used);
  for (let p = 0, q = 0; p < frame.rgb.length; p += 3, q += 4)
    if (
      back.data[q] !== frame.rgb[p] ||
      back.data[q + 1] !== frame.rgb[p + 1] ||
      back.data[q + 2] !== frame.rgb[p + 2]
    )
      throw new Error(`PngEncoder: pixel ${p / 3} does not decode to the frame's`);
  return out;
}

/** Detection rates on realistic frames (the room, the Pi camera module's model), per card. */
export interface RealismResult {
  /** Rows of "found / trials" per card, by distance (m), tilt (deg) and light level. */
  readonly byDistance: { distance: number; found: Record<string, number>; trials: number }[];
  readonly byAngle: { degrees: number; found: Record<string, number>; trials: number }[];
  readonly byLight: { level: number; gain: number; found: Record<string, number>; trials: number }[];
  readonly wrong: number;
  readonly falsePositives: { frames: number; detections: number };
  /** A still view: the picture and the lens light are kept, each frame draws new noise (src/scene/rasterizer.ts). */
  readonly render: Timing;
  readonly renderPng: Timing;
  /** The card turning a little every frame: the rectangle it covered and covers is drawn again. */
  readonly renderPngMoving: Timing;
  /** The robot's base turning a little every frame: the camera moves, everything is drawn again. */
  readonly renderPngCameraMoving: Timing;
  readonly detect: Timing;
}

export async function runVisionRealismBench(quick: boolean): Promise<RealismResult> {
  const view = await ergoJrView({ realistic: true });
  const rand = seeded(33);
  const perCell = quick ? 4 : 12;
  let wrong = 0;
  /** Detects one card held at `distance` and `tilt` (rad), with a random roll and offset, in `light`. */
  const trial = (name: string, id: number, distance: number, tilt: number, light: number): boolean => {
    view.camera.lightLevel = light;
    // Draw the offset and roll again until the whole card is in the picture (close up, a rolled card overflows).
    for (let attempt = 0; ; attempt++) {
      const direction = rand() * 2 * Math.PI;
      view.hold(name, {
        distance,
        x: (rand() - 0.5) * distance * 0.3,
        y: (rand() - 0.5) * distance * 0.2,
        yaw: tilt * Math.cos(direction),
        pitch: tilt * Math.sin(direction),
        roll: rand() * 2 * Math.PI,
      });
      if (view.camera.sees(view.cards.get(name))) break;
      if (attempt === 200) throw new Error(`${name} never fits the picture at ${distance} m`);
    }
    const ids = detectMarkers(view.camera.render()).map((m) => m.id);
    view.cards.putAway(name);
    wrong += ids.filter((i) => i !== id).length;
    return ids.includes(id);
  };
  const sweep = (distance: number, tilt: number, light: number) => {
    const found: Record<string, number> = {};
    for (const { name, id } of CARDS) {
      found[name] = 0;
      for (let k = 0; k < perCell; k++) if (trial(name, id, distance, tilt, light)) found[name]++;
    }
    return { found, trials: perCell };
  };
  const byDistance = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8].map((distance) => ({
    distance,
    ...sweep(distance, 0, 1),
  }));
  const byAngle = [0, 15, 30, 45, 60].map((degrees) => ({
    degrees,
    ...sweep(0.3, (degrees * Math.PI) / 180, 1),
  }));
  const byLight = [1, 0.3, 0.1, 0.03, 0.01, 0.003].map((level) => {
    const row = sweep(0.3, 0, level);
    return { level, gain: view.camera.lastExposure!.gain, ...row };
  });
  view.camera.lightLevel = 1;

  // Frames without cards: the head anywhere, the room at any light.
  const start = { ...view.pose };
  const frames = quick ? 200 : 1000;
  let detections = 0;
  const detector = new MarkerDetector();
  for (let t = 0; t < frames; t++) {
    view.pose.m1 = (rand() - 0.5) * 300;
    view.pose.m2 = (rand() - 0.5) * 180;
    view.pose.m5 = -60 + rand() * 150;
    view.pose.m6 = -80 + rand() * 160;
    view.camera.lightLevel = 0.01 + rand() * 1.5;
    detections += detector.detect(view.camera.render()).length;
  }
  Object.assign(view.pose, start);
  view.camera.lightLevel = 1;

  const n = quick ? 40 : 200;
  view.hold('tetris', { distance: 0.25, yaw: 0.3 });
  const render = time(n, () => view.camera.render());
  const png = new PngEncoder();
  const renderPng = time(n, () => png.encode(view.camera.render()));
  let turn = 0;
  const renderPngMoving = time(n, () => {
    view.hold('tetris', { distance: 0.25, yaw: 0.3 + (turn++ % 2) * 0.01 });
    return png.encode(view.camera.render());
  });
  view.hold('tetris', { distance: 0.25, yaw: 0.3 });
  const base = view.pose.m1 ?? 0;
  const renderPngCameraMoving = time(n, () => {
    view.pose.m1 = base + (turn++ % 2) * 0.1;
    return png.encode(view.camera.render());
  });
  view.pose.m1 = base;
  const withCard = view.camera.render();
  const detect = time(n, () => detector.detect(withCard));
  view.cards.putAway('tetris');
  return {
    byDistance,
    byAngle,
    byLight,
    wrong,
    falsePositives: { frames, detections },
    render,
    renderPng,
    renderPngMoving,
    renderPngCameraMoving,
    detect,
  };
}

/** Prints the realistic-frame tables (npm run bench -- vision). */
export function printVisionRealism(r: RealismResult): void {
  const names = CARDS.map((c) => c.name);
  const cells = (found: Record<string, number>, trials: number) =>
    names.map((c) => `${found[c]}/${trials}`.padStart(8)).join('');
  console.log(`\n== detection on realistic frames (Ergo Jr, default room, camera model on) ==`);
  console.log(`distance (tilt 0, light 1)   ${names.map((c) => c.padStart(8)).join('')}`);
  for (const row of r.byDistance)
    console.log(`  ${row.distance.toFixed(1)} m`.padEnd(29) + cells(row.found, row.trials));
  console.log(`tilt (0.3 m, light 1)`);
  for (const row of r.byAngle) console.log(`  ${row.degrees} deg`.padEnd(29) + cells(row.found, row.trials));
  console.log(`light level (0.3 m, tilt 0)`);
  for (const row of r.byLight)
    console.log(`  x${row.level} (gain ${row.gain.toFixed(1)})`.padEnd(29) + cells(row.found, row.trials));
  console.log(`wrong ids: ${r.wrong}`);
  console.log(
    `false detections: ${r.falsePositives.detections} over ${r.falsePositives.frames} frames without cards`,
  );
  const t = (x: Timing) =>
    `median ${x.medianMs.toFixed(1)} ms, p99 ${x.p99Ms.toFixed(1)} ms, CPU median ${x.cpuMedianMs!.toFixed(1)} ms`;
  console.log(`render 640x480 (realistic, still view): ${t(r.render)}`);
  console.log(`render + PNG 640x480 (realistic, still view): ${t(r.renderPng)}   target median <= 15 ms`);
  console.log(`render + PNG 640x480 (realistic, card turning every frame): ${t(r.renderPngMoving)}`);
  console.log(`render + PNG 640x480 (realistic, base turning every frame): ${t(r.renderPngCameraMoving)}`);
  console.log(`detection 640x480 (realistic, a card): ${t(r.detect)}   target median <= 15 ms`);
}

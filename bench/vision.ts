/**
 * Vision benchmarks (issue 10): render and render + PNG at 320x240 and 640x480, detection at 640x480 with and
 * without a card, the detection rate over a seeded sweep of card poses with noise and blur, false detections
 * on views without cards, frame.png requests per second and the sim's real-time factor while a client pulls
 * frames as fast as it can. The server runs in its own process; the client shares this machine's cores.
 */
import { createCanvas } from '@napi-rs/canvas';
import { PNG } from 'pngjs';
import type { Frame } from '../src/core/backend.ts';
import { detectMarkers, MarkerDetector } from '../src/vision/detect.ts';
import { encodePng } from '../src/vision/png.ts';
import { CARDS, addClutter, ergoJrView } from '../test/vision/views.ts';
import { startServerProcess, stopServerProcess } from './server.ts';

export interface Timing {
  readonly medianMs: number;
  readonly p99Ms: number;
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
  for (let i = 0; i < 5; i++) fn(); // warm-up
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return { medianMs: samples[n >> 1]!, p99Ms: samples[Math.min(n - 1, Math.floor(n * 0.99))]! };
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
    renderPng[key] = time(n, () => encodePng(view.camera.render()));
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
    const before = await status();
    const end = performance.now() + (quick ? 3000 : 10000);
    const started = performance.now();
    let count = 0;
    while (performance.now() < end) {
      const res = await fetch(`${server.url}/sensors/camera/frame.png`);
      await res.arrayBuffer();
      if (res.ok) count++;
    }
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

/** @napi-rs/canvas against pngjs (zlib) settings, on the same frame. */
function compareEncoders(frame: Frame, n: number): Record<string, Timing & { bytes: number }> {
  const out: Record<string, Timing & { bytes: number }> = {};
  const canvas = createCanvas(frame.width, frame.height);
  const ctx = canvas.getContext('2d');
  let bytes = 0;
  const napi = time(n, () => {
    const image = ctx.createImageData(frame.width, frame.height);
    for (let i = 0, j = 0; j < frame.rgb.length; i += 4, j += 3) {
      image.data[i] = frame.rgb[j]!;
      image.data[i + 1] = frame.rgb[j + 1]!;
      image.data[i + 2] = frame.rgb[j + 2]!;
      image.data[i + 3] = 255;
    }
    ctx.putImageData(image, 0, 0);
    bytes = canvas.encodeSync('png').length;
  });
  out['@napi-rs/canvas encodeSync'] = { ...napi, bytes };
  for (const [label, filterType, deflateLevel] of [
    ['pngjs filter none, level 1', 0, 1],
    ['pngjs filter sub, level 3', 1, 3],
    ['pngjs filter up, level 3 (used)', 2, 3],
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
  const used = encodePng(frame).length;
  if (used !== out['pngjs filter up, level 3 (used)']!.bytes)
    throw new Error('encodePng settings drifted from the bench');
  return out;
}

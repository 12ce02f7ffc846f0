/**
 * The camera model (src/scene/camera-model.ts): seeded and repeatable, each effect where it should be, and a bad
 * setting refused at start-up with one line naming it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DEFAULT_REALISM } from '../../src/config/camera-realism.ts';
import { loadRobotConfig, parseRobotConfig } from '../../src/config/robot-config.ts';
import type { Frame } from '../../src/core/backend.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { CameraModel } from '../../src/scene/camera-model.ts';
import { LINEAR_WHITE, type LinearImage } from '../../src/scene/colour.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const W = 160;
const H = 120;

/** A linear picture: left half white paper, right half dark ink, everything `depth` metres away. */
function halves(depth = 1.5, white = LINEAR_WHITE * 0.8): LinearImage {
  const rgb = new Uint16Array(W * H * 3);
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) rgb.fill(x < W / 2 ? white : 40, (y * W + x) * 3, (y * W + x) * 3 + 3);
  // Focal length of a 640-pixel-wide camera: the focus blur of the real module's pixels.
  return { width: W, height: H, rgb, invDepth: new Float32Array(W * H).fill(1 / depth), focal: 554 };
}

const grey = (f: Frame, x: number, y: number) => {
  const i = (y * f.width + x) * 3;
  return (f.rgb[i]! + f.rgb[i + 1]! + f.rgb[i + 2]!) / 3;
};

/** Pixels along the middle row whose grey lies between the two sides' levels: how wide the edge is. */
function edgeWidth(f: Frame): number {
  const lo = grey(f, W - 10, H / 2);
  const hi = grey(f, 10, H / 2);
  let n = 0;
  for (let x = 0; x < W; x++) {
    const g = grey(f, x, H / 2);
    if (g > lo + 0.2 * (hi - lo) && g < hi - 0.2 * (hi - lo)) n++;
  }
  return n;
}

/** Standard deviation of the grey levels in a square of the white half. */
function spread(f: Frame): number {
  const values: number[] = [];
  for (let y = 40; y < 80; y++) for (let x = 20; x < 60; x++) values.push(grey(f, x, y));
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
}

const plain = { ...DEFAULT_REALISM, k1: 0, k2: 0, jpegQuality: 0 };

describe('the camera model', () => {
  it('is repeatable: the same seed and frame give the same bytes; the next frame has other noise', () => {
    const a = new CameraModel(W, H, 60, 20, DEFAULT_REALISM);
    const b = new CameraModel(W, H, 60, 20, DEFAULT_REALISM);
    const f0 = a.capture(halves(), 0);
    expect(Buffer.from(b.capture(halves(), 0).rgb).equals(Buffer.from(f0.rgb))).to.equal(true);
    expect(Buffer.from(a.capture(halves(), 1).rgb).equals(Buffer.from(f0.rgb))).to.equal(false);
    const other = new CameraModel(W, H, 60, 20, { ...DEFAULT_REALISM, seed: 2 });
    expect(Buffer.from(other.capture(halves(), 0).rgb).equals(Buffer.from(f0.rgb))).to.equal(false);
  });

  it('exposes for mid grey, and dims to more gain and more noise in low light', () => {
    const model = new CameraModel(W, H, 60, 20, plain);
    const bright = model.capture(halves(), 0);
    const brightReport = model.lastExposure!;
    expect(brightReport.gain).to.equal(1);
    const dim = model.capture(halves(), 0, { lightLevel: 0.03 });
    const dimReport = model.lastExposure!;
    expect(dimReport.exposure).to.be.closeTo(1 / 30, 1e-9);
    expect(dimReport.gain).to.be.above(1);
    expect(spread(dim)).to.be.above(spread(bright) * 1.5);
    // Too dark even for the longest exposure at the highest gain: the picture darkens.
    model.capture(halves(), 0, { lightLevel: 0.001 });
    expect(model.lastExposure!.gain).to.equal(DEFAULT_REALISM.maxGain);
  });

  it('blurs near things (focus) and moving pictures (motion), and leaves far still ones sharp', () => {
    const model = new CameraModel(W, H, 60, 20, plain);
    const sharp = edgeWidth(model.capture(halves(1.5), 0));
    expect(sharp).to.be.at.most(2);
    const near = edgeWidth(model.capture(halves(0.08), 0));
    expect(near).to.be.above(sharp + 2);
    expect(model.lastExposure!.focusBlur).to.be.above(2);
    // 3000 px/s during the exposure the auto-exposure picks (a few ms): a smear of several pixels.
    const moving = model.capture(halves(1.5), 0, { motion: [3000, 0] });
    expect(model.lastExposure!.motionBlur).to.be.above(4);
    expect(edgeWidth(moving)).to.be.above(sharp + 2);
    // Motion along the edge does not widen it.
    expect(edgeWidth(model.capture(halves(1.5), 0, { motion: [0, 3000] }))).to.be.at.most(sharp + 1);
  });

  it('blurs a narrow depth range (boxes up to 3x3) as its summed-area table would, pixel for pixel', () => {
    // Random levels, most pixels 0.2 to 0.3 m away (blur radius about 1 to 1.5 px), a band far and sharp.
    const rand = mulberry32(7);
    const rgb = Uint16Array.from({ length: W * H * 3 }, () => Math.floor(rand() * 3000));
    const invDepth = Float32Array.from({ length: W * H }, (_, i) =>
      i % W > 100 && i % W < 120 ? 0.5 : 1 / (0.2 + 0.1 * rand()),
    );
    const narrow: LinearImage = { width: W, height: H, rgb, invDepth, focal: 554 };
    // The same picture with one pixel 5 cm from the lens: a box 11 px wide, so the table is built for all.
    const deep = { ...narrow, invDepth: Float32Array.from(invDepth) };
    const [px, py] = [150, 110];
    deep.invDepth[py * W + px] = 20;
    const model = new CameraModel(W, H, 60, 20, plain);
    const a = model.capture(narrow, 3);
    expect(model.lastExposure!.focusBlur).to.be.within(1, 1.6);
    const b = model.capture(deep, 3);
    expect(model.lastExposure!.focusBlur).to.be.above(6);
    let differing = 0;
    for (let y = 0; y < H; y++)
      for (let x = 0; x < W; x++) {
        const i = (y * W + x) * 3;
        const same = a.rgb[i] === b.rgb[i] && a.rgb[i + 1] === b.rgb[i + 1] && a.rgb[i + 2] === b.rgb[i + 2];
        if (same) continue;
        differing++;
        // Only the near pixel's own box and the boxes that hold it (its neighbours') differ.
        expect([Math.abs(x - px), Math.abs(y - py)], `pixel ${x}, ${y}`).to.satisfy(
          ([dx, dy]: number[]) => dx! <= 1 && dy! <= 1,
        );
      }
    expect(differing).to.be.at.least(1);
  });

  it('bends straight lines with the distortion (barrel or pincushion), the centre staying put', () => {
    // A vertical edge off the centre: distortion moves its ends (rows at the top and bottom) against its middle.
    const image = halves();
    for (let y = 0; y < H; y++)
      for (let x = 0; x < W; x++)
        image.rgb.fill(x < 140 ? LINEAR_WHITE * 0.8 : 40, (y * W + x) * 3, (y * W + x) * 3 + 3);
    const column = (f: Frame, y: number) => {
      for (let x = W - 1; x > 0; x--) if (grey(f, x, y) > 120) return x;
      return 0;
    };
    const straight = new CameraModel(W, H, 60, 20, plain).capture(image, 0);
    expect(column(straight, 2)).to.equal(column(straight, H / 2));
    const pincushion = new CameraModel(W, H, 60, 20, { ...plain, k1: 0.5 }).capture(image, 0);
    expect(column(pincushion, 2) - column(pincushion, H / 2)).to.be.at.least(2);
    const barrel = new CameraModel(W, H, 60, 20, { ...plain, k1: -0.15 }).capture(image, 0);
    expect(column(barrel, 2) - column(barrel, H / 2)).to.be.at.most(-1);
  });

  it('refuses settings it cannot honour, naming the setting', () => {
    expect(() => new CameraModel(W, H, 60, 20, { ...plain, k1: 0.9, k2: -2 }))
      .to.throw(/k1/)
      .with.property('field', 'camera.realism.k1');
    expect(() => new CameraModel(W, H, 60, 20, { ...plain, exposure: 0.1 }))
      .to.throw(/longer than a frame/)
      .with.property('field', 'camera.realism.exposure');
  });

  it('a bad setting in a robot config is a ConfigError naming it; the twin refuses to start', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const data = JSON.parse(await readFile(config.source, 'utf8')) as { camera: Record<string, unknown> };
    expect(() =>
      parseRobotConfig({ ...data, camera: { ...data.camera, realism: { jpegQuality: 101 } } }, 'x.json'),
    )
      .to.throw(ConfigError)
      .with.property('field', 'camera.realism.jpegQuality');
    const folding = parseRobotConfig(
      { ...data, camera: { ...data.camera, realism: { k1: 0.9, k2: -2 } } },
      config.source,
    );
    const urdf = await loadUrdf(config.urdfPath);
    expect(() => new SimBackend({ config: folding, urdf, speed: 'manual' }))
      .to.throw(ConfigError)
      .with.property('field', 'camera.realism.k1');
    // With the model off the same config starts: nothing of it is used.
    expect(
      new SimBackend({ config: folding, urdf, speed: 'manual', cameraRealism: false }).camera!.realistic,
    ).to.equal(false);
  });

  it('the command line stops with one line naming the setting', async function () {
    this.timeout(30000);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'realism-'));
    try {
      const config = await loadRobotConfig('ergo-jr');
      const data = JSON.parse(await readFile(config.source, 'utf8')) as Record<string, unknown> & {
        camera: Record<string, unknown>;
      };
      const file = path.join(dir, 'robot.json');
      await writeFile(
        file,
        JSON.stringify({
          ...data,
          urdf: config.urdfPath,
          camera: { ...data.camera, realism: { k1: 0.9, k2: -2 } },
        }),
      );
      const run = (args: string[]) =>
        new Promise<{ code: number | null; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
            cwd: ROOT,
            env: { ...process.env, NODE_OPTIONS: '' },
            stdio: ['ignore', 'ignore', 'pipe'],
          });
          let stderr = '';
          child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
          child.on('close', (code) => resolve({ code, stderr }));
        });
      const bad = await run(['--robot', file, '--port', '0']);
      expect(bad.code).to.equal(2);
      expect(bad.stderr.trim().split('\n')).to.have.length(1);
      expect(bad.stderr).to.match(/camera\.realism\.k1: k1 0\.9 and k2 -2 fold the picture/);
      const flag = await run(['--camera-realism', 'maybe']);
      expect(flag.code).to.equal(2);
      expect(flag.stderr.trim().split('\n')).to.have.length(1);
      expect(flag.stderr).to.match(/camera-realism/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The camera model's develop and JPEG passes in WebAssembly (src/scene/frame-kernels.ts) give the bytes of the
 * JavaScript passes, and the committed module is the compile of its source (asm/frame-kernels.ts).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { DEFAULT_REALISM } from '../../src/config/camera-realism.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import type { Frame } from '../../src/core/backend.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { CameraModel } from '../../src/scene/camera-model.ts';
import { LINEAR_MAX, LINEAR_WHITE, type LinearImage } from '../../src/scene/colour.ts';
import { userToJoint } from '../../src/core/frames.ts';
import { ergoJrView } from '../vision/views.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const W = 192;
const H = 144;

/** Edges, gradients, noise, saturated and black patches; near things on the left (focus blur when `near`). */
function picture(seed: number, near: boolean): LinearImage {
  const rand = mulberry32(seed);
  const rgb = new Uint16Array(W * H * 3);
  const invDepth = new Float32Array(W * H);
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) {
      const i = (y * W + x) * 3;
      const square = x > 40 && x < 100 && y > 30 && y < 90;
      rgb[i] = square ? LINEAR_MAX : Math.round(LINEAR_WHITE * (0.5 + 0.4 * Math.sin(x / 5)));
      rgb[i + 1] = x > 150 ? 0 : (x * 17 + y * 5) % LINEAR_WHITE;
      rgb[i + 2] = Math.floor(rand() * LINEAR_WHITE);
      invDepth[y * W + x] = near && x < W / 2 ? 1 / (0.1 + x / 400) : 1 / 3;
    }
  return { width: W, height: H, rgb, invDepth, focal: 554 };
}

function differing(a: Frame, b: Frame): number {
  let n = 0;
  for (let i = 0; i < a.rgb.length; i++) if (a.rgb[i] !== b.rgb[i]) n++;
  return n;
}

describe('the camera model in WebAssembly', () => {
  it('gives the bytes of the JavaScript passes: blurred or sharp, moving, dim or bright', () => {
    const settings = { ...DEFAULT_REALISM, focusDistance: 1 };
    const wasm = new CameraModel(W, H, 60, 20, settings);
    const js = new CameraModel(W, H, 60, 20, settings, { webAssembly: false });
    const cases = [
      { near: true, conditions: {} },
      { near: false, conditions: {} },
      { near: false, conditions: { motion: [300, -120] as const } },
      { near: true, conditions: { lightLevel: 0.05 } },
      { near: false, conditions: { lightLevel: 6 } },
    ];
    for (const [i, { near, conditions }] of cases.entries()) {
      const image = picture(i + 1, near);
      const a = wasm.capture(image, i, conditions);
      const b = js.capture(image, i, conditions);
      expect(differing(a, b), `case ${i}`).to.equal(0);
      if (near) expect(wasm.lastExposure!.focusBlur, `case ${i}`).to.be.above(1);
      // The same frame again (a still view reads the kept light) and a frame of other noise.
      expect(
        differing(wasm.capture(image, i + 7, conditions), js.capture(image, i + 7, conditions)),
      ).to.equal(0);
    }
    // Saturated and black patches came out as 255 and 0 (the clamps were exercised).
    const f = wasm.capture(picture(9, false), 1, { lightLevel: 6 });
    expect(Math.max(...f.rgb)).to.equal(255);
    expect(Math.min(...f.rgb)).to.equal(0);
  });

  it("gives the JavaScript passes' bytes for the Ergo Jr's realistic frame as its base turns", async () => {
    const view = await ergoJrView({ realistic: true });
    const config = await loadRobotConfig('ergo-jr');
    const [width, height] = config.camera!.resolution;
    const camera = (webAssembly: boolean) =>
      new CameraModel(width, height, config.camera!.fov, config.camera!.fps, config.camera!.realism!, {
        webAssembly,
      });
    const wasm = camera(true);
    const js = camera(false);
    // Loaded as SimCamera loads it (src/sim/camera.ts): one three.js for the scene and the rasteriser (a static
    // import here gets a second three.js, whose meshes the rasteriser does not recognise: a blank picture).
    const { Rasterizer } = await import('../../src/scene/rasterizer.ts');
    const raster = new Rasterizer(width, height);
    const scene = view.camera.scene;
    const angles = new Map(config.motors.map((m) => [m.name, userToJoint(m, view.pose[m.name] ?? 0)]));
    for (let i = 0; i < 3; i++) {
      angles.set('m1', angles.get('m1')! + 0.01);
      scene.setJointAngles(angles);
      const image = raster.renderLinear(scene.scene, scene.camera!, wasm.renderFocal);
      expect(raster.textureBytesInWebAssembly, 'the room drawn').to.be.above(0);
      expect(differing(wasm.capture(image, i), js.capture(image, i)), `frame ${i}`).to.equal(0);
    }
  });

  it('runs the modules compiled from asm/ (npm run build:wasm)', function () {
    this.timeout(60_000);
    const check = spawnSync(process.execPath, ['scripts/build-wasm.js', '--check'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    for (const module of ['frame-kernels', 'triangle-fill', 'png-filter'])
      expect(check.stdout + check.stderr).to.contain(`${module}.wasm.ts matches its source`);
    expect(check.status).to.equal(0);
  });
});

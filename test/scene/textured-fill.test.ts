/**
 * The rasteriser's textured fill in WebAssembly (src/scene/textured-fill.ts) draws the pixels and depths of the
 * JavaScript fill, and leaves to it a texture that no longer fits its memory. Its module is checked against its
 * source with the others (test/scene/frame-kernels.test.ts).
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { userToJoint } from '../../src/core/frames.ts';
import type { Rasterizer as RasterizerClass } from '../../src/scene/rasterizer.ts';
import { TexturedFill } from '../../src/scene/textured-fill.ts';
import { ergoJrView } from '../vision/views.ts';

function differing(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).to.equal(b.length);
  let n = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) n++;
  return n;
}

describe('the textured fill in WebAssembly', () => {
  it("draws the JavaScript fill's pixels and depths: the room, the robot and a card, as the base turns", async () => {
    const view = await ergoJrView({ realistic: true });
    // Loaded as SimCamera loads it (src/sim/camera.ts): one three.js for the scene and the rasteriser.
    const { Rasterizer } = await import('../../src/scene/rasterizer.ts');
    const config = await loadRobotConfig('ergo-jr');
    const [width, height] = config.camera!.resolution;
    const wasm: RasterizerClass = new Rasterizer(width, height);
    const js: RasterizerClass = new Rasterizer(width, height, { webAssembly: false });
    const scene = view.camera.scene;
    const angles = new Map(config.motors.map((m) => [m.name, userToJoint(m, view.pose[m.name] ?? 0)]));
    for (let i = 0; i < 4; i++) {
      angles.set('m1', angles.get('m1')! + 0.2);
      scene.setJointAngles(angles);
      view.hold('tetris', { distance: 0.2 + 0.05 * i, yaw: 0.1 * i });
      const a = wasm.renderLinear(scene.scene, scene.camera!);
      const b = js.renderLinear(scene.scene, scene.camera!);
      expect(differing(a.rgb, b.rgb), `linear picture ${i}`).to.equal(0);
      expect(differing(a.invDepth, b.invDepth), `depth ${i}`).to.equal(0);
      // The clean picture samples the textures' sRGB bytes: a second set of texels.
      const effects = { exposure: 1.3 };
      expect(
        differing(
          wasm.render(scene.scene, scene.camera!, effects).rgb,
          js.render(scene.scene, scene.camera!, effects).rgb,
        ),
      ).to.equal(0);
    }
    // The room's textures, repeating and clamped, went through the WebAssembly fill, and not in the other.
    expect(wasm.textureBytesInWebAssembly, 'texels in WebAssembly').to.be.above(256 << 10);
    expect(js.textureBytesInWebAssembly).to.equal(0);
  });

  it('copies each texture in once and leaves one that does not fit to JavaScript', () => {
    const fill = new TexturedFill(64, 48);
    const small = new Float32Array(16 * 16 * 4).fill(0.5);
    const at = fill.texture(small);
    expect(at).to.be.a('number');
    expect(fill.texture(small)).to.equal(at);
    expect(fill.textureBytes).to.equal(small.byteLength);
    expect(new Float32Array(fill.colour.buffer, at, 4)[3]).to.equal(0.5);
    expect(fill.texture(new Float32Array((9 << 20) / 4))).to.equal(undefined);
    expect(fill.textureBytes, 'nothing copied for the one that did not fit').to.equal(small.byteLength);
    expect(fill.texture(new Float32Array(4).fill(1))).to.be.a('number');
  });
});

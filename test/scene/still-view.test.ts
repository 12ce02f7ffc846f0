/**
 * A still view is not drawn again (src/scene/rasterizer.ts renderLinear, src/scene/camera-model.ts capture): the
 * frames it gives are the frames a full redraw gives, with new noise each; anything that changes the picture (a
 * card moved, a colour, a light, the clean picture drawn in between) draws it again.
 */
import { expect } from 'chai';
import type * as ThreeModule from 'three';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { CameraModel } from '../../src/scene/camera-model.ts';
import type { Rasterizer } from '../../src/scene/rasterizer.ts';
import { ergoJrView, type View } from '../vision/views.ts';

const same = (a: Uint8Array | Uint16Array, b: Uint8Array | Uint16Array) =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

describe('a still view of the realistic camera', function () {
  this.timeout(30000);
  let view: View;
  let raster: Rasterizer;
  let makeModel: () => CameraModel;

  let THREE: typeof ThreeModule;

  before(async () => {
    view = await ergoJrView({ realistic: true });
    // Loaded as SimCamera loads them (src/sim/camera.ts): one three.js for the scene and the rasteriser.
    THREE = await import('three');
    const { Rasterizer } = await import('../../src/scene/rasterizer.ts');
    const config = await loadRobotConfig('ergo-jr');
    const camera = config.camera!;
    raster = new Rasterizer(...camera.resolution);
    makeModel = () => new CameraModel(...camera.resolution, camera.fov, camera.fps, camera.realism!);
    view.hold('tetris', { distance: 0.25, yaw: 0.3 });
  });

  const draw = () => {
    // As SimCamera.render does through setJointAngles: the world matrices follow the poses set since.
    view.camera.scene.scene.updateMatrixWorld();
    return raster.renderLinear(view.camera.scene.scene, view.camera.scene.camera!, 500);
  };

  it('is drawn once; a card moved, a colour changed, a light dimmed or the clean picture draw it again', () => {
    const first = draw();
    const pixels = new Uint16Array(first.rgb);
    const again = draw();
    expect(again.version).to.equal(first.version);
    expect(same(again.rgb, pixels)).to.equal(true);

    view.hold('tetris', { distance: 0.3, yaw: 0.3 });
    const moved = draw();
    expect(moved.version).to.not.equal(first.version);
    expect(same(moved.rgb, pixels)).to.equal(false);
    view.hold('tetris', { distance: 0.25, yaw: 0.3 });
    const back = draw();
    expect(back.version).to.not.equal(moved.version);
    expect(same(back.rgb, pixels)).to.equal(true);

    const walls: ThreeModule.Mesh[] = [];
    view.camera.scene.scene.traverse((o) => {
      if (o instanceof THREE.Mesh && o.parent?.name === 'room-wall-0' && o.geometry.type === 'PlaneGeometry')
        walls.push(o);
    });
    const wall = walls.find((w) => (w.material as ThreeModule.MeshLambertMaterial).map == null)!;
    expect(wall, 'a plain wall').to.not.equal(undefined);
    const material = wall.material as ThreeModule.MeshLambertMaterial;
    const colour = material.color.clone();
    material.color.setRGB(0.2, 0.6, 0.2);
    expect(same(draw().rgb, pixels)).to.equal(false);
    material.color.copy(colour);
    expect(same(draw().rgb, pixels)).to.equal(true);

    let lamp: ThreeModule.PointLight | undefined;
    view.camera.scene.scene.traverse((o) => {
      if (o instanceof THREE.PointLight) lamp ??= o;
    });
    lamp!.intensity /= 2;
    expect(same(draw().rgb, pixels)).to.equal(false);
    lamp!.intensity *= 2;
    const lit = draw();
    expect(same(lit.rgb, pixels)).to.equal(true);

    raster.render(view.camera.scene.scene, view.camera.scene.camera!);
    const redrawn = draw();
    expect(redrawn.version).to.not.equal(lit.version);
    expect(same(redrawn.rgb, pixels)).to.equal(true);
  });

  it('gives the frames a full redraw gives, new noise in each, and follows the motion', () => {
    const kept = makeModel();
    const full = makeModel();
    const image = draw();
    // Without a version the model cannot know the picture is the same: it goes through every pass.
    const unversioned = { ...image, rgb: new Uint16Array(image.rgb), version: undefined };
    const frames = [0, 1, 2].map((k) => kept.capture(draw(), k));
    expect(same(frames[1]!.rgb, frames[2]!.rgb)).to.equal(false);
    expect(same(frames[2]!.rgb, full.capture(unversioned, 2).rgb)).to.equal(true);
    const moving = { motion: [3000, 0] as const };
    const blurred = kept.capture(draw(), 3, moving);
    expect(same(blurred.rgb, full.capture(unversioned, 3, moving).rgb)).to.equal(true);
    expect(kept.lastExposure!.motionBlur).to.be.above(1);
    expect(same(kept.capture(draw(), 4).rgb, full.capture(unversioned, 4).rgb)).to.equal(true);
  });

  it('draws a moving card where it was and is only, the pixels and frames of a full redraw', async () => {
    const { Rasterizer } = await import('../../src/scene/rasterizer.ts');
    // Two models with the same history (their exposure tables follow it): one given the parts, one every pass.
    const kept = makeModel();
    const whole = makeModel();
    const fresh = () => new Rasterizer(raster.width, raster.height);
    const steps = [
      { distance: 0.25, yaw: 0.3 },
      { distance: 0.26, yaw: 0.35, x: 0.01 },
      { distance: 0.2, yaw: -0.2, y: 0.02, roll: 0.4 },
      // Partly out of the picture, then back.
      { distance: 0.25, x: 0.09 },
      { distance: 0.3, yaw: 0.1 },
    ];
    let parts = 0;
    for (const [k, at] of steps.entries()) {
      view.hold('tetris', at);
      const image = draw();
      if (image.changed) {
        parts++;
        const { x0, y0, x1, y1 } = image.changed.rect;
        expect((x1 - x0 + 1) * (y1 - y0 + 1)).to.be.below((raster.width * raster.height) / 4);
      }
      view.camera.scene.scene.updateMatrixWorld();
      const full = fresh().renderLinear(view.camera.scene.scene, view.camera.scene.camera!, 500);
      expect(same(image.rgb, full.rgb), `picture ${k}`).to.equal(true);
      expect(
        same(image.invDepth as unknown as Uint16Array, full.invDepth as unknown as Uint16Array),
      ).to.equal(true);
      const unversioned = { ...full, version: undefined };
      expect(same(kept.capture(image, k).rgb, whole.capture(unversioned, k).rgb), `frame ${k}`).to.equal(
        true,
      );
    }
    expect(parts, 'moves drawn in part').to.be.at.least(steps.length - 1);

    // The card's face grown in place (its positions' version bumped): its new extent is drawn too.
    const face = view.camera.scene.scene.getObjectByName('card:tetris')!.children[0] as ThreeModule.Mesh;
    const position = face.geometry.getAttribute('position') as ThreeModule.BufferAttribute;
    const original = new Float32Array(position.array as Float32Array);
    for (let i = 0; i < position.count; i++)
      position.setXY(i, position.getX(i) * 1.5, position.getY(i) * 1.5);
    position.needsUpdate = true;
    const grown = draw();
    expect(grown.changed, 'drawn in part').to.not.equal(undefined);
    const full = fresh().renderLinear(view.camera.scene.scene, view.camera.scene.camera!, 500);
    expect(same(grown.rgb, full.rgb), 'grown card').to.equal(true);
    (position.array as Float32Array).set(original);
    position.needsUpdate = true;
    face.geometry.computeBoundingSphere();
    expect(
      same(draw().rgb, fresh().renderLinear(view.camera.scene.scene, view.camera.scene.camera!, 500).rgb),
    ).to.equal(true);
    view.hold('tetris', { distance: 0.25, yaw: 0.3 });
  });
});

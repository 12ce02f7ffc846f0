/**
 * The detector on realistic frames (the default room, the Pi camera module's model): each card is found within
 * the range docs/sensors.md states (20-80 cm, tilted up to 60 degrees, light down to 1 % of the room's), and
 * views without cards give no detection. `npm run bench -- vision` measures the same over many more frames.
 */
import { expect } from 'chai';
import { mulberry32 } from '../../src/core/prng.ts';
import { detectMarkers } from '../../src/vision/detect.ts';
import { CARDS, ergoJrView, type View } from './views.ts';

describe('detection on realistic frames', function () {
  this.timeout(120000);
  let view: View;
  before(async () => {
    view = await ergoJrView({ realistic: true });
  });

  it('finds each card across its range of distance, tilt and light', () => {
    const rand = mulberry32(4);
    const cases = [
      { distance: 0.2, tilt: 0, light: 1 },
      { distance: 0.5, tilt: 0.5, light: 0.3 },
      { distance: 0.8, tilt: 0, light: 1 },
      { distance: 0.3, tilt: (60 * Math.PI) / 180, light: 1 },
      { distance: 0.3, tilt: 0.3, light: 0.01 },
    ];
    for (const { name, id } of CARDS)
      for (const c of cases) {
        view.camera.lightLevel = c.light;
        const direction = rand() * 2 * Math.PI;
        view.hold(name, {
          distance: c.distance,
          yaw: c.tilt * Math.cos(direction),
          pitch: c.tilt * Math.sin(direction),
          roll: rand() * 0.6,
        });
        expect(view.camera.sees(view.cards.get(name))).to.equal(true);
        const found = detectMarkers(view.camera.render()).map((m) => m.id);
        expect(found, `${name} ${JSON.stringify(c)}`).to.deep.equal([id]);
        view.cards.putAway(name);
      }
    view.camera.lightLevel = 1;
  });

  it('a card in near darkness (0.3 % of the light, the gain at its limit) is lost, as on the real camera', () => {
    view.camera.lightLevel = 0.003;
    view.hold('tetris', { distance: 0.3 });
    expect(detectMarkers(view.camera.render())).to.deep.equal([]);
    expect(view.camera.lastExposure!.gain).to.equal(8);
    view.cards.putAway('tetris');
    view.camera.lightLevel = 1;
  });

  it('sees no marker in views of the room without cards', () => {
    const rand = mulberry32(8);
    const start = { ...view.pose };
    let detections = 0;
    for (let t = 0; t < 30; t++) {
      view.pose.m1 = (rand() - 0.5) * 300;
      view.pose.m5 = -60 + rand() * 150;
      view.pose.m6 = -80 + rand() * 160;
      view.camera.lightLevel = 0.01 + rand() * 1.5;
      detections += detectMarkers(view.camera.render()).length;
    }
    Object.assign(view.pose, start);
    view.camera.lightLevel = 1;
    expect(detections).to.equal(0);
  });
});

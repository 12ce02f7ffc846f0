import { expect } from 'chai';
import { PNG } from 'pngjs';
import { detectMarkers } from '../../src/vision/detect.ts';
import { decodePng, encodePng, encodePngAsync } from '../../src/vision/png.ts';
import { composePoses, invertPose, poseFromOrigin, transformPoint } from '../../src/urdf/transform.ts';
import { CARDS, addClutter, ergoJrView, type View } from '../vision/views.ts';

/** Where a point of a card (card frame, metres) lands in the picture: the pinhole projection. */
function project(view: View, name: string, local: [number, number, number]): [number, number] {
  const card = view.cards.get(name);
  const inCamera = composePoses(invertPose(view.camera.pose()), poseFromOrigin(card.xyz, card.rpy));
  const [x, y, z] = transformPoint(inCamera, local);
  const [w, h] = view.camera.resolution;
  const f = w / 2 / Math.tan((60 * Math.PI) / 360);
  return [w / 2 + (f * x) / z, h / 2 + (f * y) / z];
}

function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

describe('the twin camera: rendered views and detection on their pixels', () => {
  let view: View;
  before(async () => {
    view = await ergoJrView();
  });

  it('renders a frame of the configured size; the cards at rest are out of view', () => {
    const frame = view.camera.render();
    expect([frame.width, frame.height, frame.rgb.length]).to.deep.equal([640, 480, 640 * 480 * 3]);
    expect(detectMarkers(frame)).to.deep.equal([]);
    for (const card of view.cards.list()) expect(view.camera.sees(card)).to.equal(false);
  });

  it('finds each card at several distances, angles and lightings, where the projection says it is', () => {
    const cases = [
      { distance: 0.12 },
      { distance: 0.3, x: 0.05, y: -0.03 },
      { distance: 0.5, x: -0.1, y: 0.05, roll: 2.5 },
      { distance: 0.2, yaw: 0.7 },
      { distance: 0.25, pitch: -0.6, roll: 0.8 },
    ];
    for (const exposure of [0.6, 1, 1.4]) {
      view.camera.effects = { exposure };
      for (const [i, at] of cases.entries()) {
        const { name, id } = CARDS[i % 3]!;
        view.hold(name, at);
        const found = detectMarkers(view.camera.render());
        expect(
          found.map((m) => m.id),
          `${name} ${JSON.stringify(at)} exposure ${exposure}`,
        ).to.deep.equal([id]);
        const [cx, cy] = project(view, name, [0, 0, 0]);
        expect(found[0]!.centre[0]).to.be.closeTo(cx, 2);
        expect(found[0]!.centre[1]).to.be.closeTo(cy, 2);
        // Corner 0 is the marker's own top-left corner: (-4.5, +4.5) cells from the centre of an 11-cell card.
        const side = view.cards.get(name).size;
        const [tx, ty] = project(view, name, [(-4.5 / 11) * side, (4.5 / 11) * side, 0]);
        expect(found[0]!.corners[0][0]).to.be.closeTo(tx, 2.5);
        expect(found[0]!.corners[0][1]).to.be.closeTo(ty, 2.5);
        view.cards.putAway(name);
      }
    }
    view.camera.effects = {};
  });

  it('the PNG is valid and shows the card where the projection says: black border, white margin', async () => {
    view.hold('tetris', { distance: 0.2, x: 0.03 });
    const frame = view.camera.render();
    const png = encodePng(frame);
    // The asynchronous encoder (the server's) cuts its data into other chunks: the same picture all the same.
    const pngAsync = await encodePngAsync(frame);
    expect(Buffer.from(decodePng(pngAsync).rgb).equals(Buffer.from(frame.rgb))).to.equal(true);
    expect(png.subarray(0, 8)).to.deep.equal(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
    const parsed = PNG.sync.read(png);
    expect([parsed.width, parsed.height]).to.deep.equal([640, 480]);
    const decoded = decodePng(png);
    expect(Buffer.from(decoded.rgb).equals(Buffer.from(frame.rgb))).to.equal(true);
    const size = view.cards.get('tetris').size;
    const grey = (p: [number, number]) => {
      const i = (Math.floor(p[1]) * 640 + Math.floor(p[0])) * 3;
      return (decoded.rgb[i]! + decoded.rgb[i + 1]! + decoded.rgb[i + 2]!) / 3;
    };
    // Middle of the top-left border cell: black; middle of the margin beside it: white.
    expect(grey(project(view, 'tetris', [(-4 / 11) * size, (4 / 11) * size, 0]))).to.be.below(60);
    expect(grey(project(view, 'tetris', [(-5 / 11) * size, 0, 0]))).to.be.above(180);
    // tetris row 1 reads #..##..## : cell (1, 1) white, (1, 3) black.
    expect(grey(project(view, 'tetris', [(-3 / 11) * size, (3 / 11) * size, 0]))).to.be.above(180);
    expect(grey(project(view, 'tetris', [(-1 / 11) * size, (3 / 11) * size, 0]))).to.be.below(60);
    view.cards.putAway('tetris');
  });

  it('a card moved out of view, or turned away, is no longer found', () => {
    view.hold('caribou', { distance: 0.2 });
    expect(detectMarkers(view.camera.render()).map((m) => m.name)).to.deep.equal(['caribou']);
    view.hold('caribou', { distance: 0.2, x: 0.4 });
    expect(view.camera.sees(view.cards.get('caribou'))).to.equal(false);
    expect(detectMarkers(view.camera.render())).to.deep.equal([]);
    view.hold('caribou', { distance: 0.2, yaw: Math.PI });
    expect(detectMarkers(view.camera.render())).to.deep.equal([]);
    view.cards.putAway('caribou');
  });

  it('moving the head changes the picture and where the card appears', () => {
    view.hold('lapin', { distance: 0.3 });
    const [before] = detectMarkers(view.camera.render());
    view.pose.m1 = 10;
    const [after] = detectMarkers(view.camera.render());
    view.pose.m1 = 0;
    expect(before!.id).to.equal(after!.id);
    expect(
      Math.hypot(after!.centre[0] - before!.centre[0], after!.centre[1] - before!.centre[1]),
    ).to.be.above(40);
    view.cards.putAway('lapin');
  });

  it('seeded sweep with noise and blur: >= 99 % of cards found with the right id (span >= 40 px, tilt <= 50 deg)', () => {
    const rand = seeded(42);
    const trials = 150;
    let found = 0;
    let wrong = 0;
    for (let t = 0; t < trials; t++) {
      const { name, id } = CARDS[t % 3]!;
      view.camera.effects = {
        noise: 3 + rand() * 5,
        blur: rand() < 0.5 ? 1 : 0,
        exposure: 0.7 + rand() * 0.6,
        seed: t + 1,
      };
      // Draw poses until the whole card is in the picture and each of its sides spans at least 40 px.
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
        const half = view.cards.get(name).size / 2;
        const corners = [
          [-half, -half],
          [half, -half],
          [half, half],
          [-half, half],
        ].map(([x, y]) => project(view, name, [x!, y!, 0]));
        const sides = corners.map((p, k) =>
          Math.hypot(p[0] - corners[(k + 1) % 4]![0], p[1] - corners[(k + 1) % 4]![1]),
        );
        if (view.camera.sees(view.cards.get(name)) && Math.min(...sides) >= 40) break;
      }
      const ids = detectMarkers(view.camera.render()).map((m) => m.id);
      if (ids.includes(id)) found++;
      wrong += ids.filter((i) => i !== id).length;
      view.cards.putAway(name);
    }
    view.camera.effects = {};
    expect(wrong).to.equal(0);
    expect(found / trials).to.be.at.least(0.99);
  });

  it('no false detections over views of the robot, the table and clutter, with noise', () => {
    const rand = seeded(7);
    let detections = 0;
    for (let t = 0; t < 40; t++) {
      view.pose.m1 = (rand() - 0.5) * 160;
      view.pose.m5 = -20 + rand() * 90;
      view.pose.m6 = -40 + rand() * 80;
      const bare = t === 0 ? view.camera.render() : undefined;
      const clutter = addClutter(view, t + 1);
      // The clutter is in the picture (not meshes of another three.js, which the rasteriser would skip).
      if (bare) expect(view.camera.render().rgb).to.not.deep.equal(bare.rgb);
      view.camera.effects = { noise: rand() * 6, blur: rand() < 0.3 ? 1 : 0, seed: t + 1 };
      detections += detectMarkers(view.camera.render()).length;
      clutter.removeFromParent();
    }
    Object.assign(view.pose, { m1: 0, m5: 55, m6: -5 });
    view.camera.effects = {};
    expect(detections).to.equal(0);
  });
});

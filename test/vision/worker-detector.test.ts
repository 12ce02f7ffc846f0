/** The marker detector in a worker thread (src/vision/worker-detector.ts), as a real-time server runs it. */
import { expect } from 'chai';
import type { Frame } from '../../src/core/backend.ts';
import { MarkerDetector } from '../../src/vision/detect.ts';
import { MARKER_CODES, markerImage } from '../../src/vision/marker.ts';
import { WorkerDetector } from '../../src/vision/worker-detector.ts';

/** A grey 320x240 picture with the card of `id` printed at (x, y). */
function frameWith(id: number, x = 60, y = 40): Frame {
  const width = 320;
  const height = 240;
  const rgb = new Uint8Array(width * height * 3).fill(128);
  const card = markerImage(id, 10);
  for (let r = 0; r < card.height; r++)
    rgb.set(card.rgb.subarray(r * card.width * 3, (r + 1) * card.width * 3), ((y + r) * width + x) * 3);
  return { width, height, rgb };
}

describe('marker detector in a worker thread', function () {
  this.timeout(30000);

  it('finds the same markers as the inline detector, and leaves the caller its frame', async () => {
    const detector = new WorkerDetector();
    try {
      for (const name of ['tetris', 'caribou', 'lapin']) {
        const id = MARKER_CODES[name]!;
        const frame = frameWith(id);
        const before = Buffer.from(frame.rgb).toString('base64');
        const found = await detector.detect(frame);
        expect(found.map((m) => m.name)).to.deep.equal([name]);
        expect(found).to.deep.equal(new MarkerDetector().detect(frame));
        expect(Buffer.from(frame.rgb).toString('base64'), 'the frame is copied, not moved').to.equal(before);
      }
      const [a, b] = await Promise.all([
        detector.detect(frameWith(MARKER_CODES.tetris!)),
        detector.detect(frameWith(MARKER_CODES.lapin!, 150, 90)),
      ]);
      expect([a[0]!.name, b[0]!.name], 'answers go to their own request').to.deep.equal(['tetris', 'lapin']);
    } finally {
      await detector.close();
    }
  });

  it('says what is wrong with a bad frame, and keeps working', async () => {
    const detector = new WorkerDetector();
    try {
      const bad = { width: 100, height: 100, rgb: new Uint8Array(10) };
      let error: unknown;
      await detector.detect(bad).catch((e: unknown) => (error = e));
      expect(String(error)).to.match(/marker detection failed: .*shorter/);
      expect((await detector.detect(frameWith(MARKER_CODES.caribou!))).map((m) => m.name)).to.deep.equal([
        'caribou',
      ]);
    } finally {
      await detector.close();
    }
  });

  it('refuses frames once closed', async () => {
    const detector = new WorkerDetector();
    await detector.detect(frameWith(MARKER_CODES.tetris!));
    await detector.close();
    let error: unknown;
    await detector.detect(frameWith(MARKER_CODES.tetris!)).catch((e: unknown) => (error = e));
    expect(String(error)).to.contain('closed');
  });
});

describe('a server in real time detects in its worker thread', function () {
  this.timeout(60000);

  it('finds a card shown to the sim Ergo Jr at --speed max, and loses it once hidden', async () => {
    const { createRobotServer } = await import('../../src/server.ts');
    const server = await createRobotServer({ backend: 'sim', robot: 'ergo-jr', speed: 'max' });
    const get = async (url: string) => (await server.app.inject({ method: 'GET', url })).json() as unknown;
    /** Polls until `ok` (the sim runs on its own: a detection is a sim second away, a few ms of wall time). */
    const until = async (url: string, ok: (v: unknown) => boolean) => {
      const end = Date.now() + 20000;
      let v = await get(url);
      while (!ok(v) && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 20));
        v = await get(url);
      }
      return v;
    };
    const post = (url: string, payload: unknown = {}) =>
      server.app.inject({ method: 'POST', url, payload: payload as object });
    try {
      // Held up in its rest posture: a limp Ergo Jr would slump, and its camera look away from the card.
      await post('/sim/motors/compliant.json', { compliant: false });
      await post('/sim/pose.json', { positions: { m1: 0, m2: -90, m3: 35, m4: 0, m5: 55, m6: -5 } });
      await post('/sim/cards/caribou/show.json');
      expect(
        await until('/sensors/code/list.json', (v) => (v as { codes: string[] }).codes.length > 0),
      ).to.deep.equal({
        codes: ['caribou'],
      });
      await post('/sim/cards/caribou/hide.json');
      expect(
        await until('/sensors/code/list.json', (v) => (v as { codes: string[] }).codes.length === 0),
      ).to.deep.equal({
        codes: [],
      });
    } finally {
      await server.close();
    }
  });
});

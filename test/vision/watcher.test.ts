import { expect } from 'chai';
import type { Camera, Frame } from '../../src/core/backend.ts';
import { SteppedClock, advanceManualClock } from '../../src/core/clock.ts';
import { MARKER_CODES, markerImage } from '../../src/vision/marker.ts';
import { MarkerWatcher } from '../../src/vision/watcher.ts';

/** A camera that shows a card or an empty grey picture, and counts its grabs. */
class FakeCamera implements Camera {
  readonly resolution = [200, 150] as const;
  readonly fps = 20;
  grabs = 0;
  card: number | undefined;
  failing = false;
  async grab(): Promise<Frame> {
    this.grabs++;
    if (this.failing) throw new Error('camera unplugged');
    const rgb = new Uint8Array(200 * 150 * 3).fill(120);
    if (this.card !== undefined) {
      const img = markerImage(this.card, 5);
      for (let r = 0; r < img.height; r++)
        rgb.set(img.rgb.subarray(r * img.width * 3, (r + 1) * img.width * 3), ((20 + r) * 200 + 30) * 3);
    }
    return { width: 200, height: 150, rgb };
  }
}

describe('marker watcher: the detector as a background sensor', () => {
  it('detects at its rate of the clock, keeps the latest list, and stops for good on close', async () => {
    const clock = new SteppedClock();
    const camera = new FakeCamera();
    const errors: unknown[] = [];
    const watcher = new MarkerWatcher({
      camera,
      clock,
      rate: 2,
      idleAfter: Infinity,
      onError: (e) => errors.push(e),
    });
    watcher.start();
    watcher.start(); // idempotent
    await advanceManualClock(clock, 0.25);
    expect(camera.grabs).to.equal(0); // the first detection waits one period
    camera.card = MARKER_CODES.caribou;
    await advanceManualClock(clock, 0.3);
    expect(camera.grabs).to.equal(1);
    expect(watcher.latest().markers.map((m) => m.name)).to.deep.equal(['caribou']);
    camera.card = undefined;
    await advanceManualClock(clock, 0.5);
    expect(camera.grabs).to.equal(2);
    expect(watcher.latest().markers).to.deep.equal([]);

    camera.failing = true;
    await advanceManualClock(clock, 0.5);
    expect(errors).to.have.length(1);
    expect(watcher.latest().markers).to.deep.equal([]);
    camera.failing = false;
    camera.card = MARKER_CODES.tetris;
    await advanceManualClock(clock, 0.5);
    expect(watcher.latest().markers.map((m) => m.name)).to.deep.equal(['tetris']);

    await watcher.close();
    await watcher.close(); // idempotent
    const grabs = camera.grabs;
    await advanceManualClock(clock, 5);
    expect(camera.grabs).to.equal(grabs);
    expect(clock.nextDue()).to.equal(Infinity);
  });

  it('detects on demand, and refuses a rate that is not positive', async () => {
    const camera = new FakeCamera();
    camera.card = MARKER_CODES.lapin;
    const watcher = new MarkerWatcher({ camera, clock: new SteppedClock() });
    const reading = await watcher.detectNow();
    expect(reading.markers.map((m) => m.id)).to.deep.equal([MARKER_CODES.lapin]);
    expect([reading.width, reading.height]).to.deep.equal([200, 150]);
    expect(() => new MarkerWatcher({ camera, clock: new SteppedClock(), rate: 0 })).to.throw(RangeError);
  });
});

describe('marker watcher: detection while someone asks', () => {
  it('detects nothing until asked, answers the first read with a fresh detection, then keeps its rate', async () => {
    const clock = new SteppedClock();
    const camera = new FakeCamera();
    const watcher = new MarkerWatcher({ camera, clock, rate: 1, idleAfter: 5 });
    watcher.start();
    camera.card = MARKER_CODES.tetris;
    await advanceManualClock(clock, 30);
    expect(camera.grabs).to.equal(0); // nobody asked: no frame rendered, no detection
    expect(watcher.latest().markers).to.deep.equal([]);
    const first = await watcher.read();
    expect(first.markers.map((m) => m.name)).to.deep.equal(['tetris']);
    expect(camera.grabs).to.equal(1);
    // A second read within the period shares that detection.
    await watcher.read();
    expect(camera.grabs).to.equal(1);
    // Asked, it detects in the background at its rate (the card hidden is seen gone within a period).
    camera.card = undefined;
    await advanceManualClock(clock, 1.05);
    expect(camera.grabs).to.equal(2);
    expect(watcher.latest().markers).to.deep.equal([]);
    await watcher.close();
  });

  it('pauses once nobody asked for its idle time, emptying its list, and wakes on a look at the camera', async () => {
    const clock = new SteppedClock();
    const camera = new FakeCamera();
    camera.card = MARKER_CODES.caribou;
    const watcher = new MarkerWatcher({ camera, clock, rate: 2, idleAfter: 3 });
    watcher.start();
    await watcher.read();
    await advanceManualClock(clock, 3);
    const grabsWhileAsked = camera.grabs;
    expect(grabsWhileAsked).to.be.within(6, 8); // 2 Hz for the 3 s after the read
    await advanceManualClock(clock, 20);
    expect(camera.grabs).to.equal(grabsWhileAsked);
    expect(watcher.latest().markers).to.deep.equal([]); // no stale markers while idle
    watcher.demand(); // the web view asked for a frame
    await advanceManualClock(clock, 0.55);
    expect(camera.grabs).to.equal(grabsWhileAsked + 1);
    expect(watcher.latest().markers.map((m) => m.name)).to.deep.equal(['caribou']);
    await watcher.close();
    expect(clock.nextDue()).to.equal(Infinity);
  });

  it('reads a failed fresh detection as no markers, and reports the error', async () => {
    const errors: unknown[] = [];
    const camera = new FakeCamera();
    camera.failing = true;
    const watcher = new MarkerWatcher({ camera, clock: new SteppedClock(), onError: (e) => errors.push(e) });
    expect((await watcher.read()).markers).to.deep.equal([]);
    expect(errors).to.have.length(1);
    await watcher.close();
  });
});

describe('marker watcher: the wall-time cap of a fast sim', () => {
  it('skips detections while the sim runs ahead of the wall, and detects again once the gap has passed', async () => {
    const clock = new SteppedClock();
    const camera = new FakeCamera();
    // 5 per wall second: one detection, then none for 200 ms of wall time however far the sim runs.
    const watcher = new MarkerWatcher({ camera, clock, rate: 1, maxWallRate: 5, idleAfter: Infinity });
    watcher.start();
    try {
      const started = performance.now();
      for (let i = 0; i < 20; i++) await advanceManualClock(clock, 1);
      const elapsed = performance.now() - started;
      // 20 sim seconds at 1 Hz would be 20 detections; within the first 200 ms of wall time, only the first runs.
      if (elapsed < 190) expect(camera.grabs).to.equal(1);
      // The watcher waits on the wall: once the gap has passed, the next sim period detects again.
      await new Promise((r) => setTimeout(r, 250));
      await advanceManualClock(clock, 1);
      expect(camera.grabs).to.be.at.least(2);
    } finally {
      await watcher.close();
    }
  });

  it('leaves no listener behind on its signal after each wait on the wall', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    const clock = new SteppedClock();
    const camera = new FakeCamera();
    // 200 per wall second: each sim period that comes at once waits 5 ms on the wall before it detects.
    const watcher = new MarkerWatcher({ camera, clock, rate: 1, maxWallRate: 200, idleAfter: Infinity });
    watcher.start();
    try {
      for (let i = 0; i < 15; i++) {
        // Two sim periods at once: the second one waits on the wall, then detects.
        await advanceManualClock(clock, 2);
        await new Promise((r) => setTimeout(r, 8));
      }
      expect(camera.grabs).to.be.at.least(10);
      // Node warns from the 11th listener on one signal (MaxListenersExceededWarning).
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes('MaxListeners'))).to.deep.equal([]);
    } finally {
      process.off('warning', onWarning);
      await watcher.close();
    }
  });
});

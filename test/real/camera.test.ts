/**
 * The real camera's capture path: ffmpeg (Debian's package) reading a test source or a looped picture of a marker
 * card, the same marker detector as the sim, and a real-backend server over the bus emulator serving frame.png and
 * the codes from it. Wall time is inherent here (ffmpeg runs in real time): waits are bounded polls.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { CaptureCamera, captureCommand, ffmpegInput } from '../../src/real/camera.ts';
import { detectMarkers } from '../../src/vision/detect.ts';
import { MARKER_CODES, markerImage } from '../../src/vision/marker.ts';
import { decodePng, encodePng } from '../../src/vision/png.ts';
import type { Frame } from '../../src/core/backend.ts';
import { RobotError } from '../../src/core/errors.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';

/** A white 640x480 picture with the card of `id` in the middle (22 px per cell: a 242 px card). */
function cardPicture(id: number): Frame {
  const [w, h] = [640, 480];
  const card = markerImage(id, 22);
  const rgb = new Uint8Array(w * h * 3).fill(255);
  const x0 = Math.floor((w - card.width) / 2);
  const y0 = Math.floor((h - card.height) / 2);
  for (let y = 0; y < card.height; y++)
    rgb.set(card.rgb.subarray(y * card.width * 3, (y + 1) * card.width * 3), ((y0 + y) * w + x0) * 3);
  return { width: w, height: h, rgb };
}

describe('real camera: ffmpeg input options', () => {
  it('reads a V4L2 device at the configured size and rate, loops pictures and videos, passes options through', () => {
    expect(ffmpegInput('/dev/video0', [640, 480], 20)).to.deep.equal([
      '-f',
      'v4l2',
      '-video_size',
      '640x480',
      '-framerate',
      '20',
      '-i',
      '/dev/video0',
    ]);
    expect(ffmpegInput('card.png', [640, 480], 20)).to.deep.equal([
      '-loop',
      '1',
      '-framerate',
      '20',
      '-i',
      'card.png',
    ]);
    expect(ffmpegInput('lavfi:testsrc=rate=5', [640, 480], 20)).to.deep.equal([
      '-f',
      'lavfi',
      '-i',
      'testsrc=rate=5',
    ]);
    expect(ffmpegInput('clip.mp4', [640, 480], 20)).to.deep.equal([
      '-re',
      '-stream_loop',
      '-1',
      '-i',
      'clip.mp4',
    ]);
    expect(ffmpegInput('rtsp://cam/live', [640, 480], 20)).to.deep.equal(['-i', 'rtsp://cam/live']);
    expect(ffmpegInput('-f lavfi  -i testsrc', [640, 480], 20)).to.deep.equal([
      '-f',
      'lavfi',
      '-i',
      'testsrc',
    ]);
  });
});

describe('real camera: the GStreamer capture (--camera=gst:...)', function () {
  this.timeout(30000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'poppy-camera-gst-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('puts the source elements before our conversion to RGB frames of the robot size and rate, on stdout', () => {
    const { tool, file, args } = captureCommand({
      source: 'gst:v4l2src  device=/dev/video0',
      resolution: [640, 480],
      fps: 20,
    });
    expect([tool, file]).to.deep.equal(['gst-launch-1.0', 'gst-launch-1.0']);
    expect(args.slice(0, 3)).to.deep.equal(['-q', 'v4l2src', 'device=/dev/video0']);
    expect(args.join(' ')).to.contain(
      'video/x-raw,format=RGB,width=640,height=480,framerate=20/1 ! fdsink fd=1',
    );
    expect(captureCommand({ source: '/dev/video0', resolution: [640, 480], fps: 20 }).tool).to.equal(
      'ffmpeg',
    );
  });

  it('the marker detector finds the card of a picture GStreamer decodes and repeats, at the asked rate', async () => {
    const file = path.join(dir, 'tetris.png');
    writeFileSync(file, encodePng(cardPicture(MARKER_CODES.tetris!)));
    const camera = new CaptureCamera({
      source: `gst:filesrc location=${file} ! pngdec ! imagefreeze`,
      resolution: [640, 480],
      fps: 20,
    });
    try {
      const frame = await camera.grab();
      expect([frame.width, frame.height]).to.deep.equal([640, 480]);
      expect(detectMarkers(frame).map((m) => m.id)).to.deep.equal([MARKER_CODES.tetris]);
      // Paced by the sink's clock (a repeated picture is not live): about 20 frames a second, not as fast as it can.
      const n = camera.framesReceived;
      const t0 = performance.now();
      await until('ten more frames', async () => (camera.framesReceived >= n + 10 ? true : undefined));
      expect((performance.now() - t0) / 1000).to.be.above(0.3);
    } finally {
      await camera.close();
    }
  });

  it("a pipeline GStreamer refuses: a hardware error with its words and GStreamer's install tip", async () => {
    const camera = new CaptureCamera({ source: 'gst:nosuchelement', resolution: [160, 120], fps: 10 });
    try {
      let err: RobotError | undefined;
      await camera.grab().catch((e: unknown) => (err = e as RobotError));
      expect(err).to.be.instanceOf(RobotError);
      expect(err!.message).to.match(/gst-launch-1\.0 ended .*no element "nosuchelement"/);
      expect(err!.tip).to.match(/gstreamer1\.0-tools/);
    } finally {
      await camera.close();
    }
  });

  it('a device GStreamer cannot open: the error names it, not the pipeline that failed after it', async () => {
    const camera = new CaptureCamera({
      source: 'gst:v4l2src device=/dev/video-none',
      resolution: [160, 120],
      fps: 10,
    });
    try {
      let err: RobotError | undefined;
      await camera.grab().catch((e: unknown) => (err = e as RobotError));
      expect(err).to.be.instanceOf(RobotError);
      expect(err!.message).to.match(/Cannot identify device '\/dev\/video-none'/);
    } finally {
      await camera.close();
    }
  });
});

describe('real camera: frames through ffmpeg', function () {
  this.timeout(30000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'poppy-camera-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("an ffmpeg test source gives frames of the robot's resolution, fresh ones as time goes, nothing before the first grab", async () => {
    const camera = new CaptureCamera({
      source: 'lavfi:testsrc=size=320x240:rate=20',
      resolution: [640, 480],
      fps: 20,
    });
    try {
      expect(camera.running, 'started before anybody asked').to.equal(false);
      const first = await camera.grab();
      expect([first.width, first.height, first.rgb.length]).to.deep.equal([640, 480, 640 * 480 * 3]);
      // testsrc is a colour test card: many distinct colours, not a blank frame.
      const colours = new Set<number>();
      for (let i = 0; i < first.rgb.length; i += 3 * 97)
        colours.add((first.rgb[i]! << 16) | (first.rgb[i + 1]! << 8) | first.rgb[i + 2]!);
      expect(colours.size).to.be.greaterThan(8);
      const n = camera.framesReceived;
      await until('more frames', async () => (camera.framesReceived >= n + 3 ? true : undefined));
      const later = await camera.grab();
      expect(later).to.not.equal(first);
    } finally {
      await camera.close();
    }
    expect(camera.running).to.equal(false);
    let closedError: unknown;
    await camera.grab().catch((e: unknown) => (closedError = e));
    expect(closedError).to.be.instanceOf(RobotError);
  });

  it('a frame taken keeps its pixels while later frames arrive (the capture reuses two buffers of its own)', async () => {
    // testsrc's counter and moving gradient change every frame: a frame sharing the capture's buffers would change.
    const camera = new CaptureCamera({
      source: 'lavfi:testsrc=size=160x120:rate=20',
      resolution: [160, 120],
      fps: 20,
    });
    try {
      const first = await camera.grab();
      const kept = Buffer.from(first.rgb);
      const n = camera.framesReceived;
      await until('more frames', async () => (camera.framesReceived >= n + 4 ? true : undefined));
      const later = await camera.grab();
      expect(Buffer.from(later.rgb).equals(kept), 'the later frame differs').to.equal(false);
      expect(Buffer.from(first.rgb).equals(kept), 'the first frame is unchanged').to.equal(true);
      expect(later.rgb.buffer).to.not.equal(first.rgb.buffer);
    } finally {
      await camera.close();
    }
  });

  it('the marker detector finds the card of a looped picture in the frames ffmpeg delivers', async () => {
    const file = path.join(dir, 'tetris.png');
    writeFileSync(file, encodePng(cardPicture(MARKER_CODES.tetris!)));
    const camera = new CaptureCamera({ source: file, resolution: [640, 480], fps: 10 });
    try {
      const frame = await camera.grab();
      const found = detectMarkers(frame);
      expect(found.map((m) => m.id)).to.deep.equal([MARKER_CODES.tetris]);
    } finally {
      await camera.close();
    }
  });

  it("a source that ends answers a hardware error with ffmpeg's reason, then starts again after a back-off", async () => {
    const logs: string[] = [];
    const camera = new CaptureCamera({
      source: 'lavfi:testsrc=size=160x120:rate=20:duration=0.5',
      resolution: [160, 120],
      fps: 20,
      log: (l) => logs.push(l),
    });
    try {
      await camera.grab();
      const err = await until('the camera to fail', async () => {
        try {
          await camera.grab();
          return undefined;
        } catch (e) {
          return e as RobotError;
        }
      });
      expect(err).to.be.instanceOf(RobotError);
      expect(err.code).to.equal('hardware');
      expect(err.message).to.match(/camera is not available: ffmpeg ended/);
      expect(logs.join('\n')).to.match(/camera: ffmpeg ended .*retrying/);
      // After the back-off, the next grab starts ffmpeg again and gets a frame.
      const again = await until('the camera to come back', async () => camera.grab().catch(() => undefined));
      expect(again.width).to.equal(160);
    } finally {
      await camera.close();
    }
  });

  it('a source ffmpeg cannot open: a hardware error naming the cause, not a hang', async () => {
    const camera = new CaptureCamera({
      source: path.join(dir, 'missing.png'),
      resolution: [160, 120],
      fps: 10,
    });
    try {
      let err: RobotError | undefined;
      await camera.grab().catch((e: unknown) => (err = e as RobotError));
      expect(err).to.be.instanceOf(RobotError);
      expect(err!.message).to.match(/missing\.png|No such file/);
    } finally {
      await camera.close();
    }
  });
});

describe('real backend with --camera, over the bus emulator', function () {
  this.timeout(60000);
  let emulator: RunningEmulator;
  let dir: string;
  const servers: RobotServer[] = [];
  before(async function () {
    this.timeout(20000);
    dir = mkdtempSync(path.join(os.tmpdir(), 'poppy-camera-'));
    emulator = await startEmulator({ robot: 'ergo-jr', speed: 'manual' });
  });
  after(async () => {
    for (const s of servers) await s.close();
    await emulator?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function serve(camera?: string): Promise<RobotServer> {
    const server = await createRobotServer({
      backend: 'real',
      robot: 'ergo-jr',
      real: { serial: await emulator.addPort(), timeoutMs: 250 },
      camera,
      recordsDir: path.join(dir, 'records'),
    });
    servers.push(server);
    return server;
  }

  it('serves frame.png and finds the card shown to the camera; a camera gone is a 503 while the motors answer', async () => {
    const file = path.join(dir, 'caribou.png');
    writeFileSync(file, encodePng(cardPicture(MARKER_CODES.caribou!)));
    const server = await serve(file);
    const get = (url: string) => server.app.inject({ method: 'GET', url });
    const sensors = JSON.parse((await get('/sensors/list.json')).body) as { sensors: string[] };
    expect(sensors.sensors).to.include('camera');
    const png = await get('/sensors/camera/frame.png');
    expect(png.statusCode).to.equal(200);
    expect(png.headers['content-type']).to.match(/image\/png/);
    const frame = decodePng(png.rawPayload);
    expect([frame.width, frame.height]).to.deep.equal([640, 480]);
    expect(detectMarkers(frame).map((m) => m.id)).to.deep.equal([MARKER_CODES.caribou]);
    // The background detector (its rate on the wall clock) finds it too.
    const code = await until('the detector to see caribou', async () => {
      const body = JSON.parse((await get('/sensors/code/caribou.json')).body) as { found: boolean };
      return body.found ? body : undefined;
    });
    expect(code.found).to.equal(true);
    expect(JSON.parse((await get('/sensors/code/tetris.json')).body).found).to.equal(false);

    // The camera goes away mid-run (its capture process killed, its source gone): frame.png is a JSON 503, the
    // motors keep answering.
    rmSync(file);
    const camera = server.backend.camera as CaptureCamera;
    expect(camera.pid).to.be.a('number');
    process.kill(camera.pid!, 'SIGKILL');
    const gone = await until('frame.png to fail', async () => {
      const r = await get('/sensors/camera/frame.png');
      return r.statusCode === 503 ? r : undefined;
    });
    expect(JSON.parse(gone.body)).to.include.keys('error', 'tip');
    const motor = await get('/motors/m1/registers/present_position/value.json');
    expect(motor.statusCode).to.equal(200);
  });

  it('without --camera the camera routes answer the contract 404s and the motors work', async () => {
    const server = await serve();
    const get = (url: string) => server.app.inject({ method: 'GET', url });
    expect((await get('/sensors/camera/frame.png')).statusCode).to.equal(404);
    expect(JSON.parse((await get('/sensors/list.json')).body).sensors).to.deep.equal([]);
    expect((await get('/motors/m1/registers/present_position/value.json')).statusCode).to.equal(200);
  });
});

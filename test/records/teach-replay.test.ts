/**
 * The whole teach-and-replay loop on the sim, over the HTTP API: make compliant, record, move the joints by hand,
 * save, replay at 1, 2 and -1, and measure how well the replay tracks the recording.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Move } from '../../src/records/move.ts';
import { parseMoveFile } from '../../src/records/move.ts';
import { MIN_TRAVEL_S } from '../../src/records/player.ts';
import { simServer, type TestServer } from '../helpers.ts';
import {
  type Client,
  ERGO_SCRIPT,
  TORSO_SCRIPT,
  fetchClient,
  fmt,
  injectClient,
  moveOverHttp,
  ok,
  presentPositions,
  replayAndMeasure,
  span,
  teach,
} from './teach.ts';

/** Sim seconds for the servos to settle at the end of a replay (the Ergo Jr's I term grinds in the sag). */
const SETTLE_S = 3;
/** Replay tracking on the Ergo Jr, degrees RMS per motor (measured below: up to 10.3). */
const ERGO_MAX_RMS = 12;
const PYPOT_FILE = new URL('./fixtures/pypot-wave.record', import.meta.url);
/** Print the measured figures (RECORDS_VERBOSE=1). */
const verbose = process.env.RECORDS_VERBOSE === '1';
const log = (msg: string) => {
  if (verbose) console.log(`      ${msg}`);
};

async function tempDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'poppy-teach-'));
}

function loopSuite(
  robot: 'ergo-jr' | 'torso',
  script: typeof ERGO_SCRIPT,
  maxRms: number,
  endTolerance: number,
) {
  describe(`teach and replay on the sim (${robot})`, function () {
    this.timeout(120000);
    let dir: string;
    let s: TestServer;
    let c: Client;
    let recorded: Move;

    before(async () => {
      dir = await tempDir();
      s = await simServer(robot, { recordsDir: dir });
      c = injectClient(s);
      recorded = await teach(s, c, 'wave', script);
    });
    after(async () => {
      await s?.close();
      await fs.rm(dir, { recursive: true, force: true });
    });

    it('records 50 Hz samples of [present_position, present_speed] of the chosen motors', async () => {
      expect(recorded.motors).to.deep.equal(Object.keys(script).sort());
      expect(span(recorded)).to.be.within(4.9, 5.1);
      expect(recorded.frames.length).to.be.within(245, 255);
      // The first sample is taken when record.json is answered, the others on the 50 Hz control ticks (which
      // the sim may fire one 2 ms physics step late).
      const steps = recorded.frames.slice(1).map((f, i) => f.t - recorded.frames[i]!.t);
      expect(steps[0]).to.be.within(0.001, 0.03);
      for (const dt of steps.slice(1)) expect(dt).to.be.closeTo(0.02, 0.0025);
      expect(steps.slice(1).reduce((a, b) => a + b, 0) / (steps.length - 1)).to.be.closeTo(0.02, 1e-4);
      // The hands really moved the joints, and the second number is their speed.
      for (const m of recorded.motors) {
        const pos = recorded.frames.map((f) => f.positions.get(m)![0]);
        expect(Math.max(...pos) - Math.min(...pos), m).to.be.greaterThan(15);
      }
      const mid = recorded.frames[120]!;
      const before = recorded.frames[119]!;
      const after = recorded.frames[121]!;
      for (const m of recorded.motors) {
        const finite = (after.positions.get(m)![0] - before.positions.get(m)![0]) / 0.04;
        expect(mid.positions.get(m)![1], m).to.be.closeTo(finite, 15);
      }
      // The file on disk is the pypot format and holds the same move.
      const text = await fs.readFile(path.join(dir, 'wave.record'), 'utf8');
      const doc = JSON.parse(text) as { framerate: number; positions: Record<string, unknown> };
      expect(Object.keys(doc)).to.deep.equal(['framerate', 'positions']);
      expect(doc.framerate).to.equal(50);
      const keys = [...text.matchAll(/^ {4}"([^"]+)": \{/gm)].map((k) => k[1]!);
      expect(keys).to.have.length(recorded.frames.length);
      expect(keys[0]).to.equal('0');
      expect(keys.map(Number)).to.deep.equal(recorded.frames.map((f) => f.t));
      expect(parseMoveFile(text, 'wave.record')).to.deep.equal(recorded);
      expect(await ok(c.get('/records/list.json'))).to.deep.equal({ moves: ['wave'] });
    });

    it(`replays at speed 1 within ${maxRms} degrees RMS per motor and the recorded duration within 5 %`, async () => {
      const r = await replayAndMeasure(s, c, 'wave', 1, recorded);
      log(
        `${robot} speed 1: RMS ${fmt(r.rms)}; max ${fmt(r.maxError)}; duration ${r.duration.toFixed(3)} s vs ${span(recorded).toFixed(3)} s; travel ${r.travel.toFixed(2)} s`,
      );
      for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(maxRms);
      expect(r.duration).to.be.closeTo(span(recorded), 0.05 * span(recorded));
      // The robot ended at the last frame of the recording and holds there (once the I term has settled).
      await s.advance(SETTLE_S);
      const here = await presentPositions(c);
      const last = recorded.frames[recorded.frames.length - 1]!;
      for (const m of recorded.motors)
        expect(here[m]!, m).to.be.closeTo(last.positions.get(m)![0], endTolerance);
      expect(s.records.isPlaying('wave')).to.equal(false);
    });

    it('replays backwards at speed -1, ending at the first frame', async () => {
      const r = await replayAndMeasure(s, c, 'wave', -1, recorded);
      log(
        `${robot} speed -1: RMS ${fmt(r.rms)}; duration ${r.duration.toFixed(3)} s; travel ${r.travel.toFixed(2)} s`,
      );
      // It starts where the forward replay ended: at most the shortest travel, for a motor that sagged past the
      // threshold (5 degrees) from the last frame.
      expect(r.travel).to.be.at.most(MIN_TRAVEL_S + 1e-9);
      for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(maxRms);
      expect(r.duration).to.be.closeTo(span(recorded), 0.05 * span(recorded));
      await s.advance(SETTLE_S);
      const here = await presentPositions(c);
      for (const m of recorded.motors)
        expect(here[m]!, m).to.be.closeTo(recorded.frames[0]!.positions.get(m)![0], endTolerance);
    });

    it('replays at speed 2 in half the time', async () => {
      const r = await replayAndMeasure(s, c, 'wave', 2, recorded);
      log(`${robot} speed 2: RMS ${fmt(r.rms)}; duration ${r.duration.toFixed(3)} s`);
      expect(r.duration).to.be.closeTo(span(recorded) / 2, 0.05 * (span(recorded) / 2));
      for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(2 * maxRms);
    });

    it('travels smoothly to the first frame first when the robot is far from it', async () => {
      // Push every motor of the move 40 degrees away from the first frame.
      const first = recorded.frames[0]!;
      const motors = recorded.motors;
      const away = motors.map((m) => {
        const p = first.positions.get(m)![0];
        const limits = s.robot.motor(m);
        return p + 40 <= limits.maxAngle ? p + 40 : p - 40;
      });
      const gone = s.post('/motors/goto.json', { motors, positions: away, duration: 1, wait: true });
      await s.advance(1.2);
      expect((await gone).statusCode).to.equal(200);
      const r = await replayAndMeasure(s, c, 'wave', 1, recorded);
      log(
        `${robot} travel: ${r.travel.toFixed(2)} s, largest step ${r.maxTravelStep.toFixed(2)} deg per tick`,
      );
      expect(r.travel).to.be.greaterThan(0.5);
      // 40 degrees at 50 deg/s on a minimum-jerk path: at most ~1.5 degrees per 20 ms tick, never a jump.
      expect(r.maxTravelStep).to.be.below(3);
      for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(maxRms);
    });
  });
}

// Tolerances measured on the twin with the servo models of docs/reference/servo-models.md (RECORDS_VERBOSE=1 prints them). The
// XL-320s at pypot's Ergo Jr gains (Kp 32, 70 % torque) lag a hand-taught move by the back-EMF and the arm's weight:
// RMS 3.7 to 10.6 degrees at speed 1 (m2, which carries the arm, the most), so 12. The Torso's MX servos track
// within 2.6 on Rapier's scalar build and 3.1 on its SIMD build (l_shoulder_x after the travel), so 3.5. End poses
// are checked once the servos have settled.
loopSuite('ergo-jr', ERGO_SCRIPT, ERGO_MAX_RMS, 4);
loopSuite('torso', TORSO_SCRIPT, 3.5, 3);

describe('saved moves across a restart, and pypot files', function () {
  this.timeout(120000);
  let dir: string;
  let s: TestServer | undefined;
  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    await s?.close();
    s = undefined;
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('a saved move survives a server restart on the same records directory and still plays', async () => {
    s = await simServer('ergo-jr', { recordsDir: dir });
    const script = { m1: ERGO_SCRIPT.m1!, m4: ERGO_SCRIPT.m4! };
    const recorded = await teach(s, injectClient(s), 'keep', script);
    await s.close();
    s = await simServer('ergo-jr', { recordsDir: dir });
    const c = injectClient(s);
    expect(await ok(c.get('/records/list.json'))).to.deep.equal({ moves: ['keep'] });
    expect(await moveOverHttp(c, 'keep')).to.deep.equal(recorded);
    const r = await replayAndMeasure(s, c, 'keep', 1, recorded);
    for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(ERGO_MAX_RMS);
  });

  it('a move file written by pypot is listed, readable and plays', async () => {
    await fs.mkdir(dir, { recursive: true });
    await fs.copyFile(PYPOT_FILE, path.join(dir, 'pypot-wave.record'));
    await fs.writeFile(path.join(dir, 'pypot-slow.record'), pypotStyleFile());
    s = await simServer('ergo-jr', { recordsDir: dir });
    const c = injectClient(s);
    expect(await ok(c.get('/records/list.json'))).to.deep.equal({ moves: ['pypot-slow', 'pypot-wave'] });
    const wave = await ok(c.get('/records/pypot-wave/value.json'));
    expect(wave.length).to.equal(6);
    // Time keys are answered as decimal text of the same number ("1.9073486328125e-05" -> "0.000019073486328125").
    const first = Object.entries(wave['pypot-wave'] as Record<string, unknown>)[0]!;
    expect(Number(first[0])).to.equal(1.9073486328125e-5);
    expect(first[1]).to.deep.equal({
      m1: [-20, 0],
      m2: [-19, 0],
      m3: [0, 0],
      m4: [-17, 0],
      m5: [-16, 0],
      m6: [-15, 0],
    });
    // The slow one is tracked as well as our own moves.
    const slow = await moveOverHttp(c, 'pypot-slow');
    const r = await replayAndMeasure(s, c, 'pypot-slow', 1, slow);
    log(`pypot file: RMS ${fmt(r.rms)}; duration ${r.duration.toFixed(3)} s vs ${span(slow).toFixed(3)} s`);
    for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(ERGO_MAX_RMS);
    expect(r.duration).to.be.closeTo(span(slow), 0.05 * span(slow));
    // The short one (0.1 s, far too fast for the arm to follow): travels to its first frame, plays, and leaves
    // the goals on its last frame.
    await ok(c.post('/records/pypot-wave/play.json', { speed: 1 }));
    const player = s.records.replay('pypot-wave')!;
    await s.advance(3);
    expect(player.timing.phase).to.equal('done');
    expect(player.timing.end! - player.timing.playStart!).to.be.closeTo(0.1, 0.025);
    const goals = (await ok(c.get('/motors/registers/goal_position/list.json'))).goal_position;
    expect(goals).to.deep.equal({ m1: -7.5, m2: 6, m3: 0, m4: 33, m5: 46.5, m6: 60 });
  });
});

describe('teach and replay over a real listening HTTP server', function () {
  this.timeout(120000);
  it('records, saves and replays through fetch()', async () => {
    const dir = await tempDir();
    const s = await simServer('ergo-jr', { recordsDir: dir });
    try {
      await s.app.listen({ port: 0, host: '127.0.0.1' });
      const addr = s.app.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      const c = fetchClient(`http://127.0.0.1:${port}`);
      const recorded = await teach(s, c, 'net', { m1: ERGO_SCRIPT.m1!, m2: ERGO_SCRIPT.m2! });
      expect(await ok(c.get('/records/list.json'))).to.deep.equal({ moves: ['net'] });
      const r = await replayAndMeasure(s, c, 'net', 1, recorded);
      log(
        `over HTTP: RMS ${fmt(r.rms)}; duration ${r.duration.toFixed(3)} s vs ${span(recorded).toFixed(3)} s`,
      );
      for (const [m, rms] of Object.entries(r.rms)) expect(rms, m).to.be.at.most(ERGO_MAX_RMS);
      expect(r.duration).to.be.closeTo(span(recorded), 0.05 * span(recorded));
      expect(await ok(c.post('/records/net/delete.json'))).to.deep.equal({ net: 'deleted' });
      expect((await c.get('/records/net/value.json')).status).to.equal(404);
    } finally {
      await s.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

/** Python's float repr: "-20.0", "0.020021915435791016", "1.9073486328125e-05". */
function pyFloat(x: number): string {
  if (Object.is(x, -0)) return '-0.0';
  if (x !== 0 && Math.abs(x) < 1e-4) return x.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  const s = String(x);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

/** A 3 s move as pypot writes it: time.time() jitter in the keys, Python floats, json.dump layout. */
function pypotStyleFile(): string {
  const rows: string[] = [];
  let prev: number[] | undefined;
  for (let i = 0; i < 150; i++) {
    const t = i === 0 ? 1.9073486328125e-5 : i * 0.02 + ((i * 7919) % 13) * 1e-5;
    const phase = (2 * Math.PI * t) / 3;
    const pos = [0, -60, 30, 0, 40, 0].map((c, j) => Math.round((c + 25 * Math.sin(phase + j)) * 10) / 10);
    const speed = pos.map((p, j) => (prev ? Math.round(((p - prev[j]!) / 0.02) * 10) / 10 : -0));
    prev = pos;
    const cells = pos.map((p, j) => `"m${j + 1}": [${pyFloat(p)}, ${pyFloat(speed[j]!)}]`).join(', ');
    rows.push(`"${pyFloat(t)}": {${cells}}`);
  }
  return `{"framerate": 50, "positions": {${rows.join(', ')}}}`;
}

/**
 * Scenario: teach a move by hand on the twin, save it, replay it at speeds 1, 2 and -1, and check that the replay
 * tracks the recording (RMS error per motor against the recorded position at the same move time) and takes the
 * recorded duration divided by |speed|. Run: npx tsx scenarios/teach-and-replay.ts [robot] [records-dir]
 * Exits 1 when a motor is off by more than 2 degrees RMS at speed 1 or a duration by more than 5 %.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Move, parseMoveFile, sampleMove } from '../src/records/move.ts';
import { openTwin } from '../src/scenario/twin.ts';

/** Per motor, successive hand drags [target degrees, seconds]; every chain lasts 5 s. */
const SCRIPTS: Record<string, Record<string, [number, number][]>> = {
  'ergo-jr': {
    m1: [
      [40, 1.5],
      [-30, 2],
      [0, 1.5],
    ],
    m2: [
      [-60, 1.5],
      [-20, 1.5],
      [-70, 2],
    ],
    m4: [
      [-40, 1],
      [30, 2],
      [0, 2],
    ],
    m6: [
      [10, 1.5],
      [-20, 1.5],
      [0, 2],
    ],
  },
  torso: {
    head_z: [
      [40, 1.5],
      [-30, 2],
      [0, 1.5],
    ],
    l_shoulder_x: [
      [30, 2],
      [60, 1.5],
      [20, 1.5],
    ],
    r_shoulder_y: [
      [-30, 2.5],
      [-60, 2.5],
    ],
  },
};
const MAX_RMS_DEG = 2;
const MAX_DURATION_ERROR = 0.05;
const TICK = 0.02;

const [robot = 'ergo-jr', dirArg] = process.argv.slice(2);
const script = SCRIPTS[robot];
if (!script) {
  console.error(`no hand script for "${robot}": use ${Object.keys(SCRIPTS).join(' or ')}`);
  process.exit(2);
}
const dir = dirArg ?? (await mkdtemp(path.join(os.tmpdir(), 'teach-and-replay-')));
const twin = await openTwin(robot, { recordsDir: dir });

async function call(method: 'GET' | 'POST', url: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = method === 'GET' ? await twin.get(url) : await twin.post(url, body);
  if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json() as Record<string, unknown>;
}

async function present(): Promise<Record<string, number>> {
  return (await call('GET', '/motors/registers/present_position/list.json')).present_position as Record<
    string,
    number
  >;
}

/** Compliant joints, hands on them, record while the hands follow the script, let go, save. */
async function teach(name: string): Promise<Move> {
  const motors = Object.keys(script!);
  for (const m of motors) await call('POST', `/motors/${m}/registers/compliant/value.json`, true);
  const here = await present();
  for (const m of motors)
    await call('POST', `/sim/motors/${m}/hand.json`, { position: here[m], duration: 0.5 });
  await twin.advance(0.5);
  await call('POST', `/records/${name}/record.json`, { motors });
  const total = Math.max(...Object.values(script!).map((s) => s.reduce((a, [, d]) => a + d, 0)));
  const due = new Map(motors.map((m) => [m, 0]));
  const step = new Map(motors.map((m) => [m, 0]));
  for (let i = 0; i * TICK < total - 1e-9; i++) {
    const t = i * TICK;
    for (const m of motors) {
      const k = step.get(m)!;
      const drags = script![m]!;
      if (k >= drags.length || t < due.get(m)! - 1e-9) continue;
      const [position, duration] = drags[k]!;
      const hold = k === drags.length - 1 ? total - t : duration;
      await call('POST', `/sim/motors/${m}/hand.json`, { position, duration: hold });
      due.set(m, t + duration);
      step.set(m, k + 1);
    }
    await twin.advance(TICK);
  }
  await call('POST', `/records/${name}/save.json`);
  const value = await call('GET', `/records/${name}/value.json`);
  return parseMoveFile(JSON.stringify({ framerate: 50, positions: value[name] }), name);
}

/** Replays and compares present_position at every control tick with the recording at the same move time. */
async function replay(name: string, move: Move, speed: number) {
  await call('POST', `/records/${name}/play.json`, { speed });
  const player = twin.records.replay(name)!;
  const errors = new Map<string, number[]>(move.motors.map((m) => [m, []]));
  while (player.running) {
    await twin.advance(TICK);
    const { phase, playStart } = player.timing;
    if (phase !== 'play' || playStart === undefined) continue;
    const ref = sampleMove(move, player.plan.moveTime(twin.backend.clock.now() - playStart));
    const now = await present();
    for (const m of move.motors) errors.get(m)!.push(now[m]! - ref.get(m)![0]);
  }
  const rms = Object.fromEntries(
    [...errors].map(([m, e]) => [m, Math.sqrt(e.reduce((a, x) => a + x * x, 0) / e.length)]),
  );
  const { playStart, end } = player.timing;
  return { rms, duration: end! - playStart! };
}

let failures = 0;
try {
  const move = await teach('taught');
  const span = move.frames[move.frames.length - 1]!.t - move.frames[0]!.t;
  console.log(
    `${robot}: recorded ${move.frames.length} samples of ${move.motors.join(', ')} over ${span.toFixed(2)} s`,
  );
  for (const speed of [1, 2, -1]) {
    const { rms, duration } = await replay('taught', move, speed);
    const expected = span / Math.abs(speed);
    const durationError = Math.abs(duration - expected) / expected;
    const worst = Math.max(...Object.values(rms));
    const ok = durationError <= MAX_DURATION_ERROR && (speed !== 1 || worst <= MAX_RMS_DEG);
    if (!ok) failures++;
    const table = Object.entries(rms)
      .map(([m, v]) => `${m} ${v.toFixed(2)}`)
      .join(', ');
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} speed ${speed}: ${duration.toFixed(3)} s (expected ${expected.toFixed(3)} s, ` +
        `${(durationError * 100).toFixed(2)} %); RMS deg: ${table}`,
    );
    await twin.advance(0.5);
  }
} finally {
  await twin.close();
  if (!dirArg) await rm(dir, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);

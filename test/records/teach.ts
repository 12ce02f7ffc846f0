/**
 * Teach-and-replay helpers over the HTTP API of a manual-time sim server: a person's hands move the joints while a
 * move is recorded, then the replay is measured against the recording.
 */
import { expect } from 'chai';
import type { Move } from '../../src/records/move.ts';
import { parseMoveFile, sampleMove } from '../../src/records/move.ts';
import type { TestServer } from '../helpers.ts';

/** Per motor, successive hand drags: [target position (deg), duration (s)]. */
export type HandScript = Readonly<Record<string, readonly (readonly [number, number])[]>>;

export const ERGO_SCRIPT: HandScript = {
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
  m3: [
    [20, 2],
    [50, 1.5],
    [30, 1.5],
  ],
  m4: [
    [-40, 1],
    [30, 2],
    [0, 2],
  ],
  m5: [
    [30, 2.5],
    [60, 2.5],
  ],
  m6: [
    [10, 1.5],
    [-20, 1.5],
    [0, 2],
  ],
};

export const TORSO_SCRIPT: HandScript = {
  head_z: [
    [40, 1.5],
    [-30, 2],
    [0, 1.5],
  ],
  head_y: [
    [10, 2],
    [-10, 3],
  ],
  l_shoulder_x: [
    [30, 2],
    [60, 1.5],
    [20, 1.5],
  ],
  // Inside the elbow's angle limits (-50 to 90): a hand can push a limp joint past them, but the replay's goals are
  // clamped to them, as the firmware does.
  l_elbow_y: [
    [-45, 2],
    [-10, 1.5],
    [-40, 1.5],
  ],
  r_shoulder_y: [
    [-30, 2.5],
    [-60, 2.5],
  ],
};

/** Any HTTP client: inject() or fetch() against a listening server. */
export interface Client {
  get(url: string): Promise<{ status: number; body: unknown }>;
  post(url: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

export function injectClient(s: TestServer): Client {
  const wrap = (r: { statusCode: number; body: string }) => ({
    status: r.statusCode,
    body: r.body ? (JSON.parse(r.body) as unknown) : undefined,
  });
  return {
    get: async (url) => wrap(await s.get(url)),
    post: async (url, body) => wrap(await s.post(url, body)),
  };
}

export function fetchClient(base: string): Client {
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(base + url, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  return { get: (url) => call('GET', url), post: (url, body) => call('POST', url, body) };
}

export async function ok(p: Promise<{ status: number; body: unknown }>): Promise<Record<string, unknown>> {
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r.body as Record<string, unknown>;
}

export async function presentPositions(c: Client): Promise<Record<string, number>> {
  const body = await ok(c.get('/motors/registers/present_position/list.json'));
  return body.present_position as Record<string, number>;
}

/** Seconds the script takes: the longest chain of drags. */
export function scriptDuration(script: HandScript): number {
  return Math.max(...Object.values(script).map((steps) => steps.reduce((a, [, d]) => a + d, 0)));
}

/**
 * Makes the script's motors compliant, holds them where they are, records them while the hands follow the script
 * (every hand lets go exactly when the script ends), then saves. Returns the saved move as read back over HTTP.
 */
export async function teach(s: TestServer, c: Client, name: string, script: HandScript): Promise<Move> {
  const motors = Object.keys(script);
  // The robot holds the joints the move leaves out (a limp trunk would sway under the taught arm, and a replay of the
  // taught joints cannot bring it back); the taught ones go limp for the hand.
  for (const m of s.robot.motors)
    if (!motors.includes(m.name)) await ok(c.post(`/motors/${m.name}/registers/compliant/value.json`, false));
  for (const m of motors) await ok(c.post(`/motors/${m}/registers/compliant/value.json`, true));
  await s.advance(0.1);
  // Hands grab the limp joints before they sag.
  const here = await presentPositions(c);
  for (const m of motors)
    await ok(c.post(`/sim/motors/${m}/hand.json`, { position: here[m], duration: 0.5 }));
  await s.advance(0.5);
  expect(await ok(c.post(`/records/${name}/record.json`, { motors }))).to.deep.equal({ [name]: 'recording' });
  const total = scriptDuration(script);
  const next = new Map(motors.map((m) => [m, 0]));
  const step = new Map(motors.map((m) => [m, 0]));
  const dt = 0.02;
  for (let i = 0; i * dt < total - 1e-9; i++) {
    const t = i * dt;
    for (const m of motors) {
      const steps = script[m]!;
      const k = step.get(m)!;
      if (k < steps.length && t >= next.get(m)! - 1e-9) {
        const [position, duration] = steps[k]!;
        // The last drag of a shorter chain holds until the end of the script.
        const hold = k === steps.length - 1 ? total - t : duration;
        await ok(c.post(`/sim/motors/${m}/hand.json`, { position, duration: hold }));
        next.set(m, t + duration);
        step.set(m, k + 1);
      }
    }
    await s.advance(dt);
  }
  expect(await ok(c.post(`/records/${name}/save.json`))).to.deep.equal({ [name]: 'saved' });
  return moveOverHttp(c, name);
}

/** value.json, turned back into a Move. */
export async function moveOverHttp(c: Client, name: string): Promise<Move> {
  const body = await ok(c.get(`/records/${name}/value.json`));
  const positions = body[name] as Record<string, unknown>;
  expect(body.length).to.equal(Object.keys(positions).length);
  return parseMoveFile(JSON.stringify({ framerate: 50, positions }), `${name} (value.json)`);
}

export interface ReplayMeasure {
  /** RMS over the replay of (present_position - recorded position at the matching move time), by motor. */
  readonly rms: Record<string, number>;
  readonly maxError: Record<string, number>;
  /** Sim seconds of the replay proper (after any travel to the start frame). */
  readonly duration: number;
  /** Sim seconds from play.json to the start of the replay proper. */
  readonly travel: number;
  /** Largest change of any present_position between two control ticks while travelling to the start frame. */
  readonly maxTravelStep: number;
}

/** Plays the move and samples present_position over HTTP every control tick until the replay ends. */
export async function replayAndMeasure(
  s: TestServer,
  c: Client,
  name: string,
  speed: number,
  recorded: Move,
): Promise<ReplayMeasure> {
  const asked = s.backend.clock.now();
  expect(await ok(c.post(`/records/${name}/play.json`, { speed }))).to.deep.equal({
    [name]: 'started replay',
  });
  const player = s.records.replay(name)!;
  const squares = new Map<string, number[]>();
  let last = await presentPositions(c);
  let maxTravelStep = 0;
  for (let guard = 0; player.running; guard++) {
    expect(guard, 'the replay never ends').to.be.below(10000);
    await s.advance(0.02);
    const present = await presentPositions(c);
    const { phase, playStart } = player.timing;
    if (phase === 'travel' || (playStart !== undefined && s.backend.clock.now() - playStart < 0.03))
      for (const m of recorded.motors)
        maxTravelStep = Math.max(maxTravelStep, Math.abs(present[m]! - last[m]!));
    last = present;
    if (phase !== 'play' || playStart === undefined) continue;
    const elapsed = s.backend.clock.now() - playStart;
    const ref = sampleMove(recorded, player.plan.moveTime(elapsed));
    for (const m of recorded.motors) {
      const list = squares.get(m) ?? [];
      list.push(present[m]! - ref.get(m)![0]);
      squares.set(m, list);
    }
  }
  const { playStart, end } = player.timing;
  const rms: Record<string, number> = {};
  const maxError: Record<string, number> = {};
  for (const [m, errs] of squares) {
    rms[m] = Math.sqrt(errs.reduce((a, e) => a + e * e, 0) / errs.length);
    maxError[m] = Math.max(...errs.map(Math.abs));
  }
  return { rms, maxError, duration: end! - playStart!, travel: playStart! - asked, maxTravelStep };
}

export function span(move: Move): number {
  return move.frames[move.frames.length - 1]!.t - move.frames[0]!.t;
}

export function fmt(r: Record<string, number>): string {
  return Object.entries(r)
    .map(([m, v]) => `${m} ${v.toFixed(2)}`)
    .join(', ');
}

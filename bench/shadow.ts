/**
 * `npm run bench -- shadow`: shadow mode's false alarms. The Ergo Jr on the bus emulator (its own process, 5 % of
 * the replies dropped) runs a sequence of everyday gotos with the twin beside it; prints the events raised (the goal
 * is none) and the largest normal error against its band, per round; and what the twin costs: the bus loop's cycle
 * lateness and rate with it beside (goals: p99 <= 2 ms, every cycle of 50 Hz run), the twin's CPU per cycle.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RealBackend } from '../src/real/backend.ts';
import {
  EVERYDAY_GOTOS,
  type ShadowRig,
  TORSO_ARM_GOTOS,
  startShadowRig,
} from '../test/shadow/emulator-process.ts';
import { ERGO_JR_HELD, type HeldSoak, TORSO_HELD, soakHeld } from '../test/shadow/held.ts';

export interface ShadowRound {
  readonly events: { motor: string; kind: string; error: string }[];
  /** The largest |error| / band seen, with its figures. */
  readonly worst: { motor: string; error: number; band: number };
  /** The bus loop with the twin beside it: cycle start lateness (ms, per report) and cycles run / cycles due at 50 Hz. */
  readonly loop: { p99LateMs: number; maxLateMs: number; rateShare: number };
  /** The twin's work per bus cycle (ms of the server's thread) and its share of one core. */
  readonly twin: { msPerCycle: number; coreShare: number };
}

/** The largest |error| / band seen, and a sampler that raises it from the status every 40 ms for `ms`. */
function worstTracker(rig: ShadowRig) {
  const worst = { motor: '', error: 0, band: 1 };
  const sample = async (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      for (const m of ((await rig.call('GET', '/shadow/status.json')).body as unknown as Status).motors) {
        if (m.error === null || m.state === 'compliant') continue;
        if (Math.abs(m.error) / m.band > worst.error / worst.band)
          Object.assign(worst, { motor: m.motor, error: Math.abs(m.error), band: m.band });
      }
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  };
  return { worst, sample };
}

interface Status {
  time: number;
  motors: { motor: string; error: number | null; band: number; state: string }[];
}

export async function runShadowBench(rounds: number): Promise<ShadowRound[]> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-bench-'));
  // BENCH_SHADOW_FAULTS='' measures the loop on a clean line: a dropped reply costs its timeout, late cycles follow.
  const faults = process.env.BENCH_SHADOW_FAULTS ?? 'drop=0.05';
  const rig = await startShadowRig({ faults: faults || undefined, recordsDir: path.join(tmp, 'records') });
  const call = async (method: string, p: string, body?: unknown) => (await rig.call(method, p, body)).body;
  try {
    for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])
      await call('POST', `/motors/${m}/registers/compliant/value.json`, false);
    await call('POST', '/motors/m2/goto.json', { position: -60, duration: 1, wait: true });
    const out: ShadowRound[] = [];
    const real = rig.server.backend as RealBackend;
    const shadow = rig.server.shadow!;
    const late: number[] = [];
    let seq = 0;
    real.onCycle((report) => {
      late.push(report.lateMs);
      seq = report.seq;
    });
    for (let r = 0; r < rounds; r++) {
      late.length = 0;
      const seq0 = seq;
      const wall0 = performance.now();
      const busy0 = shadow.stats.busyMs;
      const cycles0 = shadow.stats.cycles;
      const t0 = ((await call('GET', '/shadow/status.json')) as unknown as Status).time;
      const { worst, sample } = worstTracker(rig);
      for (const [motor, position, duration] of EVERYDAY_GOTOS) {
        await call('POST', `/motors/${motor}/goto.json`, { position, duration });
        await sample(duration * 1000 + 300);
      }
      const events = (await call('GET', `/shadow/events.json?since=${t0}`)).events as {
        motor: string;
        kind: string;
      }[];
      const wallS = (performance.now() - wall0) / 1000;
      const sorted = [...late].sort((a, b) => a - b);
      const twinMs = shadow.stats.busyMs - busy0;
      out.push({
        events: events.map((e) => ({ motor: e.motor, kind: e.kind, error: JSON.stringify(e) })),
        worst,
        loop: {
          p99LateMs: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? NaN,
          maxLateMs: sorted.at(-1) ?? NaN,
          rateShare: (seq - seq0) / (wallS * 50),
        },
        twin: {
          msPerCycle: twinMs / Math.max(1, shadow.stats.cycles - cycles0),
          coreShare: twinMs / 1000 / wallS,
        },
      });
    }
    return out;
  } finally {
    await rig.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** What a robot does in the soak, besides its gotos: the motors, a primitive, and a compliant joint pushed by hand. */
const SOAK: Record<
  string,
  {
    gotos: readonly (readonly [string, number, number])[];
    primitive: string;
    hand: [string, number, number, number];
  }
> = {
  'ergo-jr': { gotos: EVERYDAY_GOTOS, primitive: 'dance', hand: ['m1', 1, 0.06, 40] },
  torso: {
    gotos: TORSO_ARM_GOTOS,
    primitive: 'upper_body_idle_motion',
    hand: ['head_z', 36, 0.1, 40],
  },
};

export interface SoakResult {
  readonly robot: string;
  readonly seconds: number;
  readonly laps: number;
  readonly events: string[];
  readonly worst: { motor: string; error: number; band: number };
}

/**
 * Shadow mode's no-false-alarm soak (issue 29): for `seconds`, laps of everyday gotos, a move replayed forwards and
 * backwards, a built-in primitive for 5 s, and a compliant joint turned by a hand (a push on the emulated servo, up to
 * a stop at 40 degrees, as a hand holds it there) then made stiff again, with 5 % of the replies dropped. Returns the events raised (the goal is none) and the largest
 * error against its band, sampled every 40 ms.
 */
export async function runShadowSoak(
  robot: string,
  seconds: number,
  /** The twin's physics, and the emulator's servos (--servo-params) and the twin's calibration (--calibration), files. */
  opts: { physicsHz?: number; solverIterations?: number; servoParams?: string; calibration?: string } = {},
): Promise<SoakResult> {
  const plan = SOAK[robot];
  if (!plan) throw new Error(`no soak for ${robot} (ergo-jr, torso)`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-soak-'));
  const records = path.join(tmp, 'records');
  const rig = await startShadowRig({ robot, faults: 'drop=0.05', recordsDir: records, ...opts });
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await rig.call(method, p, body);
    if (res.status >= 400) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const { worst, sample } = worstTracker(rig);
  try {
    const motors = (await call('GET', '/motors/list.json')).motors as string[];
    for (const m of motors) await call('POST', `/motors/${m}/registers/compliant/value.json`, false);
    // The move replayed: the gotos' motors swinging about where they are, recorded as pypot saves moves (50 Hz).
    const swung = [...new Set(plan.gotos.map(([m]) => m))];
    const positions: Record<string, Record<string, [number, number]>> = {};
    for (let k = 0; k <= 150; k++)
      positions[String(k / 50)] = Object.fromEntries(
        swung.map((m, i) => [m, [15 * Math.sin((2 * Math.PI * k) / 150 + i), 0] as [number, number]]),
      );
    writeFileSync(path.join(records, 'soak.record'), JSON.stringify({ framerate: 50, positions }));
    const t0 = ((await call('GET', '/shadow/status.json')) as unknown as Status).time;
    const started = performance.now();
    let laps = 0;
    while (performance.now() - started < seconds * 1000) {
      for (const [motor, position, duration] of plan.gotos) {
        await call('POST', `/motors/${motor}/goto.json`, { position, duration });
        await sample(duration * 1000 + 300);
      }
      for (const speed of [1, -1]) {
        await call('POST', '/records/soak/play.json', { speed });
        await sample(3000 + 1500);
      }
      await call('GET', `/primitives/${plan.primitive}/start.json`);
      await sample(5000);
      await call('GET', `/primitives/${plan.primitive}/stop.json`);
      await sample(500);
      // A hand turning the limp joint to 40 degrees (raw, as user: no offset): a push held there by a stop.
      const [hand, id, torque, to] = plan.hand;
      await call('POST', `/motors/${hand}/registers/compliant/value.json`, true);
      await rig.emulator.send(`block=${id}@${to}`);
      await rig.emulator.send(`push=${id}:${torque}`);
      await sample(1500);
      await rig.emulator.send(`push=${id}:off`);
      await rig.emulator.send(`block=${id}@off`);
      await sample(500);
      await call('POST', `/motors/${hand}/registers/compliant/value.json`, false);
      await call('POST', `/motors/${hand}/goto.json`, { position: 0, duration: 1 });
      await sample(1500);
      laps++;
    }
    const events = (await call('GET', `/shadow/events.json?since=${t0}`)).events as unknown[];
    return {
      robot,
      seconds: (performance.now() - started) / 1000,
      laps,
      events: events.map((e) => JSON.stringify(e)),
      worst,
    };
  } finally {
    await rig.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Shadow mode on a robot as users hold it (issue 44): `seconds` of laps of test/shadow/held.ts on the emulator with
 * 5 % of the replies dropped: half the joints limp and moved by the emulator's hand, the others on gotos, then a
 * primitive that leaves some limp. The events raised (the goal is none) and the shadow warnings.
 */
export async function runShadowHeld(
  robot: string,
  seconds: number,
  /** The emulator's servos (--servo-params) and the twin's calibration (--calibration), files. */
  servos: {
    servoParams?: string;
    calibration?: string;
    shadowLog?: string;
    physicsHz?: number;
    solverIterations?: number;
  } = {},
): Promise<HeldSoak & { robot: string; deadBands: Record<string, number> }> {
  const plan = [ERGO_JR_HELD, TORSO_HELD].find((p) => p.robot === robot);
  if (!plan) throw new Error(`no held plan for ${robot} (ergo-jr, torso)`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-held-'));
  const rig = await startShadowRig({
    robot,
    faults: 'drop=0.05',
    recordsDir: path.join(tmp, 'records'),
    ...servos,
  });
  try {
    const soak = await soakHeld(rig, plan, seconds);
    const status = (await rig.call('GET', '/shadow/status.json')).body as unknown as {
      motors: { motor: string; deadBand: number }[];
    };
    const deadBands = Object.fromEntries(status.motors.map((m) => [m.motor, m.deadBand]));
    return { robot, ...soak, deadBands };
  } finally {
    await rig.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * `npm run bench -- shadow`: shadow mode's false alarms. The Ergo Jr on the bus emulator (its own process, 5 % of
 * the replies dropped) runs a sequence of everyday gotos with the twin beside it; prints the events raised (the goal
 * is none) and the largest normal error against its band, per round; and what the twin costs: the bus loop's cycle
 * lateness and rate with it beside (goals: p99 <= 2 ms, every cycle of 50 Hz run), the twin's CPU per cycle.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RealBackend } from '../src/real/backend.ts';
import { EVERYDAY_GOTOS, startShadowRig } from '../test/shadow/emulator-process.ts';

export interface ShadowRound {
  readonly events: { motor: string; kind: string; error: string }[];
  /** The largest |error| / band seen, with its figures. */
  readonly worst: { motor: string; error: number; band: number };
  /** The bus loop with the twin beside it: cycle start lateness (ms, per report) and cycles run / cycles due at 50 Hz. */
  readonly loop: { p99LateMs: number; maxLateMs: number; rateShare: number };
  /** The twin's work per bus cycle (ms of the server's thread) and its share of one core. */
  readonly twin: { msPerCycle: number; coreShare: number };
}

interface Status {
  time: number;
  motors: { motor: string; error: number | null; band: number; state: string }[];
}

export async function runShadowBench(rounds: number): Promise<ShadowRound[]> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-shadow-bench-'));
  const rig = await startShadowRig({ faults: 'drop=0.05', recordsDir: path.join(tmp, 'records') });
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
      const worst = { motor: '', error: 0, band: 1 };
      for (const [motor, position, duration] of EVERYDAY_GOTOS) {
        await call('POST', `/motors/${motor}/goto.json`, { position, duration });
        const end = performance.now() + duration * 1000 + 300;
        while (performance.now() < end) {
          for (const m of ((await call('GET', '/shadow/status.json')) as unknown as Status).motors) {
            if (m.error === null || m.state === 'compliant') continue;
            if (Math.abs(m.error) / m.band > worst.error / worst.band)
              Object.assign(worst, { motor: m.motor, error: Math.abs(m.error), band: m.band });
          }
          await new Promise((resolve) => setTimeout(resolve, 40));
        }
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

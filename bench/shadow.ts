/**
 * `npm run bench -- shadow`: shadow mode's false alarms. The Ergo Jr on the bus emulator (its own process, 5 % of
 * the replies dropped) runs a sequence of everyday gotos with the twin beside it; prints the events raised (the goal
 * is none) and the largest normal error against its band, per round.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EVERYDAY_GOTOS, startShadowRig } from '../test/shadow/emulator-process.ts';

export interface ShadowRound {
  readonly events: { motor: string; kind: string; error: string }[];
  /** The largest |error| / band seen, with its figures. */
  readonly worst: { motor: string; error: number; band: number };
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
    for (let r = 0; r < rounds; r++) {
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
      out.push({
        events: events.map((e) => ({ motor: e.motor, kind: e.kind, error: JSON.stringify(e) })),
        worst,
      });
    }
    return out;
  } finally {
    await rig.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * `npm run bench -- shadow`: shadow mode's false alarms. The Ergo Jr on the bus emulator (its own process, 5 % of
 * the replies dropped) runs a sequence of everyday gotos with the twin beside it; prints the events raised (the goal
 * is none) and the largest normal error against its band, per round.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type RobotServer, createRobotServer } from '../src/server.ts';
import { EmulatorProcess } from '../test/shadow/emulator-process.ts';

const MOVES: readonly [string, number, number][] = [
  ['m1', 40, 1],
  ['m3', 10, 0.8],
  ['m1', -30, 1.2],
  ['m4', 45, 0.6],
  ['m5', 20, 1],
  ['m2', -30, 1],
  ['m6', 20, 0.5],
  ['m1', 0, 0.7],
  ['m4', 0, 1],
  ['m3', 35, 1],
  ['m2', -60, 1],
  ['m5', 55, 0.8],
];

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
  const { emulator, device } = await EmulatorProcess.start(['--robot', 'ergo-jr', '--faults', 'drop=0.05']);
  const logs: string[] = [];
  let server: RobotServer | undefined;
  try {
    server = await createRobotServer({
      backend: 'real',
      robot: 'ergo-jr',
      real: { serial: device },
      shadow: true,
      recordsDir: path.join(tmp, 'records'),
      logger: { info: () => {}, warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = server.app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const call = async (method: string, p: string, body?: unknown) =>
      (await (
        await fetch(url + p, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
      ).json()) as Record<string, unknown>;
    for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])
      await call('POST', `/motors/${m}/registers/compliant/value.json`, false);
    await call('POST', '/motors/m2/goto.json', { position: -60, duration: 1, wait: true });
    const out: ShadowRound[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = ((await call('GET', '/shadow/status.json')) as unknown as Status).time;
      const worst = { motor: '', error: 0, band: 1 };
      for (const [motor, position, duration] of MOVES) {
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
    await server?.close();
    await emulator.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

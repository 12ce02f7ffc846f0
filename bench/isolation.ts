/**
 * `npx tsx bench/isolation.ts`: what isolating custom primitives in worker threads costs and protects.
 * 1. Sim real-time factor at --speed 1 and at max, Ergo Jr, with and without the example sinus running in its worker
 *    (goal: no measurable cost at 50 Hz).
 * 2. p50/p99 of a register read (in-process inject) while a custom primitive busy-loops or eats memory in its worker
 *    (goal: p99 under 10 ms while it misbehaves).
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRobotServer } from '../src/server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const BROKEN = {
  busy: `export default (ctx: any, lib: any) => new (class extends lib.Primitive {
  constructor() { super(ctx, 'busy', { frequency: 10 }); }
  protected override update() { for (;;) {} }
})();\n`,
  hog: `export default (ctx: any, lib: any) => new (class extends lib.Primitive {
  readonly hoard: unknown[] = [];
  constructor() { super(ctx, 'hog', { frequency: 10 }); }
  protected override update() { for (;;) this.hoard.push(new Array(1e5).fill(Math.random())); }
})();\n`,
};

const dir = await mkdtemp(path.join(os.tmpdir(), 'poppy-bench-isolation-'));
await copyFile(path.join(ROOT, 'examples/primitives/sinus.ts'), path.join(dir, 'sinus.ts'));
for (const [name, text] of Object.entries(BROKEN)) await writeFile(path.join(dir, `${name}.ts`), text);

async function rtf(speed: 1 | 'max', withSinus: boolean): Promise<number> {
  const server = await createRobotServer({
    backend: 'sim',
    robot: 'ergo-jr',
    speed,
    recordsDir: path.join(dir, 'records'),
    primitivesDir: dir,
  });
  try {
    await server.primitives.customLoaded();
    for (const m of server.robot.motors) m.set('compliant', false);
    if (withSinus) await server.primitives.get('sinus').start();
    await sleep(500);
    const a = server.simulation!.stats();
    const wall0 = performance.now();
    await sleep(seconds * 1000);
    const b = server.simulation!.stats();
    return (b.simTime - a.simTime) / ((performance.now() - wall0) / 1000);
  } finally {
    await server.close();
  }
}

async function readLatency(misbehaving: 'busy' | 'hog' | undefined) {
  const server = await createRobotServer({
    backend: 'sim',
    robot: 'ergo-jr',
    speed: 1,
    recordsDir: path.join(dir, 'records'),
    primitivesDir: dir,
  });
  try {
    await server.primitives.customLoaded();
    if (misbehaving) await server.primitives.get(misbehaving).start();
    const times: number[] = [];
    const end = performance.now() + 3000;
    while (performance.now() < end) {
      const t0 = performance.now();
      const res = await server.app.inject({
        method: 'GET',
        url: '/motors/m1/registers/present_position/value.json',
      });
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      times.push(performance.now() - t0);
      await sleep(2);
    }
    times.sort((x, y) => x - y);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
    const status = misbehaving ? server.primitives.status(misbehaving) : undefined;
    return { n: times.length, p50: at(0.5), p99: at(0.99), status };
  } finally {
    await server.close();
  }
}

console.log(`isolation bench, ${os.cpus().length} cores, node ${process.version}, ${seconds} s per run`);
for (const speed of [1, 'max'] as const) {
  const without = await rtf(speed, false);
  const withSinus = await rtf(speed, true);
  console.log(
    `RTF speed ${speed}: without custom primitive ${without.toFixed(3)}, with sinus in its worker ${withSinus.toFixed(3)} (${((withSinus / without - 1) * 100).toFixed(1)} %)`,
  );
}
for (const kind of [undefined, 'busy', 'hog'] as const) {
  const r = await readLatency(kind);
  console.log(
    `register read while ${kind ?? 'nothing misbehaves'}: ${r.n} reads, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms${r.status ? `; then ${r.status.state}, last_error ${JSON.stringify(r.status.last_error)}` : ''}`,
  );
}
await rm(dir, { recursive: true, force: true });

/**
 * The guard's contact time against the emulated robot's, through the server (issue 45):
 * `npx tsx bench/guard-contact.ts [seed] [calibration.json | none] [rounds]`.
 * The bus emulator runs in this process at real time with servos drawn with `seed` (src/calibration/truth.ts); the
 * server (dist/main.js, `--backend=real --shadow --guard`, with `--calibration` unless `none`) in its own. Each goto
 * into the table is asked first as is (the guard's 409 says when the tip meets the table) and then with ?force=true;
 * the emulator's physics says at which step the tip first presses the table. The move's start on the robot's clock
 * comes from when each goal count of the motor that travels furthest arrives, less the plan's time of that count.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { drawTrueParams } from '../src/calibration/truth.ts';
import { saveCalibration } from '../src/config/calibration.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { degToPosition, modelSpec } from '../src/dynamixel/registers.ts';
import { startEmulator } from '../src/emulator/emulator.ts';
import { Motor } from '../src/robot/motor.ts';
import { gotoPath } from '../src/robot/trajectory.ts';
import { newPressingContact, pairKey } from '../src/sim/contacts.ts';
import { ERGO_JR_INTO_TABLE } from '../test/shadow/held.ts';
import { startServer } from './bus-cost.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const FIXTURE = path.join(ROOT, 'test/shadow/fixtures/ergo-jr-seed-2.calibration.json');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TICK = 0.02;
const NAMES = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];

const [seedArg = '2', calArg = FIXTURE, roundsArg = '1'] = process.argv.slice(2);
const config = await loadRobotConfig('ergo-jr');
const motors = config.motors.map((m) => new Motor(m, modelSpec(m.model)));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'guard-contact-'));
const truthFile = path.join(tmp, 'truth.json');
await saveCalibration(truthFile, drawTrueParams(config, Number(seedArg)));
const emulator = await startEmulator({ robot: 'ergo-jr', servoParams: truthFile });
const sim = emulator.sim;

const server = await startServer([
  '--backend=real',
  '--robot=ergo-jr',
  `--serial=${emulator.path}`,
  '--shadow',
  '--guard',
  ...(calArg === 'none' ? [] : [`--calibration=${path.resolve(calArg)}`]),
]);
const { url } = server;

async function call(method: string, p: string, body?: unknown) {
  const res = await fetch(url + p, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const rows: string[] = [];
try {
  for (const m of NAMES) await call('POST', `/motors/${m}/registers/compliant/value.json`, false);
  for (let round = 0; round < Number(roundsArg); round++)
    for (const [name, to, duration] of ERGO_JR_INTO_TABLE) {
      const upright = { motors: NAMES, positions: NAMES.map(() => 0), duration: 1, wait: true };
      await call('POST', '/motors/goto.json?force=true', upright);
      await sleep(Number(process.env.BENCH_GUARD_SETTLE_MS ?? 6000));
      const body = { motors: NAMES, positions: to, duration, wait: false };
      const refused = await call('POST', '/motors/goto.json', body);
      const predicted = Number(/at ([\d.]+) s,/.exec(String(refused.body.details))?.[1]);
      // Where the server moves from: the motors' present positions (user degrees).
      const present = (await call('GET', '/motors/registers/present_position/list.json')).body
        .present_position as Record<string, number>;
      const from = new Map(motors.map((m) => [m, present[m.name]!]));
      const plan = gotoPath(new Map(motors.map((m, k) => [m, to[k]!])), duration);
      // The motor that travels furthest: its goal count changes at most ticks.
      const mover = motors.reduce((a, b, k) =>
        Math.abs(to[k]! - from.get(b)!) > Math.abs(to[motors.indexOf(a)]! - from.get(a)!) ? b : a,
      );
      const planCounts = Array.from({ length: Math.round(duration / TICK) + 1 }, (_, k) =>
        degToPosition(mover.spec, mover.toRaw(plan.goalsAt(k * TICK, from).get(mover)!)),
      );
      // Each change of the mover's goal count on the robot, and when: the plan's tick that first has that count gives
      // the move's start on the robot's clock (the median over the changes: the bus cycle's phase is steady).
      const starts: number[] = [];
      let contactAt: number | undefined;
      let links = '';
      let before: Set<string> | undefined;
      let last = (await sim.bus.read([mover.id], 'goal_position')).get(mover.id) as number;
      const off = sim.simulation.onStep((t) => {
        before ??= new Set(sim.simulation.contacts().map((c) => pairKey(c.a, c.b)));
        if (contactAt !== undefined || !starts.length) return;
        const hit = newPressingContact(sim.simulation.contacts(), before);
        if (hit) [contactAt, links] = [t, `${hit.a}/${hit.b}`];
      });
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          const count = (await sim.bus.read([mover.id], 'goal_position')).get(mover.id) as number;
          if (count !== last) {
            const k = planCounts.indexOf(count);
            if (k > 0) starts.push(sim.clock.now() - k * TICK);
            last = count;
          }
          await sleep(0);
        }
      })();
      const forced = await call('POST', '/motors/goto.json?force=true', body);
      const t0 = sim.clock.now();
      while (contactAt === undefined && sim.clock.now() < t0 + duration + 1) await sleep(5);
      watching = false;
      await watcher;
      off();
      starts.sort((a, b) => a - b);
      const changedAt = starts[Math.floor(starts.length / 2)];
      const real = contactAt === undefined || changedAt === undefined ? NaN : contactAt - changedAt;
      rows.push(
        `| ${name} | ${refused.status} | ${predicted.toFixed(3)} | ${forced.status} | ${real.toFixed(3)} | ${links} | ${((predicted - real) * 1000).toFixed(0)} |`,
      );
      console.log(rows[rows.length - 1]);
    }
} finally {
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
  await emulator.close();
  rmSync(tmp, { recursive: true, force: true });
}
console.log(
  `\nseed ${seedArg}, calibration ${calArg === 'none' ? 'none (datasheets)' : path.relative(ROOT, calArg)}\n` +
    '| move | as is | guard: contact at (s) | forced | robot: contact at (s) | links | predicted - real (ms) |\n' +
    '| --- | --- | --- | --- | --- | --- | --- |\n' +
    rows.join('\n'),
);

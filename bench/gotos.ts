/**
 * How close a goto with wait ends to its target on the twin, per robot: `npm run bench -- gotos` (or `npx tsx
 * bench/gotos.ts`). Deterministic (the twin's clock moves only as the script says). Every motor stiff at pypot's
 * start-up gains; from a standing pose, each listed motor in turn goes through the same targets, one goto with wait
 * after the other; the error is read at the answer, then 1 s and 3 s later, while the I term grinds.
 */
import { pathToFileURL } from 'node:url';
import { openTwin } from '../src/scenario/twin.ts';
import { median } from './server.ts';

/**
 * Per robot, motors that turn these targets from the standing pose without meeting the table or the body (the Ergo
 * Jr's m2 and m3 swing the whole arm and meet the table; the Torso's elbows and shoulders reach its table or chest):
 * joints gravity does not turn (Ergo m1, m4; Torso head_z, abs_z, l_arm_z) and joints it does (Ergo m5, m6; Torso
 * l_shoulder_y, hanging).
 */
const MOTORS: Readonly<Record<string, readonly string[]>> = {
  'ergo-jr': ['m1', 'm4', 'm5', 'm6'],
  torso: ['head_z', 'abs_z', 'l_arm_z', 'l_shoulder_y'],
};
const TARGETS = [15, -30, 45, -60, 0, 25];
const DURATIONS = [0.5, 1, 2];
/** Sim seconds between answer checks; the goto's own wait is answered within one. */
const POLL = 0.02;

export interface GotoErrors {
  readonly robot: string;
  readonly duration: number;
  /** |present - target| in degrees, over every motor and target: median and max, at the answer, +1 s and +3 s. */
  readonly atAnswer: readonly [number, number];
  readonly after1s: readonly [number, number];
  readonly after3s: readonly [number, number];
  /**
   * Gotos counted: those whose peak speed (1.875 x distance / duration) is beyond the servo's no-load speed are left
   * out, and so are those that end touching something (`touching`).
   */
  readonly counted: number;
  readonly touching: number;
}

function medianAndMax(xs: readonly number[]): [number, number] {
  return [median(xs), Math.max(...xs)];
}

export async function runGotoBench(robot: string, noLoadDegS: number): Promise<GotoErrors[]> {
  const out: GotoErrors[] = [];
  for (const duration of DURATIONS) {
    const twin = await openTwin(robot);
    try {
      const standing = Object.fromEntries(twin.robot.motors.map((m) => [m.name, 0]));
      await twin.post('/sim/motors/compliant.json', { compliant: false });
      await twin.post('/sim/pose.json', { positions: standing });
      await twin.advance(2);
      const at: number[][] = [[], [], []];
      let touching = 0;
      for (const motor of MOTORS[robot]!) {
        let from = 0;
        for (const target of TARGETS) {
          const res = await twin.untilAnswered(
            twin.post(`/motors/${motor}/goto.json`, { position: target, duration, wait: true }),
            30,
            POLL,
          );
          if (res.statusCode !== 200)
            throw new Error(`${robot} ${motor} goto: ${res.statusCode} ${res.body}`);
          // The target as the angle limits clamp it.
          const goal = (res.json() as { motors: Record<string, number> }).motors[motor]!;
          const contact = twin.simulation!.contacts().length > 0;
          const read = async () =>
            (
              (await twin.get(`/motors/${motor}/registers/present_position/value.json`)).json() as {
                present_position: number;
              }
            ).present_position;
          const errors = [Math.abs((await read()) - goal)];
          await twin.advance(1);
          errors.push(Math.abs((await read()) - goal));
          await twin.advance(2);
          errors.push(Math.abs((await read()) - goal));
          if (contact) touching++;
          else if ((1.875 * Math.abs(goal - from)) / duration <= noLoadDegS)
            errors.forEach((e, k) => at[k]!.push(e));
          from = goal;
        }
      }
      out.push({
        robot,
        duration,
        atAnswer: medianAndMax(at[0]!),
        after1s: medianAndMax(at[1]!),
        after3s: medianAndMax(at[2]!),
        counted: at[0]!.length,
        touching,
      });
    } finally {
      await twin.close();
    }
  }
  return out;
}

export async function runGotosBench(): Promise<void> {
  console.log(
    '\n== Goto with wait: |present - target| (deg), median / max over motors and targets (bench/gotos.ts) ==',
  );
  // No-load speeds of the servo models (npm run bench -- fidelity): the XL-320 343 deg/s, the MX-28 330.
  for (const [robot, noLoad] of [
    ['ergo-jr', 343],
    ['torso', 330],
  ] as const) {
    console.log(`\n${robot}: ${MOTORS[robot]!.join(', ')}; targets ${TARGETS.join(', ')} degrees in turn`);
    console.log(
      `      ${'duration'.padEnd(9)} ${'gotos'.padStart(5)}  ${'at the answer'.padStart(14)}  ${'1 s later'.padStart(12)}  ${'3 s later'.padStart(12)}  ${'left out: touching'.padStart(18)}`,
    );
    for (const r of await runGotoBench(robot, noLoad)) {
      const f = ([m, x]: readonly [number, number]) => `${m.toFixed(2)} / ${x.toFixed(2)}`;
      console.log(
        `      ${`${r.duration} s`.padEnd(9)} ${String(r.counted).padStart(5)}  ${f(r.atAnswer).padStart(14)}  ${f(r.after1s).padStart(12)}  ${f(r.after3s).padStart(12)}  ${String(r.touching).padStart(18)}`,
      );
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runGotosBench();

/**
 * The guard's prediction time (issue 29): a 2 s Ergo Jr move predicted from a stiff robot's pose in the scratch world,
 * the whole move (no contact ends it early), median and p99 over the runs. Target: at most 100 ms.
 * Run: npm run bench -- guard (or npx tsx bench/guard.ts)
 */
import { pathToFileURL } from 'node:url';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { degToPosition, gainsToRawPid } from '../src/dynamixel/registers.ts';
import { Motor } from '../src/robot/motor.ts';
import { gotoPath } from '../src/robot/trajectory.ts';
import { MoveGuard } from '../src/shadow/guard.ts';
import { SimBackend } from '../src/sim/backend.ts';
import { loadUrdf } from '../src/urdf/parse.ts';
import { modelSpec } from '../src/dynamixel/registers.ts';

export interface GuardBenchResult {
  readonly runs: number;
  readonly contacts: number;
  readonly timeMs: { readonly median: number; readonly p99: number; readonly max: number };
  /** The process's CPU time per prediction (what an unloaded machine's wall time would be, about). */
  readonly cpuMs: { readonly median: number; readonly p99: number; readonly max: number };
}

export async function runGuardBench(runs = 60): Promise<GuardBenchResult> {
  const config = await loadRobotConfig('ergo-jr');
  const urdf = await loadUrdf(config.urdfPath);
  const motors = config.motors.map((m) => new Motor(m, modelSpec(m.model)));
  // The robot whose state the prediction starts from: stiff in its start pose, the start-up gains.
  const robot = new SimBackend({ config, urdf, speed: 'manual' });
  await robot.open();
  const ids = motors.map((m) => m.id);
  await robot.bus.write('pid', new Map(ids.map((id) => [id, gainsToRawPid(config.startup.pid!)])));
  await robot.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
  const pose = new Map(robot.jointAngles());
  const rawPose = new Map(motors.map((m) => [m.id, ((pose.get(m.name) ?? 0) * 180) / Math.PI]));
  await robot.bus.write(
    'goal_position',
    new Map(motors.map((m) => [m.id, degToPosition(m.spec, rawPose.get(m.id)!)])),
  );
  const guard = new MoveGuard({
    config,
    urdf,
    motors,
    rate: 50,
    log: () => {},
    state: { registers: robot.bus, pose: () => rawPose },
  });
  await guard.open();
  // Everyday moves of the whole arm, each 2 s: the start pose's neighbourhood, alternately.
  const moves = [
    [30, -60, 20, 20, 40, 0],
    [-30, -70, 40, -20, 60, -10],
    [0, -90, 35, 0, 55, -5],
  ];
  const times: number[] = [];
  const cpus: number[] = [];
  let contacts = 0;
  for (let i = 0; i < runs + 3; i++) {
    const to = moves[i % moves.length]!;
    const p = await guard.predict(gotoPath(new Map(motors.map((m, k) => [m, to[k]!])), 2));
    if (i >= 3) {
      // the first ones warm the JIT up
      times.push(p.wallMs);
      cpus.push(p.cpuMs);
    }
    if (p.contact) contacts++;
  }
  await guard.close();
  await robot.close();
  const stats = (xs: number[]) => {
    xs.sort((a, b) => a - b);
    const q = (f: number) => xs[Math.min(xs.length - 1, Math.ceil(f * xs.length) - 1)]!;
    return { median: q(0.5), p99: q(0.99), max: xs[xs.length - 1]! };
  };
  return { runs, contacts, timeMs: stats(times), cpuMs: stats(cpus) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await runGuardBench(Number(process.env.GUARD_RUNS ?? 60));
  console.log(
    `guard: 2 s Ergo Jr move predicted ${r.runs} times (${r.contacts} with a contact): median ${r.timeMs.median.toFixed(1)} ms, p99 ${r.timeMs.p99.toFixed(1)} ms, max ${r.timeMs.max.toFixed(1)} ms (target <= 100 ms); CPU median ${r.cpuMs.median.toFixed(1)} ms, p99 ${r.cpuMs.p99.toFixed(1)} ms`,
  );
}

/**
 * The held-out check (issue 45): moves never used in a fit, played on a robot whose servos are drawn
 * (src/calibration/truth.ts), then replayed on the twin with the models' defaults, with a calibration file, and with
 * the true parameters (the ceiling any calibration can reach), and with them but the offsets; the RMS of real (encoder, quantised) against twin per
 * motor. The moves: a recorded move (multi-joint minimum-jerk gotos through five poses) and a primitive (the sinus
 * example's law on m1, m2 and m3 at three frequencies). Usage: npx tsx bench/held-out.ts [seed] [calibration.json]
 */
import { type CycleLogData, replayAll } from '../src/calibration/from-log.ts';
import { drawTrueParams } from '../src/calibration/truth.ts';
import { loadCalibration, servoParamsOf } from '../src/config/calibration.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { degToPosition, modelSpec, positionToDeg } from '../src/dynamixel/registers.ts';
import { runGains } from '../src/calibration/run.ts';
import { SimBackend } from '../src/sim/backend.ts';
import { loadUrdf } from '../src/urdf/parse.ts';

const [seedArg = '1', file] = process.argv.slice(2);
const config = await loadRobotConfig('ergo-jr');
const urdf = await loadUrdf(config.urdfPath);
const truth = drawTrueParams(config, Number(seedArg));
const CYCLE = 0.02;

/** Raw-degree goals by motor name at time t (s). */
type Play = (t: number) => Record<string, number>;
const poses: Record<string, number>[] = [
  { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
  { m1: 30, m2: -20, m3: 25, m4: 40, m5: -20, m6: 10 },
  { m1: -25, m2: 15, m3: -20, m4: -30, m5: 25, m6: -15 },
  { m1: 10, m2: -35, m3: 35, m4: 10, m5: -35, m6: 20 },
  { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
];
const minJerk = (s: number) => s * s * s * (10 - 15 * s + 6 * s * s);
const recordedMove: Play = (t) => {
  const leg = Math.min(poses.length - 2, Math.floor(t / 2));
  const s = minJerk(Math.min(1, (t - 2 * leg) / 1.5));
  return Object.fromEntries(
    Object.keys(poses[0]!).map((m) => [m, poses[leg]![m]! + s * (poses[leg + 1]![m]! - poses[leg]![m]!)]),
  );
};
const sinus: Play = (t) => ({
  m1: 25 * Math.sin(2 * Math.PI * 0.4 * t),
  m2: -10 + 20 * Math.sin(2 * Math.PI * 0.7 * t),
  m3: 20 * Math.sin(2 * Math.PI * 1.1 * t),
  m4: 0,
  m5: 0,
  m6: 0,
});

/** The move played on the drawn robot, logged as shadow mode logs it (a cycle's command, then its reading). */
async function play(move: Play, seconds: number): Promise<CycleLogData> {
  const real = new SimBackend({ config, urdf, speed: 'manual', servoParams: servoParamsOf(truth) });
  await real.open();
  try {
    const ids = config.motors.map((m) => m.id);
    const start = move(0);
    real.simulation.setPose(new Map(config.motors.map((m) => [m.id, start[m.name]!])));
    await runGains(real.bus, config);
    await real.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
    const log: CycleLogData = { t: [], motors: Object.fromEntries(config.motors.map((m) => [m.name, []])) };
    for (let k = 0; k * CYCLE < seconds; k++) {
      const goals = move(k * CYCLE);
      const counts = new Map(
        config.motors.map((m) => [m.id, degToPosition(modelSpec(m.model), goals[m.name]!)]),
      );
      await real.bus.write('goal_position', counts);
      const read = await real.bus.read(ids, 'present_position');
      log.t.push(k * CYCLE);
      for (const m of config.motors) {
        const spec = modelSpec(m.model);
        log.motors[m.name]!.push({
          position: positionToDeg(spec, read.get(m.id) as number),
          goal: positionToDeg(spec, counts.get(m.id)!),
          torque: true,
          limit: 1023,
        });
      }
      await real.advance(CYCLE);
    }
    return log;
  } finally {
    await real.close();
  }
}

const rms = (log: CycleLogData, twin: Map<string, Float64Array>, name: string) => {
  const real = log.motors[name]!;
  let s = 0;
  for (let k = 0; k < real.length; k++) s += (real[k]!.position! - twin.get(name)![k]!) ** 2;
  return Math.sqrt(s / real.length);
};
const twins: [string, ReturnType<typeof servoParamsOf> | undefined][] = [
  ['defaults', undefined],
  ...(file
    ? [
        [file, servoParamsOf(await loadCalibration(file, config))] as [
          string,
          ReturnType<typeof servoParamsOf>,
        ],
      ]
    : []),
  ['truth', servoParamsOf(truth)],
  // The truth with every offset at 0: what a calibration that gets all but the offsets right reaches.
  ['truth, offsets 0', new Map([...servoParamsOf(truth)].map(([id, p]) => [id, { ...p, offsetDeg: 0 }]))],
];
for (const [name, move, seconds] of [
  ['recorded move', recordedMove, 8],
  ['sinus primitive', sinus, 8],
] as const) {
  const log = await play(move, seconds);
  for (const [label, params] of twins) {
    const twin = await replayAll(config, urdf, log, params);
    const per = config.motors.map((m) => rms(log, twin, m.name));
    const all = Math.sqrt(per.reduce((s, v) => s + v * v, 0) / per.length);
    console.log(
      `${name} | twin ${label} | RMS ${all.toFixed(2)} deg | ` +
        config.motors.map((m, i) => `${m.name} ${per[i]!.toFixed(2)}`).join(' '),
    );
  }
}

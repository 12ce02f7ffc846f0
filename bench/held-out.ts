/**
 * The held-out check (issue 45): moves never used in a fit, played on a robot whose servos are drawn
 * (src/calibration/truth.ts), then replayed on the twin with the models' defaults, with a calibration file, and with
 * the true parameters (the ceiling any calibration can reach), and with them but the offsets; the RMS of real (encoder,
 * quantised) against twin per motor. The moves, per robot: a recorded move (multi-joint minimum-jerk gotos through five
 * poses) and a primitive's law (the Ergo Jr: the sinus example on m1, m2 and m3 at three frequencies; the Torso:
 * pypot's dance_beat_motion at amplitude 30). Usage: npx tsx bench/held-out.ts [ergo-jr|torso] [seed] [calibration.json]
 */
import { type CycleLogData, replayAll } from '../src/calibration/from-log.ts';
import { runGains } from '../src/calibration/run.ts';
import { drawTrueParams } from '../src/calibration/truth.ts';
import { loadCalibration, servoParamsOf } from '../src/config/calibration.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { userToRaw } from '../src/core/frames.ts';
import { degToPosition, modelSpec, positionToDeg } from '../src/dynamixel/registers.ts';
import { sin } from '../src/primitives/builtins/common.ts';
import { danceBeatGoals } from '../src/primitives/builtins/poppy.ts';
import { SimBackend } from '../src/sim/backend.ts';
import { loadUrdf } from '../src/urdf/parse.ts';

const args = process.argv.slice(2);
const robot = args[0] === 'torso' || args[0] === 'ergo-jr' ? args.shift()! : 'ergo-jr';
const [seedArg = '1', file] = args;
const config = await loadRobotConfig(robot);
const urdf = await loadUrdf(config.urdfPath);
const truth = drawTrueParams(config, Number(seedArg));
const CYCLE = 0.02;

/** Raw-degree goals by motor name at time t (s). */
type Play = (t: number) => Record<string, number>;
const minJerk = (s: number) => s * s * s * (10 - 15 * s + 6 * s * s);
/** Minimum-jerk gotos through `poses` (raw degrees), 1.5 s each, a new one every 2 s. */
const through =
  (poses: Record<string, number>[]): Play =>
  (t) => {
    const leg = Math.min(poses.length - 2, Math.floor(t / 2));
    const s = minJerk(Math.min(1, (t - 2 * leg) / 1.5));
    return Object.fromEntries(
      Object.keys(poses[0]!).map((m) => [m, poses[leg]![m]! + s * (poses[leg + 1]![m]! - poses[leg]![m]!)]),
    );
  };
/** User degrees (missing motors at 0) to raw degrees by motor name. */
const raw = (user: Record<string, number>): Record<string, number> =>
  Object.fromEntries(config.motors.map((m) => [m.name, userToRaw(m, user[m.name] ?? 0)]));
const ERGO_JR_POSES = [
  { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
  { m1: 30, m2: -20, m3: 25, m4: 40, m5: -20, m6: 10 },
  { m1: -25, m2: 15, m3: -20, m4: -30, m5: 25, m6: -15 },
  { m1: 10, m2: -35, m3: 35, m4: 10, m5: -35, m6: 20 },
  { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
];
/** User degrees: the calibration pose's arms out, then the arms forward, crossed heights, the bust turning. */
const TORSO_REST = { l_shoulder_x: 20, r_shoulder_x: -20 };
const TORSO_POSES = (
  [
    TORSO_REST,
    {
      abs_z: 20,
      bust_x: 5,
      head_z: 25,
      head_y: 10,
      l_shoulder_y: -40,
      l_shoulder_x: 30,
      l_arm_z: 20,
      l_elbow_y: 20,
      r_shoulder_y: -20,
      r_shoulder_x: -30,
      r_arm_z: -20,
      r_elbow_y: 10,
    },
    {
      abs_z: -15,
      bust_y: 8,
      bust_x: -5,
      head_z: -20,
      head_y: -10,
      l_shoulder_y: -15,
      l_shoulder_x: 25,
      l_arm_z: -15,
      l_elbow_y: -20,
      r_shoulder_y: -45,
      r_shoulder_x: -25,
      r_arm_z: 15,
      r_elbow_y: -25,
    },
    {
      abs_z: 5,
      bust_y: -5,
      head_z: 10,
      l_shoulder_y: -50,
      l_shoulder_x: 35,
      l_elbow_y: 30,
      r_shoulder_y: -10,
      r_shoulder_x: -35,
      r_elbow_y: 25,
    },
    TORSO_REST,
  ] as Record<string, number>[]
).map(raw);
/** pypot's dance_beat_motion (src/primitives/builtins/poppy.ts) at amplitude 30 and 50 bpm, the arms held out. */
const torsoDance: Play = (t) => raw({ ...TORSO_REST, ...danceBeatGoals(t, 30, 50 / 60) });
const ergoJrSinus: Play = (t) => ({
  m1: sin(25, 0.4, t),
  m2: sin(20, 0.7, t, -10),
  m3: sin(20, 1.1, t),
  m4: 0,
  m5: 0,
  m6: 0,
});
const MOVES: Record<string, readonly [string, Play, number][]> = {
  'ergo-jr': [
    ['recorded move', through(ERGO_JR_POSES), 8],
    ['sinus primitive', ergoJrSinus, 8],
  ],
  torso: [
    ['recorded move', through(TORSO_POSES), 8],
    ['dance primitive', torsoDance, 8],
  ],
};

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
for (const [name, move, seconds] of MOVES[robot]!) {
  const log = await play(move, seconds);
  for (const [label, params] of twins) {
    const twin = await replayAll(config, urdf, log, params);
    const per = config.motors.map((m) => rms(log, twin, m.name));
    const all = Math.sqrt(per.reduce((s, v) => s + v * v, 0) / per.length);
    console.log(
      `${name} | twin ${label} | RMS ${all.toFixed(3)} deg | ` +
        config.motors.map((m, i) => `${m.name} ${per[i]!.toFixed(2)}`).join(' '),
    );
  }
}

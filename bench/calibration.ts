/**
 * Calibration on the emulator: servos with seeded random true parameters (src/calibration/truth.ts), one run per
 * motor on the emulated bus at the manual clock, each run replayed at the true figures (the floor of its fit's
 * residual), the fit, and the recovered-vs-true table (bench/README.md).
 * Usage: npx tsx bench/calibration.ts [robot] [seed] [motors,comma,separated|all|none] [out.json]
 * With out.json, the fitted calibration is written there (bench/held-out.ts loads it). The table's touches run after
 * the motors' runs and set the offsets (BENCH_CAL_TOUCH=0: without them). BENCH_CAL_PASSES=<n>: the fit's passes (3).
 */
import { performance } from 'node:perf_hooks';
import { clearExcitation, unsteadyChirpLine } from '../src/calibration/clearance.ts';
import { defaultCalibration } from '../src/calibration/defaults.ts';
import { fitRobot } from '../src/calibration/fit-robot.ts';
import { replayRms } from '../src/calibration/forward.ts';
import { runMotor } from '../src/calibration/run.ts';
import { fitTouches, touchFitLine } from '../src/calibration/touch-fit.ts';
import { runTouches } from '../src/calibration/touch.ts';
import { drawTrueParams } from '../src/calibration/truth.ts';
import { saveCalibration, servoParamsOf } from '../src/config/calibration.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { emulateBus } from '../src/emulator/emulator.ts';
import { loadUrdf } from '../src/urdf/parse.ts';

const [robot = 'ergo-jr', seedArg = '1', list, out] = process.argv.slice(2);
const config = await loadRobotConfig(robot);
const urdf = await loadUrdf(config.urdfPath);
const truth = drawTrueParams(config, Number(seedArg));
const emulated = await emulateBus({ robot, speed: 'manual', servoParams: truth });
const rig = {
  bus: emulated.sim.bus,
  now: () => emulated.sim.clock.now(),
  wait: (s: number) => emulated.sim.advance(s),
};
// 'none': the table's touches alone, no motor run or fit.
const motors =
  list === 'none' ? [] : list && list !== 'all' ? list.split(',') : config.motors.map((m) => m.name);
const fitted = defaultCalibration(config, '(emulator)', new Date().toISOString());
const rel = (a: number, b: number) => `${((100 * (a - b)) / b).toFixed(1)} %`;
const pct = (x: { value: number; sigma: number }) => `${((100 * x.sigma) / x.value).toFixed(0)} %`;
try {
  const logs = [];
  const robotSeconds = new Map<string, string>();
  for (const name of motors) {
    const plan = await clearExcitation(config, urdf, name);
    if (!plan.excitation) {
      console.log(`${name} | skipped: every swing touches (${JSON.stringify(plan.refused)})`);
      continue;
    }
    for (const u of plan.unsteady) console.log(unsteadyChirpLine(name, u));
    const t0 = performance.now();
    logs.push(await runMotor(rig, config, name, undefined, plan.excitation));
    robotSeconds.set(
      name,
      `+-${plan.amplitudeDeg} deg (chirp +-${plan.chirpAmplitudeDeg}), robot ${logs[logs.length - 1]!.t.length * 0.02} s, run ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
  // The floor of each fit's residual: the twin with every true figure replaying the run.
  const trueParams = servoParamsOf(truth);
  for (const log of logs) {
    const floor = await replayRms(config, urdf, log, trueParams);
    console.log(`${log.motor} | the true figures replay its run within ${floor.toFixed(4)} deg RMS`);
  }
  const tTouch = emulated.sim.clock.now();
  const touchLogs =
    process.env.BENCH_CAL_TOUCH === '0' ? [] : await runTouches(rig, config, urdf, console.log);
  const touchRobotS = emulated.sim.clock.now() - tTouch;
  let t1 = performance.now();
  const touched = touchLogs.length ? await fitTouches(config, urdf, touchLogs) : undefined;
  if (touched) {
    console.log(
      `touches: robot ${touchRobotS.toFixed(1)} s, fit ${((performance.now() - t1) / 1000).toFixed(1)} s; ${touchFitLine(touched)}`,
    );
    for (const [n, o] of touched.offsets)
      console.log(
        `  ${n}: ${o.value.toFixed(2)} +- ${o.sigma.toFixed(2)} (true ${truth.motors[n]!.offset.value.toFixed(2)}, off by ${(o.value - truth.motors[n]!.offset.value).toFixed(2)})`,
      );
    t1 = performance.now();
  }
  await fitRobot(config, urdf, logs, fitted, {
    touched: touched?.offsets,
    passes: Number(process.env.BENCH_CAL_PASSES ?? 2),
    onFitted: (name, { calibration: c, evaluations, estimates: e }, pass) => {
      const t2 = performance.now();
      const tr = truth.motors[name]!;
      console.log(
        [
          `${name} pass ${pass}`,
          `${robotSeconds.get(name)}, fit ${((t2 - t1) / 1000).toFixed(1)} s (${evaluations} sims)`,
          `offset ${c.offset.value.toFixed(2)} vs ${tr.offset.value.toFixed(2)} (found ${e.offset.value.toFixed(2)} +- ${e.offset.sigma})`,
          `gain ${rel(e.gain.value, tr.gain.value)} (+- ${pct(e.gain)})`,
          `armature ${rel(e.armature.value, tr.armature.value)} (+- ${pct(e.armature)})`,
          `kv ${rel(e.kv.value, tr.friction.kv!.value)} (+- ${pct(e.kv)})`,
          `kcs ${rel(e.kcs.value, tr.friction.kcs!.value)} (+- ${pct(e.kcs)})`,
          `rms ${c.residualRmsDeg} deg`,
          `not identifiable: ${c.notIdentifiable.join(' ')}`,
          ...(c.note ? [c.note] : []),
        ].join(' | '),
      );
      t1 = t2;
    },
  });
  if (out) await saveCalibration(out, fitted);
} finally {
  await emulated.close();
}

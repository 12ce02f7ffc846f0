/**
 * `npm run calibrate -- --robot=<r> --serial=<dev> [--motors=<list>] [--out=<file>]`: an identification run on the
 * real robot (or the emulator), one joint at a time, then the fit of each motor, written atomically to a
 * calibration file (docs/calibration.md). Ctrl-C stops the run: the servos are left as --on-close says and nothing
 * is written. `--from-log=<file>` fits from shadow mode's cycle log instead, with no robot (from-log.ts).
 */
import { pathToFileURL } from 'node:url';
import { Command, Option } from 'commander';
import { type Calibration, SIM_RUN_REFUSAL, saveCalibration } from '../config/calibration.ts';
import { type RobotConfig, loadRobotConfig } from '../config/robot-config.ts';
import { isAbortError } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import { RealBackend } from '../real/backend.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { clearExcitation, refusedSwingLine, skippedSwingLine, unsteadyChirpLine } from './clearance.ts';
import { defaultCalibration } from './defaults.ts';
import { fitRobot } from './fit-robot.ts';
import { fitLine } from './fit.ts';
import { fitFromLog, readCycleLog } from './from-log.ts';
import { cycleRig } from './real-rig.ts';
import { type MotorLog, runMotor } from './run.ts';
import { fitTouches, touchFitLine } from './touch-fit.ts';
import { runTouches } from './touch.ts';

export const SIM_REFUSAL =
  `error: --backend=sim: ${SIM_RUN_REFUSAL.error}; ` +
  `tip: run it with --backend=real --serial=<device>, or on the emulator: ${SIM_RUN_REFUSAL.emulator}`;

interface Flags {
  robot: string;
  serial?: string;
  backend: 'real' | 'sim';
  motors?: string;
  out: string;
  onClose: 'compliant' | 'hold';
  fromLog?: string;
  touch: boolean;
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command()
    .name('calibrate')
    .description("identifies each servo of a robot from its own runs and writes the twin's calibration file")
    .option('--robot <name|path>', 'ergo-jr, torso, humanoid, or a robot config path', 'ergo-jr')
    .option('--serial <device>', 'the serial port of the robot (or of the emulator)')
    .addOption(new Option('--backend <kind>', 'real only').choices(['real', 'sim']).default('real'))
    .option('--motors <list>', 'motor names, comma separated (default: all)')
    .option('--out <file>', 'the calibration file to write', 'calibration.json')
    .option('--from-log <file>', "fit from shadow mode's cycle log (--shadow-log) instead of a run")
    .option('--no-touch', "skip the table's touches (the offsets are then left to the approaches)")
    .addOption(
      new Option('--on-close <state>', 'servos when the run ends or is stopped')
        .choices(['compliant', 'hold'])
        .default('compliant'),
    )
    .configureOutput({ outputError: (str, write) => write(str.split('\n')[0] + '\n') })
    .exitOverride();
  try {
    program.parse(argv);
  } catch (err) {
    return (err as { exitCode?: number }).exitCode === 0 ? 0 : 2;
  }
  const flags = program.opts<Flags>();
  if (flags.backend === 'sim') {
    console.error(SIM_REFUSAL);
    return 2;
  }
  const config = await loadRobotConfig(flags.robot);
  const names = flags.motors
    ? flags.motors.split(',').map((s) => s.trim())
    : config.motors.map((m) => m.name);
  for (const n of names)
    if (!config.motors.some((m) => m.name === n))
      throw new ConfigError(
        '--motors',
        `unknown motor "${n}" (${config.name} has ${config.motors.map((m) => m.name).join(', ')})`,
      );
  if (flags.fromLog) return fitLog(flags.fromLog, config, names, flags.out);
  if (!flags.serial)
    throw new ConfigError('--serial', 'give the serial device of the robot (or of the emulator)');
  const urdf = await loadUrdf(config.urdfPath);
  const backend = new RealBackend({ config, serial: flags.serial, onClose: flags.onClose });
  const stopping = new AbortController();
  const stop = () => stopping.abort();
  const stopped = () => {
    console.error(`stopped: servos left ${flags.onClose}, nothing written to ${flags.out}`);
    return 130;
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    await backend.open();
    backend.start();
    const cal: Calibration = defaultCalibration(config, flags.serial, new Date().toISOString());
    const logs: MotorLog[] = [];
    for (const name of names) {
      const plan = await clearExcitation(config, urdf, name);
      for (const r of plan.refused) console.error(refusedSwingLine(name, r));
      if (!plan.excitation) {
        console.error(skippedSwingLine(name));
        continue;
      }
      for (const u of plan.unsteady) console.error(unsteadyChirpLine(name, u));
      // Paced by the bus loop's cycles and logged on them, as the server's run (real-rig.ts; the loop at 50 Hz).
      const id = config.motors.find((m) => m.name === name)!.id;
      const paced = cycleRig(backend, 50, id, stopping.signal)!;
      const log = await unlessStopped(
        runMotor(paced.rig, config, name, (line) => console.error(line), plan.excitation)
          .then((l) => paced.rebuild(l))
          .finally(() => paced.close()),
      );
      if (!log || stopping.signal.aborted) return stopped();
      logs.push(log);
    }
    const touchRig = cycleRig(backend, 50, config.motors[0]!.id, stopping.signal)!;
    const touches = await unlessStopped(
      (flags.touch
        ? runTouches(touchRig.rig, config, urdf, (line) => console.error(line))
        : Promise.resolve([])
      ).finally(() => touchRig.close()),
    );
    if (!touches || stopping.signal.aborted) return stopped();
    // The robot's part is done: its servos are left as --on-close says while the fit runs.
    await backend.close();
    const touched = touches.length ? await fitTouches(config, urdf, touches) : undefined;
    if (touched) console.error(touchFitLine(touched));
    await fitRobot(config, urdf, logs, cal, {
      touched: touched?.offsets,
      onFitted: (name, { calibration: c, evaluations }, pass) =>
        console.error(`${name} (fit, pass ${pass}): ${fitLine(c, evaluations)}`),
    });
    await saveCalibration(flags.out, cal);
    console.error(`wrote ${flags.out}`);
    return 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await backend.close();
  }
}

/** What a step on the robot gave, or undefined once Ctrl-C stopped it. */
function unlessStopped<T>(step: Promise<T>): Promise<T | undefined> {
  return step.catch((err: unknown) => {
    if (isAbortError(err)) return undefined;
    throw err;
  });
}

/** The fit of each motor from a cycle log; what the log could not identify is said, with why, and left. */
async function fitLog(file: string, config: RobotConfig, names: string[], out: string): Promise<number> {
  const log = await readCycleLog(file, config);
  const urdf = await loadUrdf(config.urdfPath);
  const cal: Calibration = defaultCalibration(config, config.bus.port, new Date().toISOString());
  console.error(`${file}: ${log.t.length} cycles, ${(log.t[log.t.length - 1]! - log.t[0]!).toFixed(1)} s`);
  for (const name of names) {
    const { calibration, evaluations, reasons } = await fitFromLog(config, urdf, log, name);
    cal.motors[name] = calibration;
    const residual =
      calibration.residualRmsDeg === null ? '' : `, residual ${calibration.residualRmsDeg} deg RMS`;
    console.error(`${name}: ${evaluations} simulations${residual}; not identifiable from this log:`);
    for (const [figure, why] of Object.entries(reasons)) console.error(`  ${figure}: ${why}`);
  }
  await saveCalibration(out, cal);
  console.error(`wrote ${out}`);
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  main(process.argv)
    .then((code) => process.exit(code))
    .catch((err: unknown) => {
      console.error(
        `error: ${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}`,
      );
      process.exit(err instanceof ConfigError ? 2 : 1);
    });

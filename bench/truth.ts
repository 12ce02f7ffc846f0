/**
 * The servos a bench run's emulator is given (`--servo-params`, BENCH_HELD_SERVOS, BENCH_SOAK_SERVOS): the figures
 * src/calibration/truth.ts draws for a robot and a seed, as bench/calibration.ts draws them, written as a calibration
 * file. Usage: npx tsx bench/truth.ts <robot> <seed> <out.json>
 */
import { drawTrueParams } from '../src/calibration/truth.ts';
import { saveCalibration } from '../src/config/calibration.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';

const [robot, seed, out] = process.argv.slice(2);
if (!robot || !seed || !out || !Number.isInteger(Number(seed))) {
  console.error('usage: npx tsx bench/truth.ts <robot> <seed> <out.json>');
  process.exit(2);
}
await saveCalibration(out, drawTrueParams(await loadRobotConfig(robot), Number(seed)));
console.log(`${out}: ${robot}'s servos drawn with seed ${seed}`);

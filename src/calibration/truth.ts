/** Seeded "true" servo parameters within the plausible ranges, for the emulator (tests and bench). */
import type { Calibration } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { mulberry32 } from '../core/prng.ts';
import { defaultCalibration } from './defaults.ts';

/** Friction x0.5-x2 (log-uniform), armature x0.7-x1.5, offset +-5 degrees, gain x0.8-x1.2. */
export function drawTrueParams(config: RobotConfig, seed: number): Calibration {
  const rnd = mulberry32(seed);
  const between = (lo: number, hi: number) => lo + (hi - lo) * rnd();
  const cal = defaultCalibration(config);
  for (const m of Object.values(cal.motors)) {
    const f = Math.exp(between(Math.log(0.5), Math.log(2)));
    m.offset = { value: between(-5, 5), sigma: null };
    m.friction = {
      kc: { value: m.friction.kc!.value * f, sigma: null },
      kv: { value: m.friction.kv!.value * f, sigma: null },
      kcs: { value: m.friction.kcs!.value * f, sigma: null },
    };
    m.armature = { value: m.armature.value * between(0.7, 1.5), sigma: null };
    m.gain = { value: m.gain.value * between(0.8, 1.2), sigma: null };
  }
  return cal;
}

/** The command line's value parsers: each throws commander's InvalidArgumentError saying what is expected. */
import { InvalidArgumentError } from 'commander';

export function parseSpeed(v: string): number | 'max' {
  if (v === 'max') return 'max';
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number or "max"');
  return n;
}

export function parseSeed(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
}

export function parsePositive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

export function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return n;
}

/** `--workers`: a count from 0 (0 and 1: the class in the main thread) or `auto` (one per core). */
export function parseWorkers(v: string): number | 'auto' {
  if (v === 'auto') return 'auto';
  const n = Number(v);
  if (!/^\s*\d+\s*$/.test(v) || n > 256)
    throw new InvalidArgumentError('must be "auto" or an integer from 0 to 256');
  return n;
}

export function parseSeconds(v: string): number {
  const n = Number(v);
  if (!/^\s*[0-9.]+\s*$/.test(v) || !Number.isFinite(n) || n <= 0 || n > 3600)
    throw new InvalidArgumentError('must be a number of seconds above 0, at most 3600');
  return n;
}

/** The twin's physics rates, Hz (src/shadow/physics-rate.ts TWIN_PHYSICS_HZ, which a test ties to these). */
export const SHADOW_PHYSICS_HZ = [500, 400, 250, 200] as const;

/** `--shadow-physics-hz`: `auto` (chosen from a step's cost at start) or one of SHADOW_PHYSICS_HZ. */
export function parseShadowPhysicsHz(v: string): number | 'auto' {
  if (v === 'auto') return 'auto';
  const n = Number(v);
  if (!(SHADOW_PHYSICS_HZ as readonly number[]).includes(n))
    throw new InvalidArgumentError(`must be "auto" or one of ${SHADOW_PHYSICS_HZ.join(', ')}`);
  return n;
}

/** `--shadow-thread`: where the shadow twin's physics runs (src/shadow/twin-engine-thread.ts chooseTwinThread). */
export const SHADOW_THREADS = ['auto', 'main', 'worker'] as const;
export type ShadowThreadFlag = (typeof SHADOW_THREADS)[number];

/** Help lines of the server's longer flags (kept here so main.ts stays short). */
export const HELP = {
  shadow:
    'real only: run the physics twin beside the robot, fed its commands, and report divergences (/shadow/)',
  shadowPhysicsHz:
    "with --shadow: the twin's physics rate, Hz: auto (default: 500, its step timed at start; in a thread of its " +
    'own, 2 solver substeps, or 400 Hz with 2 or 1, where 500 with 4 would not fit its core; said at start) or ' +
    '500, 400, 250, 200 ' +
    '(coarser keeps time on a slow machine, less faithful)',
  shadowThread:
    "with --shadow: where the twin's physics runs: auto (default: a worker thread of its own on a machine of 3 " +
    "cores or more, such as a Raspberry Pi's 4, else the server's thread), main, or worker",
  guard:
    'with --shadow: predict each goto in the twin first and refuse (409) one that hits the table or the robot',
  shadowLog:
    "with --shadow: each cycle's commands and readings to <file>, JSON lines (npm run calibrate -- --from-log=<file>)",
  calibration:
    "the twin's servos from a calibration file (sim backend, --shadow, --guard; docs/calibration.md); " +
    "default: the robot config's calibration",
};

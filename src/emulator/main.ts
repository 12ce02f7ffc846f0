/**
 * `npm run emulator -- --robot=ergo-jr [--baud=1000000] [--faults=drop=0.05,corrupt=0.05,missing=3,error=2:0x20,latency=2,nosync=4]`
 * Puts the robot's emulated servos on a pseudo-terminal and prints its path for `--backend=real --serial=<path>`.
 * With --console, lines on its standard input change the faults while it runs (`drop=0.1`, `missing=3`, `block=2@30`,
 * `weak=3:0.4`, `push=4:0.1`, `offset=5:8`, `<kind>=<id>:off`, `clear`, `status`), so a class can pull a servo off
 * the bus and put it back without restarting anything, and the sim's hand moves joints (`hand=4@30:1.5`). Opt-in: a
 * program started in the background of a shell is stopped by the terminal when it reads from it.
 */
import { pathToFileURL } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from '../core/errors.ts';
import { createInterface } from 'node:readline';
import { type EmulatedBus, type Faults, noFaults } from './bus.ts';
import type { HandTool } from '../sim/controls.ts';
import type { SimBackend } from '../sim/backend.ts';
import { type Scheduling, raiseScheduling } from '../core/priority.ts';
import { startEmulator } from './emulator.ts';

/**
 * Scheduling of the emulator process (and its socat relay, if any), where permitted: real-time FIFO 10 (below the bus
 * process's 20, so the host's loop still runs first), else nice -10.
 */
const EMULATOR_SCHEDULING: Scheduling = { realtime: 10, nice: -10 };

/** `drop=0.05,corrupt=0.05,missing=3+4,error=2:0x20,latency=2,nosync=1+2` -> faults. */
export function parseFaults(text: string): Partial<Faults> {
  const faults: Partial<Faults> = {};
  for (const part of text.split(',').filter(Boolean)) {
    const [key, value = ''] = part.split('=');
    const num = (v: string, lo: number, hi: number) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n < lo || n > hi)
        throw new InvalidArgumentError(`${key}=${v}: must be a number from ${lo} to ${hi}`);
      return n;
    };
    /** `<id>:<n>[+<id>:<n>...]` into `into` (a new map if none), n from 0 to `max`. */
    const idPairs = (v: string, into: Map<number, number> | undefined, max: number) => {
      const map = into ?? new Map<number, number>();
      for (const entry of v.split('+')) {
        const [id = '', n = ''] = entry.split(':');
        map.set(num(id, 0, 252), num(n, 0, max));
      }
      return map;
    };
    switch (key) {
      case 'drop':
        faults.dropRate = num(value, 0, 1);
        break;
      case 'corrupt':
        faults.corruptRate = num(value, 0, 1);
        break;
      case 'latency':
        faults.latencyMs = num(value, 0, 1000);
        break;
      case 'missing':
        faults.missing = new Set(value.split('+').map((v) => num(v, 0, 252)));
        break;
      case 'nosync':
        faults.nosync = new Set(value.split('+').map((v) => num(v, 0, 252)));
        break;
      case 'deaf':
        faults.deaf = idPairs(value, faults.deaf, 1000);
        break;
      case 'error':
        faults.errorBits = idPairs(value, faults.errorBits, 255);
        break;
      case 'block':
      case 'weak':
      case 'push':
      case 'offset': {
        const [sep, lo, hi, unit] = PHYSICAL[key];
        const map = new Map<number, number>(faults[key] ?? []);
        for (const entry of value.split('+')) {
          const at = entry.indexOf(sep);
          if (at < 0)
            throw new InvalidArgumentError(
              `${key}=${entry}: write ${key}=<id>${sep}<${unit}> or ${key}=<id>${sep}off`,
            );
          const id = num(entry.slice(0, at), 0, 252);
          const v = entry.slice(at + 1);
          map.set(id, v === 'off' ? NaN : num(v, lo, hi));
        }
        faults[key] = map;
        break;
      }
      default:
        throw new InvalidArgumentError(
          `unknown fault "${key}" (drop, corrupt, latency, missing, error, nosync, deaf, block, weak, push, offset)`,
        );
    }
  }
  return faults;
}

/** The physical faults: separator between id and value, the value's range and unit. */
const PHYSICAL = {
  block: ['@', -360, 360, 'deg'],
  weak: [':', 0, 1, 'factor'],
  push: [':', -20, 20, 'N.m'],
  offset: [':', -180, 180, 'deg'],
} as const;
const PHYSICAL_KEYS = Object.keys(PHYSICAL) as (keyof typeof PHYSICAL)[];

/**
 * Faults parsed from a list put in force: the line faults it names replace theirs; the physical ones change per id
 * (`off`, parsed as NaN, takes that id's fault away), the other ids keep theirs.
 */
export function applyFaults(into: Faults, parsed: Partial<Faults>): void {
  const { block, weak, push, offset, ...line } = parsed;
  Object.assign(into, line);
  const physical = { block, weak, push, offset };
  for (const key of PHYSICAL_KEYS) {
    const changes = physical[key];
    if (!changes) continue;
    const next = new Map(into[key]);
    for (const [id, v] of changes) {
      if (Number.isNaN(v)) next.delete(id);
      else next.set(id, v);
    }
    into[key] = next;
  }
}

/** What `status` prints: the faults in force and the bus's counters. */
export function describeFaults(bus: EmulatedBus): string {
  const f = bus.faults;
  const parts = [
    `drop=${f.dropRate}`,
    `corrupt=${f.corruptRate}`,
    `latency=${f.latencyMs}`,
    `missing=${[...f.missing].join('+') || 'none'}`,
    `error=${[...f.errorBits].map(([id, bits]) => `${id}:0x${bits.toString(16)}`).join('+') || 'none'}`,
    `nosync=${[...f.nosync].join('+') || 'none'}`,
    `deaf=${[...f.deaf].map(([id, n]) => `${id}:${n}`).join('+') || 'none'}`,
    ...PHYSICAL_KEYS.map(
      (key) => `${key}=${[...f[key]].map(([id, v]) => `${id}${PHYSICAL[key][0]}${v}`).join('+') || 'none'}`,
    ),
  ];
  const s = bus.stats;
  return `faults ${parts.join(',')}; ${s.instructions} instructions, ${s.replies} replies, ${s.dropped} dropped, ${s.corrupted} corrupted`;
}

/**
 * Applies one console line to the bus's faults: a fault list as --faults takes it (the faults it names change, the
 * others stay), `clear` (no faults), or `status`. Returns the line to print.
 */
export function applyFaultLine(bus: EmulatedBus, line: string): string {
  const text = line.trim();
  if (!text) return '';
  if (text === 'clear') {
    Object.assign(bus.faults, noFaults());
    return describeFaults(bus);
  }
  if (text === 'status') return describeFaults(bus);
  try {
    applyFaults(bus.faults, parseFaults(text));
    return describeFaults(bus);
  } catch (err) {
    return `error: ${(err as Error).message} (a fault list as --faults takes it, "clear" or "status")`;
  }
}

/**
 * A hand line: `hand=<id>@<deg>:<s>[+...]` drags each joint to a raw angle (degrees) over that many seconds, then lets
 * go (a person moving a limp arm); `hand=<id>@off`, `hand=off` let go. `ids`: the robot's motors (the config's ids).
 * Returns the line to print, or undefined for a line that is not one.
 */
export function applyHandLine(hand: HandTool, ids: ReadonlySet<number>, line: string): string | undefined {
  const text = line.trim();
  if (!text.startsWith('hand=')) return undefined;
  const value = text.slice('hand='.length);
  if (value === 'off') {
    hand.release();
    return 'hand off';
  }
  const moves: [number, number, number][] = [];
  const off: number[] = [];
  for (const entry of value.split('+')) {
    const m = /^(\d+)@(?:(off)|(-?[\d.]+):([\d.]+))$/.exec(entry);
    const [id, deg, s] = [Number(m?.[1]), Number(m?.[3]), Number(m?.[4])];
    if (!m || (!m[2] && (!Number.isFinite(deg) || Math.abs(deg) > 360 || !(s > 0) || s > 60)))
      return `error: hand=${entry}: write hand=<id>@<deg>:<seconds> (deg -360 to 360, 0 < seconds <= 60) or hand=<id>@off`;
    if (!ids.has(id)) return `error: hand=${entry}: no motor ${id} (${[...ids].join(', ')})`;
    if (m[2]) off.push(id);
    else moves.push([id, deg, s]);
  }
  hand.release(off);
  // Each drag resolves when the hand lets go (a later line may take the joint first).
  for (const [id, deg, s] of moves) hand.drag(id, deg, s).catch(() => {});
  return `hand ${value}`;
}

/** Reads fault and hand lines from standard input while the emulator runs (nothing happens if stdin is closed). */
function faultConsole(bus: EmulatedBus, sim: SimBackend): void {
  const ids = new Set(sim.models.keys());
  const lines = createInterface({ input: process.stdin, terminal: false });
  lines.on('line', (line) => {
    const out = applyHandLine(sim.simulation.hand, ids, line) ?? applyFaultLine(bus, line);
    if (out) console.error(out);
  });
  lines.on('error', () => {});
}

async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('emulator')
    .description("Dynamixel bus emulator: the twin's servos on a pseudo-terminal")
    .option('--robot <name|path>', 'ergo-jr, torso, humanoid, or a robot config path', 'ergo-jr')
    .option('--baud <n>', 'baud rate whose wire time is emulated (default: the robot config)', (v) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
      return n;
    })
    .option(
      '--faults <list>',
      'drop=<share>,corrupt=<share>,latency=<ms>,missing=<id>[+<id>],error=<id>:<bits>[+...],nosync=<id>[+<id>], ' +
        'deaf=<id>:<count>[+...] (the next instructions to that id missed), ' +
        'and of the ' +
        'physical world: block=<id>@<deg> (a stop), weak=<id>:<factor> (torque scaled), push=<id>:<N.m> ' +
        '(an external torque), offset=<id>:<deg> (the position reported shifted)',
      (v: string) => {
        const f = noFaults();
        applyFaults(f, parseFaults(v));
        return f;
      },
    )
    .option('--seed <n>', 'seed of the fault dice', (v) => Number(v), 1)
    .option(
      '--servo-params <file>',
      'servos that are not the twin: offset, friction, armature and gain from a calibration file (docs/calibration.md)',
    )
    .addOption(
      new Option('--wire <kind>', "who holds the pty's master: this process, or a socat relay")
        .choices(['native', 'socat'])
        .default('native'),
    )
    .option(
      '--console',
      'change the faults while it runs: lines on stdin such as drop=0.1, missing=3, block=2@30, weak=3:off, clear, status; and hand=4@30:1.5 (the sim moves a joint)',
    )
    .showHelpAfterError(false)
    .configureOutput({ outputError: (str, write) => write(str.split('\n')[0] + '\n') })
    .exitOverride();
  try {
    program.parse(argv);
  } catch (err) {
    process.exit((err as { exitCode?: number }).exitCode === 0 ? 0 : 2);
  }
  const opts = program.opts<{
    robot: string;
    baud?: number;
    faults?: Partial<Faults>;
    seed: number;
    wire: 'native' | 'socat';
    console?: boolean;
    servoParams?: string;
  }>();
  let emulator;
  try {
    // The servos' stand-in runs ahead of the host where permitted: real servos answer on their own microcontrollers,
    // whatever the host's load (the real backend's bus process asks for the same, see src/real/bus-process.ts).
    // Alternating real time and nice -10 on one emulator, Torso back to back: 326-348 against 320-326 cycles/s.
    raiseScheduling(process.pid, EMULATOR_SCHEDULING);
    emulator = await startEmulator({
      robot: opts.robot,
      baud: opts.baud,
      faults: opts.faults,
      seed: opts.seed,
      scheduling: EMULATOR_SCHEDULING,
      wire: opts.wire,
      servoParams: opts.servoParams,
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  console.log(emulator.path);
  console.error(
    `emulating ${opts.robot} on ${emulator.path}${emulator.wire === 'socat' ? ' (relayed by socat)' : ''}; run: npm start -- --backend=real --robot=${opts.robot} --serial=${emulator.path}`,
  );
  if (opts.console) faultConsole(emulator.bus, emulator.sim);
  const shutdown = () => {
    emulator
      .close()
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  main(process.argv).catch((err: unknown) => {
    console.error(`error: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  });

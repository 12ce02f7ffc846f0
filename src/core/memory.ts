/**
 * The memory settings per machine, said at start in one line (issue 46: a 1 GB Raspberry Pi with the twin and the
 * camera under 200 MB; docs/decisions/0066-memory-on-a-pi.md). V8 sizes its young generation when the process
 * starts: the flag that caps it is given to node by who starts it (the service's unit, written at install on the
 * machine; the bus process's fork); the server can only hold it at its first size from inside, less surely.
 */
import os from 'node:os';

export type MemoryFlag = 'auto' | 'small' | 'ample';

/** At or under this much RAM, `--memory=auto` is small: a Pi 3B+ (1 GB) or a 2 GB Pi 4. */
export const SMALL_MACHINE_BYTES = 2 * 2 ** 30;

/** Caps V8's young generation at 1 MB semi-spaces, a 2 MB new space (it grew to 16 MB here under load). */
export const YOUNG_GENERATION_CAP = '--max-semi-space-size=1';

/**
 * The bus process's Node flags, whatever the machine: its heap is a few MB. V8's new space grown to 16 MB and four
 * GC and compiler threads cost it 14-16 MB of RSS for nothing; one thread is kept so that its GC still marks beside
 * the loop (`--single-threaded` put the loop's p99 lateness at 20-50 ms where it was 2-10). A cycle's objects die
 * young, yet V8 pretenured their allocation sites: the old space grew 230 KB/s and a mark-compact stalled the loop
 * every 35 s; without pretenuring it grows 10 KB/s (docs/decisions/0078-no-pretenuring-in-the-bus-process.md).
 */
export const BUS_PROCESS_NODE_FLAGS: readonly string[] = [
  YOUNG_GENERATION_CAP,
  '--v8-pool-size=1',
  '--no-allocation-site-pretenuring',
];

/** Node flags for the server on a machine with `totalBytes` of RAM (the service's unit is written with them). */
export function serverNodeFlags(totalBytes = os.totalmem()): string[] {
  return totalBytes <= SMALL_MACHINE_BYTES ? [YOUNG_GENERATION_CAP] : [];
}

export interface MemoryPlan {
  readonly small: boolean;
  /** Whether V8's young generation may grow past its first size once the server listens. */
  readonly youngGenerationGrows: boolean;
  /** The start's line saying what was chosen and why. */
  readonly line: string;
}

/**
 * What the server does under `flag` on a machine with `totalBytes` of RAM, started with `nodeFlags` (its execArgv
 * and NODE_OPTIONS): small holds the young generation at its first size, capped if node was started so.
 */
export function memoryPlan(
  flag: MemoryFlag,
  totalBytes = os.totalmem(),
  nodeFlags: readonly string[] = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)],
): MemoryPlan {
  const gb = (totalBytes / 2 ** 30).toFixed(1);
  const small = flag === 'small' || (flag === 'auto' && totalBytes <= SMALL_MACHINE_BYTES);
  const capped = nodeFlags.some((f) => /^--max-semi-space-size=/.test(f));
  const why = flag === 'auto' ? `${gb} GB of RAM` : `--memory=${flag}, ${gb} GB of RAM`;
  const how = capped
    ? `capped by node ${nodeFlags.find((f) => /^--max-semi-space-size=/.test(f))}`
    : `held at its first size (node ${YOUNG_GENERATION_CAP} caps it surely: the service's unit has it)`;
  return {
    small,
    youngGenerationGrows: !small && !capped,
    line: small
      ? `memory: small (${why}): V8's young generation ${how}`
      : `memory: ample (${why}): V8's young generation ${capped ? how : 'grows under load (--memory=small holds it)'}`,
  };
}

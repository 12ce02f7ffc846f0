/**
 * A run's rig on the real backend, paced by its bus loop's cycles, and its log rebuilt on them. Each sample's writes
 * and its read are queued together, so the bus process sends the writes at the start of a cycle; the next sample
 * goes with the next cycle. A process late for a cycle (a loaded machine) slips a sample to a later one, so the log
 * is rebuilt cycle by cycle from the bus loop's own reports: each cycle's reading with the command in force at it
 * (the reports count the writes sent), 20 ms apart as the forward model replays them (forward.ts). Reads from the
 * last cycle's cache on wall-clock deadlines put each reading 0-20 ms off the model's instant: the fit's residual
 * doubled (docs/decisions/0067-calibration-route.md).
 */
import { positionToDeg } from '../dynamixel/registers.ts';
import type { RealBackend } from '../real/backend.ts';
import { type MotorLog, type Rig, SAMPLE } from './run.ts';

/** The rig and what it saw; `rebuild` turns the run's log into the cycles' one, `close` stops listening. */
export interface CycleRig {
  readonly rig: Rig;
  rebuild(log: MotorLog): MotorLog;
  close(): void;
}

/**
 * The rig of one joint's run (motor `id`), or undefined when the loop's rate is not one cycle a sample (50 Hz;
 * then the clock's rig).
 */
export function cycleRig(
  real: RealBackend,
  hz: number,
  id: number,
  signal: AbortSignal,
): CycleRig | undefined {
  if (Math.abs(hz * SAMPLE - 1) > 1e-9) return undefined;
  const spec = real.models.get(id)!;
  /** Per sample: the cycle its read was answered in, and the index of its last write of this joint (if any). */
  const readCycles: number[] = [];
  const lastWrites: (number | undefined)[] = [];
  /** Per cycle: the joint's reading (raw degrees) and the writes sent by its start (CycleReport.writes). */
  const readings = new Map<number, number>();
  const sent: [number, number][] = [];
  const offs = [
    real.onCycle((report) => {
      sent.push([report.seq, report.writes]);
      const position = report.values.find(([reg]) => reg === 'present_position')?.[1];
      const v = position?.find(([motor]) => motor === id)?.[1];
      if (typeof v === 'number') readings.set(report.seq, positionToDeg(spec, v));
    }),
    // A sample's writes come before its read: they are the sample's whose read is next.
    real.onWrite((_reg, values, index) => {
      if (values.has(id)) lastWrites[readCycles.length] = index;
    }),
  ];
  /** The first cycle by whose start the write of that index had gone out. */
  const cycleOfWrite = (index: number) => sent.find(([, writes]) => writes >= index)?.[0];
  const rig: Rig = {
    bus: {
      write: (reg, values) => real.bus.write(reg, values),
      // Not the cache: queued behind this sample's writes, read in the cycle that sends them (or the next).
      read: async (ids, reg) => {
        const values = await real.request(ids, reg);
        readCycles.push(real.cycles + 1);
        return values;
      },
    },
    now: () => real.clock.now(),
    wait: async (seconds) => {
      let seen = real.cycles;
      for (let n = Math.max(1, Math.round(seconds * hz)); n > 0; n--)
        seen = await real.waitForCycle(seen, signal);
    },
    stopped: () => signal.aborted,
  };
  return {
    rig,
    rebuild: (log) => {
      // The log's samples are the run's last reads: a read before them (the settle's, of every joint) is no sample.
      const first = Math.max(0, readCycles.length - log.t.length);
      // A sample's cycle is the one that sent its writes (the reports count them); one without writes, its read's.
      const cycles: number[] = [];
      readCycles.slice(first).forEach((read, k) => {
        const w = lastWrites[first + k];
        const c = (w !== undefined ? cycleOfWrite(w) : undefined) ?? read;
        cycles.push(Math.max(c, cycles[k - 1] ?? c));
      });
      return perCycleLog(log, cycles, readings);
    },
    close: () => offs.forEach((off) => off()),
  };
}

/**
 * The log on the bus loop's cycles: from the cycle of the first sample to that of the last, each cycle's reading
 * with the command of the latest sample sent by then (a cycle a sample slipped past keeps the one before); the
 * segments moved to the cycles their first samples went out in. A cycle without a reading keeps the one before.
 */
export function perCycleLog(
  log: MotorLog,
  sampleCycles: readonly number[],
  readings: ReadonlyMap<number, number>,
): MotorLog {
  const n = Math.min(log.t.length, sampleCycles.length);
  if (n === 0) return log;
  const first = sampleCycles[0]!;
  const last = sampleCycles[n - 1]!;
  const out = { t: [] as number[], command: [] as MotorLog['command'][number][], position: [] as number[] };
  let k = 0;
  let reading = log.position[0]!;
  for (let c = first; c <= last; c++) {
    while (k + 1 < n && sampleCycles[k + 1]! <= c) k++;
    reading = readings.get(c) ?? reading;
    out.t.push((c - first) * SAMPLE);
    out.command.push(log.command[k]!);
    out.position.push(reading);
  }
  const at = (seconds: number) => {
    const sample = Math.round(seconds / SAMPLE);
    const cycle = sample < n ? sampleCycles[sample]! : last + 1 + (sample - n);
    return (cycle - first) * SAMPLE;
  };
  return {
    ...log,
    ...out,
    segments: log.segments.map(([name, from, to]): [string, number, number] => [name, at(from), at(to)]),
  };
}

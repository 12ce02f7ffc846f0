/**
 * pypot's sync loop, in the bus process (bus-process.ts): every period it sends the writes queued since the last cycle (in
 * the order they came, one sync write per register), serves the reads asked meanwhile, then reads present position,
 * speed and load of every motor in one transaction, and one slow register (voltage, temperature, current) at 5 Hz.
 * Its own process keeps its schedule whatever the server's HTTP load (issue 11: p99 lateness within 2 ms under 10
 * REST connections); the Robot reads the cycles' values from the backend's cache.
 * Before start() and after stop(), queued work runs at once, in order: start-up reads and the last writes.
 */
import type { Clock } from '../core/clock.ts';
import { runFixedRate } from '../core/fixed-rate.ts';
import { controlTable } from '../dynamixel/control-table.ts';
import {
  type BusRegister,
  type RawValue,
  CYCLE_REGISTERS,
  slowRegistersDue,
} from '../dynamixel/registers.ts';
import type { BusDriver, MotorHealth } from './driver.ts';

/** Transactions done and bytes sent and received on the link. */
export interface LinkStats {
  transactions: number;
  sent: number;
  received: number;
}

export interface CycleReport {
  /** Cycles done since the loop started (reports may merge several, see ReportThrottle). */
  readonly seq: number;
  /** When the cycle began: epoch ms (performance.timeOrigin + performance.now()), comparable across threads. */
  readonly startedAt: number;
  /** How far behind its schedule it began, ms. */
  readonly lateMs: number;
  /** The registers read this cycle: [register, [id, raw value][]][]. Lost motors are left out. */
  readonly values: [BusRegister, [number, RawValue][]][];
  /** Every motor's health, when it changed since the last report. */
  readonly health?: MotorHealth[];
  readonly stats: LinkStats;
  /** Writes sent to the servos since the loop began, in the order they were queued (the shadow twin's clock of them). */
  readonly writes: number;
}

type Job =
  | {
      readonly kind: 'read';
      readonly ids: readonly number[];
      readonly reg: BusRegister;
      readonly resolve: (v: Map<number, RawValue>) => void;
      readonly reject: (e: unknown) => void;
    }
  | { readonly kind: 'write'; readonly reg: BusRegister; readonly values: ReadonlyMap<number, RawValue> }
  | {
      readonly kind: 'reboot';
      readonly id: number;
      readonly resolve: (back: boolean) => void;
      readonly reject: (e: unknown) => void;
    };

export interface SyncLoopOptions {
  readonly hz: number;
  readonly clock: Clock;
  readonly onCycle: (report: CycleReport) => void;
  readonly log: (line: string) => void;
}

export class SyncLoop {
  #jobs: Job[] = [];
  #running = false;
  #draining: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  readonly #stop = new AbortController();
  #seq = 0;
  #writesDone = 0;
  #healthReported = -1;
  /** The last cycle's failure, logged once until the loop recovers. */
  #failure: string | undefined;

  constructor(
    private readonly driver: BusDriver,
    private readonly opts: SyncLoopOptions,
  ) {}

  /** Queued: runs in the next cycle (at once while the loop is not running), after the work queued before it. */
  read(ids: readonly number[], reg: BusRegister): Promise<Map<number, RawValue>> {
    return new Promise((resolve, reject) => {
      this.#jobs.push({ kind: 'read', ids, reg, resolve, reject });
      this.#kick();
    });
  }

  /** Queued like read(); a failure is logged (a sync write has no reply, so it fails only on a bad value). */
  write(reg: BusRegister, values: ReadonlyMap<number, RawValue>): void {
    this.#jobs.push({ kind: 'write', reg, values });
    this.#kick();
  }

  /** Queued like read(): reboots a motor (protocol 2.0) and configures it as before; resolves whether it is back. */
  reboot(id: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#jobs.push({ kind: 'reboot', id, resolve, reject });
      this.#kick();
    });
  }

  start(): void {
    if (this.#running || this.#stop.signal.aborted) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Ends the loop after its current cycle, then runs what is still queued. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#running = false;
    await this.#loop;
    await this.#drain();
  }

  #kick(): void {
    if (!this.#running) void this.#drain();
  }

  /** Runs the queued jobs in order; one drain at a time (jobs queued meanwhile join the drain in progress). */
  #drain(): Promise<void> {
    if (this.#draining) return this.#draining;
    // Nothing queued: no drain (an async body with no await would finish before #draining is even set).
    if (!this.#jobs.length) return Promise.resolve();
    this.#draining = (async () => {
      try {
        while (this.#jobs.length) {
          const job = this.#jobs.shift()!;
          if (job.kind === 'read') await this.driver.read(job.ids, job.reg).then(job.resolve, job.reject);
          else if (job.kind === 'reboot') await this.driver.reboot(job.id).then(job.resolve, job.reject);
          else {
            this.#writesDone++;
            await this.driver.write(job.reg, job.values).catch((err: unknown) => {
              this.opts.log(`writing ${job.reg} failed: ${(err as Error).message}`);
            });
          }
        }
      } finally {
        this.#draining = undefined;
      }
    })();
    return this.#draining;
  }

  #healthChanged(): boolean {
    if (this.driver.healthVersion === this.#healthReported) return false;
    this.#healthReported = this.driver.healthVersion;
    return true;
  }

  #run(): Promise<void> {
    const { clock, hz } = this.opts;
    return runFixedRate(clock, 1 / hz, this.#stop.signal, (lateS) => this.#cycle(lateS * 1000));
  }

  async #cycle(lateMs: number): Promise<void> {
    const seq = ++this.#seq;
    const startedAt = performance.timeOrigin + performance.now();
    const values: [BusRegister, [number, RawValue][]][] = [];
    try {
      await this.#drain();
      const ids = [...this.driver.models.keys()];
      for (const reg of CYCLE_REGISTERS) values.push([reg, [...(await this.driver.read(ids, reg))]]);
      for (const reg of slowRegistersDue(seq, this.opts.hz)) {
        const having = ids.filter((id) => controlTable(this.driver.models.get(id)!).bus[reg]);
        if (having.length) values.push([reg, [...(await this.driver.read(having, reg))]]);
      }
      this.#failure = undefined;
    } catch (err) {
      // The loop never dies of one bad cycle; the Robot sees the motors whose values are missing as faulty.
      const msg = (err as Error).message;
      if (this.#failure !== msg) this.opts.log(`sync loop: a cycle failed: ${msg}`);
      this.#failure = msg;
    }
    this.opts.onCycle({
      seq,
      startedAt,
      lateMs,
      values,
      health: this.#healthChanged() ? this.driver.healthSnapshot() : undefined,
      stats: { ...this.driver.link.stats },
      writes: this.#writesDone,
    });
  }
}

/**
 * The bus process's reports to the server, at most one every MIN_REPORT_MS: at 50 Hz every cycle goes; a loop run
 * flat out (--loop-hz 1000) does not spend its time on messages the server's control loop could not use (back to
 * back, Ergo Jr 68 -> 72-74 % of the bus limit). A report held back is merged into the next one (the latest values
 * of each register, the latest health; `seq` still counts every cycle), so nothing read is lost, and goes at the
 * latest MIN_REPORT_MS after the one before.
 */
const MIN_REPORT_MS = 4;

export class ReportThrottle {
  #held: CycleReport | undefined;
  #lastPost = -Infinity;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly send: (report: CycleReport) => void,
    private readonly minMs = MIN_REPORT_MS,
  ) {}

  add(report: CycleReport): void {
    this.#held = this.#held ? mergeReports(this.#held, report) : report;
    const wait = this.#lastPost + this.minMs - performance.now();
    if (wait <= 0) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), wait);
  }

  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#held) return;
    this.send(this.#held);
    this.#held = undefined;
    this.#lastPost = performance.now();
  }
}

export function mergeReports(older: CycleReport, newer: CycleReport): CycleReport {
  const values = new Map(older.values);
  for (const [reg, v] of newer.values) values.set(reg, v);
  return { ...newer, values: [...values], health: newer.health ?? older.health };
}

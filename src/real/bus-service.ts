/**
 * The bus side of RealBackend: owns the BusDriver and the sync loop and answers RealBackend's messages
 * (bus-messages.ts). It runs in a process of its own in production (bus-process.ts), or in the server's process on
 * an in-memory binding in unit tests, so that both run this same code.
 */
import { raiseScheduling } from '../core/priority.ts';
import { BusDriver } from './driver.ts';
import { ReportThrottle, SyncLoop } from './sync-loop.ts';
import { type FromBus, type ToBus, toWire } from './bus-messages.ts';
import type { SerialBinding } from './serial-binding.ts';
import { TimerClock } from './timer-clock.ts';

/**
 * How long the bus process, signalled to stop (SIGTERM, SIGINT, SIGHUP: systemd stops the whole unit, Ctrl-C the
 * terminal's process group), waits for its server to close it in the server's own order before it leaves the servos
 * as configured and ends: the server's shutdown takes at most 2 s (README "Shutdown").
 */
export const BUS_SIGNAL_GRACE_MS = 2000;

export interface BusService {
  receive(m: ToBus): void;
  /** Leaves the servos as asked (`onClose`, default the one given at open) and closes the port. */
  close(onClose?: 'compliant' | 'hold'): Promise<void>;
}

export interface BusServiceOptions {
  /** Sends a message to RealBackend. */
  readonly post: (m: FromBus) => void;
  /** Called once the bus has closed after a `close` message. */
  readonly ended: () => void;
  readonly binding?: SerialBinding;
  /** Ask for the setup's scheduling (the bus process does; in-process tests do not). */
  readonly raisePriority?: boolean;
}

export function serveBus(opts: BusServiceOptions): BusService {
  const { post } = opts;
  const log = (line: string) => post({ t: 'log', line });
  const reports = new ReportThrottle((report) => post({ t: 'cycle', ...report }));
  let bus: { driver: BusDriver; loop: SyncLoop; onClose: 'compliant' | 'hold' } | undefined;
  let closing: Promise<void> | undefined;

  /**
   * The loop's wake-ups must not wait behind the server's HTTP work or the machine's other processes. First choice:
   * the real-time FIFO class for every thread of this process (chrt, from util-linux), so the kernel runs the loop as
   * soon as its timer fires (p99 lateness under 10 flat-out REST connections 1.5-2.9 ms -> 0.9-1.2 ms on a 2-core
   * machine); the loop sleeps between cycles, and the kernel keeps 5 % of each second for others. Else a nicer-than-
   * normal priority. Both are granted to root or with CAP_SYS_NICE (or raised rtprio/nice limits); otherwise the loop
   * runs at normal priority and says so once.
   */
  const raisePriority = (realtime: number, nice: number) => {
    if (raiseScheduling(process.pid, { realtime, nice })) return;
    log(
      `the bus loop runs at normal priority (no permission for real-time or nice ${nice}); under heavy load its cycles may start late`,
    );
  };

  const close = (onClose?: 'compliant' | 'hold'): Promise<void> => {
    closing ??= (async () => {
      if (!bus) return;
      try {
        await bus.loop.stop();
        reports.flush();
        await bus.driver.close(onClose ?? bus.onClose);
      } catch (err) {
        log(`closing the bus: ${(err as Error).message}`);
      }
    })();
    return closing;
  };

  const answer = (driver: BusDriver) => ({
    health: driver.healthSnapshot(),
    stats: { ...driver.link.stats },
  });

  const receive = (m: ToBus) => {
    if (m.t === 'open') {
      if (opts.raisePriority) raisePriority(m.setup.realtimePriority, m.setup.nice);
      const driver = new BusDriver(m.setup, log, opts.binding);
      const loop = new SyncLoop(driver, {
        hz: m.setup.hz,
        // One timer a cycle wakes the loop (timer-clock.ts): yielding turns for the last millisecond cost a quarter of
        // the bus process's CPU for p99 lateness 1 ms instead of 2 (docs/decisions/0060-the-bus-process-per-cycle.md).
        clock: new TimerClock(),
        log,
        onCycle: (report) => reports.add(report),
      });
      bus = { driver, loop, onClose: m.setup.onClose };
      driver.open().then(
        () => post({ t: 'opened', health: driver.healthSnapshot() }),
        (err: unknown) => post({ t: 'opened', error: toWire(err), health: driver.healthSnapshot() }),
      );
      return;
    }
    if (!bus) return;
    const { driver, loop } = bus;
    switch (m.t) {
      case 'start':
        loop.start();
        break;
      case 'read':
        loop.read(m.ids, m.reg).then(
          (values) => post({ t: 'read', req: m.req, values: [...values], ...answer(driver) }),
          (err: unknown) => post({ t: 'read', req: m.req, error: toWire(err), ...answer(driver) }),
        );
        break;
      case 'write':
        loop.write(m.reg, new Map(m.values));
        break;
      case 'reboot':
        loop.reboot(m.id).then(
          (back) => post({ t: 'rebooted', req: m.req, back, ...answer(driver) }),
          (err: unknown) => post({ t: 'rebooted', req: m.req, error: toWire(err), ...answer(driver) }),
        );
        break;
      case 'close':
        void close(m.onClose).then(() => opts.ended());
        break;
    }
  };
  return { receive, close };
}

/**
 * The bus process: owns the serial port, the BusDriver and the sync loop, so that the loop keeps its schedule and the
 * replies are read on time whatever the server's thread is doing (HTTP, JSON, primitives). A process, not a worker
 * thread: serialport's native poller runs on the process's main loop and aborts the process when used from a worker
 * (serialport/node-serialport#2748). It speaks to RealBackend (src/real/backend.ts) over the IPC channel in the
 * messages of bus-messages.ts. If the server dies, the channel closes and the servos are left safe here.
 */
import { WallClock } from '../core/clock.ts';
import { raiseScheduling } from '../core/priority.ts';
import { BusDriver } from './driver.ts';
import { ReportThrottle, SyncLoop } from './sync-loop.ts';
import { type FromBus, type ToBus, toWire } from './bus-messages.ts';

let bus: { driver: BusDriver; loop: SyncLoop; onClose: 'compliant' | 'hold' } | undefined;
let closing: Promise<void> | undefined;

const post = (m: FromBus) => {
  if (process.connected) process.send!(m);
};
const log = (line: string) => post({ t: 'log', line });
/**
 * The loop's wake-ups must not wait behind the server's HTTP work or the machine's other processes. First choice:
 * the real-time FIFO class for every thread of this process (chrt, from util-linux), so the kernel runs the loop as
 * soon as its timer fires (p99 lateness under 10 flat-out REST connections 1.5-2.9 ms -> 0.9-1.2 ms on a 2-core
 * machine); the loop sleeps between cycles, and the kernel keeps 5 % of each second for others. Else a nicer-than-
 * normal priority. Both are granted to root or with CAP_SYS_NICE (or raised rtprio/nice limits); otherwise the loop
 * runs at normal priority and says so once.
 */
function raisePriority(realtime: number, nice: number): void {
  if (raiseScheduling(process.pid, { realtime, nice })) return;
  log(
    `the bus loop runs at normal priority (no permission for real-time or nice ${nice}); under heavy load its cycles may start late`,
  );
}

const reports = new ReportThrottle((report) => post({ t: 'cycle', ...report }));

function close(onClose: 'compliant' | 'hold'): Promise<void> {
  closing ??= (async () => {
    if (!bus) return;
    try {
      await bus.loop.stop();
      reports.flush();
      await bus.driver.close(onClose);
    } catch (err) {
      log(`closing the bus: ${(err as Error).message}`);
    }
  })();
  return closing;
}

// The server is gone (it closed, crashed or was killed): the servos are left as configured, then this process ends.
process.on('disconnect', () => {
  void close(bus?.onClose ?? 'compliant').finally(() => process.exit(0));
});

process.on('message', (m: ToBus) => {
  if (m.t === 'open') {
    raisePriority(m.setup.realtimePriority, m.setup.nice);
    const driver = new BusDriver(m.setup, log);
    const loop = new SyncLoop(driver, {
      hz: m.setup.hz,
      clock: new WallClock(),
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
        (values) =>
          post({
            t: 'read',
            req: m.req,
            values: [...values],
            health: driver.healthSnapshot(),
            stats: { ...driver.link.stats },
          }),
        (err: unknown) =>
          post({
            t: 'read',
            req: m.req,
            error: toWire(err),
            health: driver.healthSnapshot(),
            stats: { ...driver.link.stats },
          }),
      );
      break;
    case 'write':
      loop.write(m.reg, new Map(m.values));
      break;
    case 'close':
      void close(m.onClose).then(() => process.disconnect());
      break;
  }
});

/**
 * The bus process: owns the serial port, the BusDriver and the sync loop (bus-service.ts), so that the loop keeps
 * its schedule and the replies are read on time whatever the server's thread is doing (HTTP, JSON, primitives). A
 * process, not a worker thread: serialport's native poller runs on the process's main loop and aborts the process
 * when used from a worker (serialport/node-serialport#2748). It speaks to RealBackend (src/real/backend.ts) over the
 * IPC channel in the messages of bus-messages.ts. If the server dies, the channel closes and the servos are left safe
 * here; a stop signal does the same once the server has had its chance (docs/decisions/0058-a-service.md).
 */
import type { FromBus, ToBus } from './bus-messages.ts';
import { BUS_SIGNAL_GRACE_MS, serveBus } from './bus-service.ts';

const service = serveBus({
  post: (m: FromBus) => {
    // A server killed between cycles leaves the channel open here for a moment: that send fails (EPIPE) and, without
    // a callback, its error would end this process before it left the servos. Failed, the server is gone: leave.
    if (process.connected) process.send!(m, undefined, {}, (err: Error | null) => err && gone(m));
    else gone(m);
  },
  ended: () => process.disconnect(),
  raisePriority: true,
});

/** Leaves the servos as configured (a close already under way is the one awaited), then ends this process. */
function leave(): void {
  void service.close().finally(() => process.exit(0));
}

/** The server is gone: what the bus still has to say (leaving the servos) goes to the stderr it shared (the journal). */
function gone(m: FromBus): void {
  if (m.t === 'log') process.stderr.write(`bus: ${m.line}\n`);
  leave();
}

// The server is gone (it closed, crashed or was killed): the servos are left as configured, then this process ends.
process.on('disconnect', leave);

// systemd stops a unit with SIGTERM to every process of it, a terminal's Ctrl-C is SIGINT to the whole job, and a
// closed terminal SIGHUP: the server, signalled too, closes the bus in its own order; a server that does not (hung,
// or gone) leaves it to this process after the grace.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
  process.on(signal, () => {
    if (!process.connected) return leave();
    setTimeout(leave, BUS_SIGNAL_GRACE_MS).unref();
  });

process.on('message', (m: ToBus) => service.receive(m));

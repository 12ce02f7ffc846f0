/**
 * The bus process: owns the serial port, the BusDriver and the sync loop (bus-service.ts), so that the loop keeps
 * its schedule and the replies are read on time whatever the server's thread is doing (HTTP, JSON, primitives). A
 * process, not a worker thread: serialport's native poller runs on the process's main loop and aborts the process
 * when used from a worker (serialport/node-serialport#2748). It speaks to RealBackend (src/real/backend.ts) over the
 * IPC channel in the messages of bus-messages.ts. If the server dies, the channel closes and the servos are left safe
 * here.
 */
import type { FromBus, ToBus } from './bus-messages.ts';
import { serveBus } from './bus-service.ts';

const service = serveBus({
  post: (m: FromBus) => {
    if (process.connected) process.send!(m);
  },
  ended: () => process.disconnect(),
  raisePriority: true,
});

// The server is gone (it closed, crashed or was killed): the servos are left as configured, then this process ends.
process.on('disconnect', () => {
  void service.close().finally(() => process.exit(0));
});

process.on('message', (m: ToBus) => service.receive(m));

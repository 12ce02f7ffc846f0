/**
 * Where the bus side (bus-service.ts) runs for RealBackend: a process of its own (production: its loop keeps its
 * schedule whatever the server does), or the server's own process on a given binding (unit tests on the in-memory
 * binding: no socat, no fork). Both exchange the same messages (bus-messages.ts), cloned as IPC would.
 */
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILT, entryModule } from '../core/entry.ts';
import { BUS_PROCESS_NODE_FLAGS } from '../core/memory.ts';
import type { FromBus, ToBus } from './bus-messages.ts';
import { serveBus } from './bus-service.ts';
import type { SerialBinding } from './serial-binding.ts';

export interface BusHost {
  send(m: ToBus): void;
  /** Ends it at once (it did not close in time). */
  kill(): void;
  /** Resolves once it has ended. */
  readonly exited: Promise<void>;
}

export interface BusHostEvents {
  message(m: FromBus): void;
  /** It ended or failed; `why` for the log. */
  lost(why: string): void;
}

export type StartBusHost = (events: BusHostEvents) => BusHost;

const ENTRY = fileURLToPath(entryModule(new URL('./bus-process.ts', import.meta.url), 'bus-process'));

/** The bus process (bus-process.ts), built or under the loader this server runs under (tsx), from any directory. */
export const forkBusProcess: StartBusHost = (events) => {
  const child = fork(ENTRY, [], {
    // The bus process's heap is a few MB: V8's defaults would grow it (src/core/memory.ts).
    execArgv: [
      ...BUS_PROCESS_NODE_FLAGS,
      ...(BUILT ? [] : ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href]),
    ],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (m: FromBus) => events.message(m));
  child.on('error', (err) => events.lost(`the bus process failed: ${err.message}`));
  child.on('exit', (code, signal) => events.lost(`the bus process exited (${signal ?? `code ${code}`})`));
  return {
    send: (m) => child.send(m),
    kill: () => child.kill('SIGKILL'),
    exited,
  };
};

/** The bus side in this process on `binding`; messages cross on later turns of the event loop, cloned. */
export function inProcessBus(binding: SerialBinding): StartBusHost {
  return (events) => {
    let ended = false;
    let done!: () => void;
    const exited = new Promise<void>((resolve) => (done = resolve));
    const end = (why: string) => {
      if (ended) return;
      ended = true;
      done();
      events.lost(why);
    };
    const service = serveBus({
      post: (m) => {
        const copy = structuredClone(m);
        setImmediate(() => {
          if (!ended) events.message(copy);
        });
      },
      ended: () => setImmediate(() => end('the bus closed')),
      binding,
    });
    return {
      send(m) {
        const copy = structuredClone(m);
        setImmediate(() => service.receive(copy));
      },
      kill() {
        void service.close();
        end('the bus was stopped');
      },
      exited,
    };
  };
}

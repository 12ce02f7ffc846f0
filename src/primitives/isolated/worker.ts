/**
 * Inside a custom primitive's worker thread: a robot mirror (motors whose state and commands come from the server at
 * every tick, on a clock the ticks move), the primitive loaded from its file with the usual context, and the answers
 * to the server's messages. Whatever the primitive does here (throws, exit, busy loops, memory) stays in this thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Backend, MotorBus } from '../../core/backend.ts';
import { SteppedClock, flushMicrotasks } from '../../core/clock.ts';
import { RobotError } from '../../core/errors.ts';
import type { RobotConfig } from '../../config/robot-config.ts';
import { mulberry32 } from '../../core/prng.ts';
import { Robot } from '../../robot/robot.ts';
import { type Logger } from '../../core/logger.ts';
import { loadPrimitiveModule } from '../loader.ts';
import type { Primitive, PrimitiveContext, PrimitiveHost } from '../primitive.ts';
import type { FromWorker, MotorSnapshot, ToWorker, WorkerInput, WireError } from './protocol.ts';

const port = parentPort!;
const input = workerData as WorkerInput;
const send = (m: FromWorker) => port.postMessage(m);

const clock = new SteppedClock();
const noBus: MotorBus = {
  read: () => Promise.reject(new Error('a primitive does not read the bus')),
  write: () => Promise.reject(new Error('a primitive does not write the bus')),
};
const backend = {
  kind: 'sim',
  clock,
  bus: noBus,
  models: new Map(),
  open: async () => {},
  close: async () => {},
};
const robot = new Robot(input.config as RobotConfig, backend as unknown as Backend);
const logger: Logger = {
  info: (msg) => send({ type: 'log', level: 'info', msg }),
  warn: (msg) => send({ type: 'log', level: 'warn', msg }),
  error: (msg) => send({ type: 'log', level: 'error', msg }),
};
const active = new Set<Primitive>();
const closing = new AbortController();
let seq = 0;
const host: PrimitiveHost = {
  activate: (p) => void active.add(p),
  deactivate: (p) => void active.delete(p),
  closing: closing.signal,
  sequence: () => ++seq,
};
const ctx: PrimitiveContext = { robot, logger, random: mulberry32(input.seed), host };

function wire(err: unknown): WireError {
  if (err instanceof RobotError)
    return { code: err.code, message: err.message, tip: err.tip, details: err.details };
  return { message: err instanceof Error ? err.message : String(err) };
}

async function main(): Promise<void> {
  let p: Primitive;
  send({ type: 'booted' });
  try {
    p = await loadPrimitiveModule(input.file, ctx);
  } catch (err) {
    send({ type: 'load-failed', reason: err instanceof Error ? err.message : String(err) });
    return;
  }
  const props = p.properties();
  const methods = p.methods();
  send({
    type: 'loaded',
    declarations: {
      name: p.name,
      properties: props.map((s) => ({ name: s.name, type: s.type, readOnly: Boolean(s.readOnly || !s.set) })),
      methods: methods.map((m) => ({ name: m.name, params: m.params })),
    },
  });
  const reply = async (id: number, fn: () => unknown) => {
    try {
      send({ type: 'reply', id, ok: true, value: await fn() });
    } catch (err) {
      send({ type: 'reply', id, ok: false, error: wire(err) });
    }
  };
  port.on('message', (m: ToWorker) => {
    switch (m.type) {
      case 'tick':
        void tick(p, m.t, m.motors);
        break;
      case 'ping':
        send({ type: 'pong', id: m.id });
        break;
      case 'start':
        void reply(m.id, () => p.start());
        break;
      case 'stop':
        void reply(m.id, () => p.stop().then(() => p.lastError ?? null));
        break;
      case 'pause':
        void reply(m.id, () => p.pause());
        break;
      case 'resume':
        void reply(m.id, () => p.resume());
        break;
      case 'get':
        void reply(m.id, () =>
          p
            .properties()
            .find((s) => s.name === m.prop)!
            .get(),
        );
        break;
      case 'set':
        void reply(m.id, () => {
          const spec = p.properties().find((s) => s.name === m.prop)!;
          spec.set!(m.value);
          return spec.get();
        });
        break;
      case 'call':
        void reply(m.id, () =>
          p
            .methods()
            .find((s) => s.name === m.method)!
            .call(m.args),
        );
        break;
    }
  });
}

/** One control tick: the robot's state, time moved on (timers fire), then the requests as they stand. */
async function tick(p: Primitive, t: number, motors: readonly MotorSnapshot[]): Promise<void> {
  for (const s of motors) {
    const m = robot.motor(s.name);
    Object.assign(m.state, s.state);
    Object.assign(m.commands, s.commands);
  }
  clock.setNow(t);
  clock.fireDue();
  await flushMicrotasks();
  const requests = [...active].flatMap((a) => a.currentRequests());
  send({ type: 'tock', requests, state: p.state, lastError: p.lastError });
}

void main();

/**
 * The shadow twin's physics in a worker thread (see ThreadTwinEngine): a LocalTwinEngine made from the setup in
 * workerData, answering the server's requests in the order they come. With `{ probe }` as its data, it times the
 * twin's step instead (measureStepCost), posts the cost and is ended: the server's thread never loads the physics.
 */
import { writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { measureStepCost } from './physics-rate.ts';
import {
  LocalTwinEngine,
  TWIN_PROBE_THREAD_NAME,
  TWIN_THREAD_NAME,
  type TwinEngineSetup,
} from './twin-engine.ts';
import type { EngineRequest, EngineResponse, StepProbeData } from './twin-engine-thread.ts';

const port = parentPort!;
const data = workerData as TwinEngineSetup | StepProbeData;
// Named for `top -H` and `ps -L` (Linux: a thread may rename itself); elsewhere it keeps the process's name. The
// probe's own name: what finds the twin's thread by its name (the Pi-budget bench) never takes the probe for it.
try {
  writeFileSync('/proc/thread-self/comm', 'probe' in data ? TWIN_PROBE_THREAD_NAME : TWIN_THREAD_NAME);
} catch {
  // not Linux
}
if ('probe' in data) port.postMessage(await measureStepCost(data.probe));
else serve(new LocalTwinEngine(data));

function serve(engine: LocalTwinEngine): void {
  /**
   * The requests waiting, run one at a time in order with a turn of the event loop between them: a cycle's epoch is
   * heard on receipt, so that cycles queued behind a re-anchoring are dropped (TwinCycleInput.epoch).
   */
  const waiting: EngineRequest[] = [];
  let pumping = false;

  async function answer(req: EngineRequest): Promise<unknown> {
    switch (req.op) {
      case 'open':
        return engine.open(req.pose);
      case 'cycle':
        return engine.cycle(req.input);
      case 'read':
        return engine.read(req.ids, req.reg);
      case 'close':
        return engine.close();
    }
  }

  function pump(): void {
    const req = waiting.shift();
    pumping = req !== undefined;
    if (!req) return;
    void answer(req)
      .then(
        (value) => port.postMessage({ id: req.id, value } satisfies EngineResponse),
        (err: unknown) =>
          port.postMessage({
            id: req.id,
            error: (err as Error)?.message ?? String(err),
          } satisfies EngineResponse),
      )
      .finally(() => setImmediate(pump));
  }

  port.on('message', (req: EngineRequest) => {
    if (req.op === 'cycle') engine.heard(req.input.epoch);
    waiting.push(req);
    // Started on the next turn: the messages that arrived with this one are heard first.
    if (!pumping) {
      pumping = true;
      setImmediate(pump);
    }
  });
}

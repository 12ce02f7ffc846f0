/**
 * Inside one shard's worker thread: its part of the class, each twin a whole robot server (createRobotServer) on its
 * own port, stepped by this thread's own scheduler, which keeps pace with the other shards' (PeerClock). Answers the
 * main thread's requests (src/classroom/shard-protocol.ts); its log lines go to the main thread's log.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Registry } from 'prom-client';
import { ConfigError, RobotError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { WorldScheduler } from '../sim/scheduler.ts';
import { type Twin, listenTwins, startTwins, twinAccess } from './classroom.ts';
import type { ShardAnswers, ShardInput, ShardMessage, ShardRequest, WireError } from './shard-protocol.ts';
import { classroomGauges, listing, resetTwin } from './twin.ts';

const port = parentPort!;
const input = workerData as ShardInput;
const send = (m: ShardMessage) => port.postMessage(m);

const logger: Logger = {
  info: (msg) => send({ type: 'log', level: 'info', msg }),
  warn: (msg) => send({ type: 'log', level: 'warn', msg }),
  error: (msg) => send({ type: 'log', level: 'error', msg }),
  debug: (msg) => send({ type: 'log', level: 'debug', msg }),
};

function wire(err: unknown): WireError {
  if (err instanceof ConfigError) return { message: err.message, field: err.field };
  if (err instanceof RobotError) return { message: err.message, code: err.code, tip: err.tip };
  return { message: err instanceof Error ? err.message : String(err) };
}

async function main(): Promise<void> {
  const scheduler = new WorldScheduler({
    speed: input.speed,
    peers: { times: new Float64Array(input.times), index: input.index, slack: input.slack },
  });
  let twins: Map<string, Twin & { ready: boolean }>;
  try {
    twins = await startTwins(
      { ...input.shared, twins: input.twins, speed: input.speed, recordsDir: input.recordsDir, logger },
      scheduler,
      (i) => input.rosterIndex[i]!,
    );
  } catch (err) {
    send({ type: 'start-failed', error: wire(err) });
    port.close(); // nothing else holds the thread: it ends
    return;
  }
  for (const twin of twins.values())
    void twin.server.primitives.customLoaded().finally(() => send({ type: 'ready', name: twin.spec.name }));

  const registry = new Registry();
  classroomGauges(registry, scheduler, () => ({
    ready: [...twins.values()].filter((t) => t.ready).length,
    total: twins.size,
  }));
  const twin = (name: string): Twin => {
    const t = twins.get(name);
    if (!t) throw new RobotError('not_found', `no twin called "${name}" in this shard`);
    return t;
  };

  const answer = async (req: ShardRequest): Promise<ShardAnswers[ShardRequest['type']]> => {
    switch (req.type) {
      case 'listen': {
        await listenTwins(twins.values(), req.host, (i) => input.rosterIndex[i]!);
        const ports: Record<string, number> = {};
        for (const t of twins.values()) ports[t.spec.name] = listing(t.spec, t.server, t.ready).port;
        return { ports };
      }
      case 'start':
        scheduler.start();
        return null;
      case 'list':
        return {
          twins: [...twins.values()].map((t) => listing(t.spec, t.server, t.ready)),
          real_time_factor: scheduler.realTimeFactor(),
        };
      case 'reset': {
        const names = req.name === undefined ? [...twins.keys()] : [req.name];
        return Promise.all(
          names.map((name) => {
            const { spec, server } = twin(name);
            return resetTwin(name, server, twinAccess(input.shared.access, spec).tokens?.[0]);
          }),
        );
      }
      case 'metrics': {
        const registries = [registry, ...[...twins.values()].map((t) => t.server.metrics.registry)];
        return Promise.all(registries.map((r) => r.getMetricsAsJSON()));
      }
      case 'close': {
        await scheduler.stop();
        const closed = await Promise.allSettled([...twins.values()].map((t) => t.server.close()));
        for (const [i, r] of closed.entries())
          if (r.status === 'rejected')
            logger.error(`twin ${[...twins.keys()][i]}: close failed: ${(r.reason as Error).message}`);
        return null;
      }
    }
  };

  port.on('message', (req: ShardRequest) => {
    answer(req).then(
      (value) => {
        send({ type: 'reply', id: req.id, ok: true, value });
        // Closed: the thread ends once nothing else holds it (the main thread terminates it after a bound anyway).
        if (req.type === 'close') port.close();
      },
      (err: unknown) => send({ type: 'reply', id: req.id, ok: false, error: wire(err) }),
    );
  });
  send({ type: 'started' });
}

void main();

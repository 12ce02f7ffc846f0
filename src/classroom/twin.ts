/**
 * One classroom twin as the teacher sees it, wherever it runs (the main thread or a shard's worker): its line in
 * GET /twins/list.json, the teacher's reset, its log lines named, and the classroom's own metrics.
 */
import { Gauge, type Registry } from 'prom-client';
import { RobotError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { RobotServer } from '../server.ts';
import type { WorldScheduler } from '../sim/scheduler.ts';
import type { TwinSpec } from './roster.ts';

/** Below this shared real-time factor the landing page says the machine is short of CPU. */
export const SHORT_OF_CPU_RTF = 0.99;

export interface TwinListing {
  readonly name: string;
  readonly robot: string;
  readonly port: number;
  readonly url: string;
  /** Started and its custom primitives loaded (or reported); false for a twin whose shard is gone. */
  readonly ready: boolean;
  /** Answering: false once the worker thread serving it has died (sharded classroom). */
  readonly online: boolean;
  readonly real_time_factor: number;
  readonly sim_time: number;
  readonly running_primitives: string[];
  readonly last_request: { method: string; url: string; status: number; at: string } | null;
}

export interface ResetAnswer {
  readonly name: string;
  readonly sim_time: number;
}

/** A twin's line in the list, as its server says now. */
export function listing(spec: TwinSpec, server: RobotServer, ready: boolean): TwinListing {
  const addr = server.app.server.address();
  const last = server.metrics.lastRequest();
  return {
    name: spec.name,
    robot: server.config.name,
    port: typeof addr === 'object' && addr ? addr.port : spec.port,
    url: `/twins/${spec.name}/`,
    ready,
    online: true,
    real_time_factor: round(server.simulation?.realTimeFactor() ?? 0, 3),
    sim_time: round(server.robot.clock.now(), 3),
    running_primitives: server.primitives.runningList().map((p) => p.name),
    last_request: last
      ? { method: last.method, url: last.url, status: last.status, at: new Date(last.at).toISOString() }
      : null,
  };
}

/**
 * The teacher's reset: running primitives stop, then the twin is as POST /sim/reset.json leaves it. The reset goes
 * through the twin's own door, with a token that opens it (`token`: the twin's or the teacher's).
 */
export async function resetTwin(name: string, server: RobotServer, token?: string): Promise<ResetAnswer> {
  await Promise.all(server.primitives.runningList().map((p) => p.stop()));
  const answer = await server.app.inject({
    method: 'POST',
    url: '/sim/reset.json',
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  if (answer.statusCode !== 200)
    throw new RobotError('internal', `twin ${name} could not reset: ${answer.body}`, 'see the server log');
  return { name, sim_time: (answer.json() as { sim_time: number }).sim_time };
}

/** The teacher's real-time factor alarm: under SHORT_OF_CPU_RTF of the speed asked for. */
export function shortOfCpu(rtf: number, speed: number | 'manual'): boolean {
  return typeof speed === 'number' && rtf > 0 && rtf < SHORT_OF_CPU_RTF * speed;
}

/**
 * The classroom's gauges on `registry`, read from `scheduler` and the twins' readiness. Merged over several shards'
 * registries (src/http/metrics.ts mergedMetrics), the real-time factor is the slowest shard's, the dropped time the
 * most any shard dropped, and the twin counts add up.
 */
export function classroomGauges(
  registry: Registry,
  scheduler: WorldScheduler,
  readiness: () => { ready: number; total: number },
): void {
  const registers = [registry];
  new Gauge({
    name: 'poppy_classroom_real_time_factor',
    help: "the shared scheduler's sim seconds per wall second (every twin alike)",
    registers,
    aggregator: 'min',
    collect() {
      this.set(scheduler.realTimeFactor());
    },
  });
  new Gauge({
    name: 'poppy_classroom_dropped_sim_seconds',
    help: 'sim time given up because the machine was short of CPU (every twin alike)',
    registers,
    aggregator: 'max',
    collect() {
      this.set(scheduler.droppedSeconds());
    },
  });
  twinsGauge(registry, readiness);
}

/** poppy_classroom_twins{ready}: added up over the registries merged. */
export function twinsGauge(registry: Registry, readiness: () => { ready: number; total: number }): void {
  new Gauge({
    name: 'poppy_classroom_twins',
    help: 'twins in the classroom, by readiness',
    labelNames: ['ready'],
    registers: [registry],
    aggregator: 'sum',
    collect() {
      const { ready, total } = readiness();
      this.set({ ready: 'true' }, ready);
      this.set({ ready: 'false' }, total - ready);
    },
  });
}

/** `logger` with every line starting `[name] `. */
export function prefixed(logger: Logger, name: string): Logger {
  const wrap = (f: ((line: string) => void) | undefined) =>
    f && ((line: string) => f.call(logger, `[${name}] ${line}`));
  return {
    ...logger,
    info: wrap(logger.info)!,
    warn: wrap(logger.warn)!,
    error: wrap(logger.error)!,
    debug: wrap(logger.debug),
  };
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

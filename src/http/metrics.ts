/**
 * GET /metrics in Prometheus's text format (prom-client): requests by route and status with their latency, the
 * twin's real-time factor and physics step time, running primitives, and on the real robot the bus's counters. One
 * registry per robot server (no global state); a classroom merges its twins' registries (label `twin`).
 */
import {
  AggregatorRegistry,
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  type Metric,
  Registry,
} from 'prom-client';
import { z } from 'zod';
import { redactToken } from './access.ts';
import { type AnswerCounter, RawReply, type RouteAnswerCounter, type RouteSpec } from './route.ts';

/** Where the numbers come from; each is read when Prometheus scrapes. */
export interface MetricSources {
  /** Attached primitives running now. */
  readonly runningPrimitives: () => number;
  /** Sim only: sim seconds per wall second. */
  readonly realTimeFactor?: () => number;
  /** Sim only: physics steps taken and the wall time they took (s). */
  readonly physics?: () => { readonly steps: number; readonly stepWallTime: number };
  /** Real only: the bus's transactions and reply timeouts so far. */
  readonly bus?: () => { readonly transactions: number; readonly timeouts: number };
  /** Real with --shadow: the twin's clock (s), the wall time it spent on cycles (s) and its re-anchorings. */
  readonly shadow?: () => { readonly twinTime: number; readonly busy: number; readonly reanchored: number };
}

/** The last request a server answered (the classroom's list shows it). */
export interface LastRequest {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  /** Epoch ms. */
  readonly at: number;
}

/** One route, method and status's answers: their count, the sum of their times (s) and a count per latency bucket. */
interface Series {
  readonly route: string;
  readonly method: string;
  readonly status: number;
  count: number;
  sum: number;
  /** Answers within each of LATENCY_BUCKETS (not cumulative), then those above the last. */
  readonly buckets: number[];
}

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Latency buckets, s: a REST read answers in well under a millisecond, a goto with wait in seconds. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Loop lateness buckets, s: the 50 Hz loop's cycles should start within 2 ms of their schedule. */
const LATENESS_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1];

export class RobotMetrics implements AnswerCounter {
  readonly registry = new Registry();
  /** The last request answered, kept as parts (a request costs no object). */
  #lastSeries: Series | undefined;
  #lastUrl = '';
  #lastAt = 0;
  readonly #tally = new RequestTally();
  readonly #lateness: Histogram | undefined;
  readonly #refused: Counter<'reason'>;

  /**
   * `labels` go on every series (a classroom twin's `twin`). With `process`, prom-client's figures of the whole
   * process too (`process_*`, `nodejs_*`: memory, CPU, GC pauses, the event loop's delay since the last scrape); they
   * stay on for the process's life, so only a process that runs this one server asks for them.
   */
  constructor(
    sources: MetricSources,
    labels: Readonly<Record<string, string>> = {},
    opts: { readonly process?: boolean } = {},
  ) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ ...labels });
    if (opts.process) collectDefaultMetrics({ register: this.registry });
    // Counted by this class and read by the registry when it is scraped: a request costs a few array increments, not
    // prom-client's label hashing and checks (3 us of a 60 us goto under load: perf).
    this.registry.registerMetric(this.#tally.requestsMetric() as unknown as Metric);
    this.registry.registerMetric(this.#tally.latencyMetric() as unknown as Metric);
    this.#refused = refusedCounter(registers);
    new Gauge({
      name: 'poppy_primitives_running',
      help: 'attached primitives running now',
      registers,
      collect() {
        this.set(sources.runningPrimitives());
      },
    });
    const { realTimeFactor, physics, bus, shadow } = sources;
    if (shadow) {
      // The twin's clock against the wall's over two scrapes is its real-time factor (bench/pi-budget.ts).
      new Gauge({
        name: 'poppy_shadow_twin_seconds',
        help: "the shadow twin's clock: sim seconds it has stepped (it drops the time it re-anchors over)",
        registers,
        collect() {
          this.set(shadow().twinTime);
        },
      });
      totalCounter(
        registers,
        'poppy_shadow_busy_seconds_total',
        'wall time the twin spent on cycles',
        () => shadow().busy,
      );
      totalCounter(
        registers,
        'poppy_shadow_reanchored_total',
        'times the twin fell a second behind and was put back on the measured pose',
        () => shadow().reanchored,
      );
    }
    if (realTimeFactor)
      new Gauge({
        name: 'poppy_sim_real_time_factor',
        help: 'sim seconds per wall second over the last 2 s (1 = real time)',
        registers,
        collect() {
          this.set(realTimeFactor());
        },
      });
    if (physics) {
      totalCounter(registers, 'poppy_sim_physics_steps_total', 'physics steps taken', () => physics().steps);
      totalCounter(
        registers,
        'poppy_sim_physics_step_seconds_total',
        'wall time spent in physics steps; divided by poppy_sim_physics_steps_total: the mean step time',
        () => physics().stepWallTime,
      );
    }
    if (bus) {
      totalCounter(registers, 'poppy_bus_transactions_total', 'bus transactions', () => bus().transactions);
      totalCounter(registers, 'poppy_bus_timeouts_total', 'motor reply timeouts', () => bus().timeouts);
      this.#lateness = new Histogram({
        name: 'poppy_bus_loop_lateness_seconds',
        help: 'how late each sync-loop cycle began after its schedule',
        buckets: LATENESS_BUCKETS,
        registers,
      });
    }
  }

  /** Counts an answer no route gave (a 404, or a refusal of an unknown URL). */
  unmatched(method: string, status: number, elapsedMs: number, url: string): void {
    this.#count(this.#tally.series('unmatched', method, status), elapsedMs, url);
  }

  #count(series: Series, elapsedMs: number, url: string): void {
    series.count++;
    series.sum += elapsedMs / 1000;
    series.buckets[bucketIndex(elapsedMs / 1000)]!++;
    this.#lastSeries = series;
    this.#lastUrl = url;
    this.#lastAt = Date.now();
  }

  /**
   * Counts the answers of the route `path` (the app's per-route onSend hook, src/http/app.ts). A route answers
   * with one method and status most of the time: its last series is kept at hand, not looked up by a key per answer.
   */
  forRoute(path: string): RouteAnswerCounter {
    let last: Series | undefined;
    return (method, status, elapsedMs, url) => {
      if (last?.status !== status || last.method !== method) last = this.#tally.series(path, method, status);
      this.#count(last, elapsedMs, url);
    };
  }

  /** A request the edge refused (src/http/access.ts): its Host, its Origin or its token. */
  refused(reason: 'host' | 'origin' | 'token'): void {
    this.#refused.inc({ reason });
  }

  /** Real only: one sync-loop cycle began `lateMs` behind its schedule. */
  loopLate(lateMs: number): void {
    this.#lateness?.observe(lateMs / 1000);
  }

  lastRequest(): LastRequest | undefined {
    const series = this.#lastSeries;
    return (
      series && {
        method: series.method,
        url: redactToken(this.#lastUrl),
        status: series.status,
        at: this.#lastAt,
      }
    );
  }

  /** GET /metrics of this server alone. */
  route(): RouteSpec {
    return metricsRoute(() => this.registry.metrics());
  }
}

/** Requests refused at the edge, by reason (host, origin, token): a classroom's main port counts its own too. */
export function refusedCounter(registers: Registry[]): Counter<'reason'> {
  const counter = new Counter({
    name: 'poppy_http_refused_total',
    help: "requests refused before any handler: a Host not the server's, an Origin not allowed, a missing or wrong token",
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of ['host', 'origin', 'token']) counter.inc({ reason }, 0);
  return counter;
}

/** A counter mirroring a running total read at scrape time. */
function totalCounter(registers: Registry[], name: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers,
    collect() {
      const now = read();
      // A total that went back (a restarted bus process) starts over from its new value.
      this.inc(now >= seen ? now - seen : now);
      seen = now;
    },
  });
}

/** One registry's series as data (what a classroom's shard sends its main thread). */
export type MetricsJSON = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** Several servers' registries as one text (a classroom's main port): series keep their `twin` label. */
export async function mergedMetrics(registries: readonly Registry[]): Promise<string> {
  return mergeMetricsJSON(await Promise.all(registries.map((r) => r.getMetricsAsJSON())));
}

/**
 * Registries' series, read where they live (other threads too), as one text: equal series combine by each metric's
 * `aggregator` (a sum unless it says otherwise).
 */
export function mergeMetricsJSON(parts: readonly MetricsJSON[]): Promise<string> {
  return AggregatorRegistry.aggregate([...parts]).metrics();
}

export function metricsRoute(text: () => Promise<string>): RouteSpec {
  return {
    method: 'GET',
    path: '/metrics',
    beyondV4: true,
    produces: METRICS_CONTENT_TYPE,
    summary:
      "Prometheus metrics (text format): requests, latency, real-time factor, step time, the bus's counters",
    description:
      'Prometheus text exposition format 0.0.4. Series and their labels: docs/api.md, "Metrics". ' +
      'In a classroom, the main port merges every twin (label `twin`).',
    answer: z.string().meta({ description: 'Prometheus text format' }),
    handler: async () => new RawReply(METRICS_CONTENT_TYPE, await text()),
  };
}

/** The index in a Series' buckets of an answer that took `seconds`. */
function bucketIndex(seconds: number): number {
  let i = 0;
  while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
  return i;
}

type MetricValue = { value: number; labels: Record<string, string | number>; metricName?: string };

/**
 * A metric as prom-client's registry reads it: `get()` at each scrape, in the shape its own metrics give (the text
 * output and the classroom's aggregation read the same).
 */
function customMetric(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  values: () => MetricValue[],
) {
  const head = { name, help, type, aggregator: 'sum' } as const;
  return { ...head, get: () => ({ ...head, values: values() }) };
}

const REQUESTS = 'poppy_http_requests_total';
const LATENCY = 'poppy_http_request_duration_seconds';

/** The HTTP answers, tallied per route pattern, method and status, read out as a counter and a histogram. */
class RequestTally {
  readonly #series = new Map<string, Series>();

  series(route: string, method: string, status: number): Series {
    const key = `${status} ${method} ${route}`;
    let series = this.#series.get(key);
    if (!series) {
      const buckets = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
      series = { route, method, status, count: 0, sum: 0, buckets };
      this.#series.set(key, series);
    }
    return series;
  }

  requestsMetric() {
    return customMetric(
      REQUESTS,
      'HTTP requests answered, by route pattern, method and status',
      'counter',
      () => [...this.#series.values()].map((s) => ({ value: s.count, labels: labelsOf(s) })),
    );
  }

  latencyMetric() {
    const help = 'time from request to answer, by route pattern, method and status';
    return customMetric(LATENCY, help, 'histogram', () =>
      [...this.#series.values()].flatMap((s) => {
        const labels = labelsOf(s);
        let below = 0;
        const bucket = (le: number | string, i: number): MetricValue => {
          below += s.buckets[i]!;
          return { value: below, labels: { le, ...labels }, metricName: `${LATENCY}_bucket` };
        };
        return [
          ...LATENCY_BUCKETS.map((le, i) => bucket(le, i)),
          bucket('+Inf', LATENCY_BUCKETS.length),
          { value: s.sum, labels, metricName: `${LATENCY}_sum` },
          { value: s.count, labels, metricName: `${LATENCY}_count` },
        ];
      }),
    );
  }
}

function labelsOf(s: Series): Record<string, string> {
  return { route: s.route, method: s.method, status: String(s.status) };
}

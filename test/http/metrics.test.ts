/**
 * GET /metrics, read by a Prometheus text-format parser: requests by route and status with latency histograms, the
 * twin's real-time factor and step time, running primitives; on the real robot (bus emulator over a pseudo-terminal), the bus's
 * transactions, timeouts and loop lateness; in a classroom, every twin's series under its `twin` label.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { Classroom } from '../../src/classroom/classroom.ts';
import { startEmulator } from '../../src/emulator/emulator.ts';
import { METRICS_CONTENT_TYPE } from '../../src/http/metrics.ts';
import type { RealBackend } from '../../src/real/backend.ts';
import { createRobotServer } from '../../src/server.ts';
import { simServer, until } from '../helpers.ts';

function parse(text: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
}

function sample(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}) {
  const family = families.get(name);
  expect(family, name).to.not.equal(undefined);
  return family!.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

describe('GET /metrics (Prometheus text format)', function () {
  this.timeout(60000);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-metrics-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('sim: requests by route and status with latency, real-time factor, step time, running primitives', async () => {
    const s = await simServer('ergo-jr', { recordsDir: tmp });
    try {
      for (let i = 0; i < 3; i++) await s.get('/motors/m1/registers/present_position/value.json');
      expect((await s.get('/motors/m9/registers/present_position/value.json')).statusCode).to.equal(404);
      expect((await s.get('/no/such/path.json')).statusCode).to.equal(404);
      expect((await s.post('/robot.json', {})).statusCode).to.equal(405);
      await s.get('/primitives/dance/start.json');
      await s.advance(0.5);
      const res = await s.get('/metrics');
      expect(res.statusCode).to.equal(200);
      expect(res.headers['content-type']).to.equal(METRICS_CONTENT_TYPE);
      const m = parse(res.body);
      const route = '/motors/:motor/registers/:register/value.json';
      expect(sample(m, 'poppy_http_requests_total', { route, status: '200' })?.value).to.equal('3');
      expect(sample(m, 'poppy_http_requests_total', { route, status: '404' })?.value).to.equal('1');
      // Requests no route took: counted under "unmatched", each status apart.
      const unmatched = (status: string) =>
        sample(m, 'poppy_http_requests_total', { route: 'unmatched', status })?.value;
      expect(unmatched('404')).to.equal('1');
      expect(unmatched('405')).to.equal('1');
      expect(m.get('poppy_http_request_duration_seconds')!.type).to.equal('HISTOGRAM');
      // The parser folds a labelled histogram's series into one, so its per-route lines are read from the text.
      const line = (suffix: string, le = '') =>
        `poppy_http_request_duration_seconds_${suffix}{${le}route="${route}",method="GET",status="200"}`;
      expect(res.body).to.contain(`${line('count')} 3\n`);
      expect(res.body).to.contain(`${line('bucket', 'le="10",')} 3\n`);
      expect(res.body).to.contain(`${line('bucket', 'le="+Inf",')} 3\n`);
      // Cumulative: each bucket counts the answers at or under its bound, so the counts never fall.
      const buckets = [
        ...res.body.matchAll(
          /_bucket\{le="([^"]+)",route="\/motors\/:motor\/registers\/:register\/value\.json",method="GET",status="200"\} (\d+)/g,
        ),
      ];
      expect(buckets.map((b) => b[1])).to.deep.equal([
        ...[
          '0.0005',
          '0.001',
          '0.0025',
          '0.005',
          '0.01',
          '0.02',
          '0.05',
          '0.1',
          '0.25',
          '0.5',
          '1',
          '2.5',
          '5',
          '10',
        ],
        '+Inf',
      ]);
      const counts = buckets.map((b) => Number(b[2]));
      expect(counts).to.deep.equal([...counts].sort((a, b) => a - b));
      expect(sample(m, 'poppy_primitives_running')?.value).to.equal('1');
      const steps = Number(sample(m, 'poppy_sim_physics_steps_total')?.value);
      expect(steps).to.equal(s.simulation!.stats().steps).and.be.greaterThan(200);
      expect(Number(sample(m, 'poppy_sim_physics_step_seconds_total')?.value)).to.be.greaterThan(0);
      expect(m.has('poppy_sim_real_time_factor')).to.equal(true);
      expect(m.has('poppy_bus_transactions_total'), 'no bus on the twin').to.equal(false);
      // A second scrape counts on from the first, not from zero.
      await s.advance(0.1);
      const again = parse((await s.get('/metrics')).body);
      expect(Number(sample(again, 'poppy_sim_physics_steps_total')?.value)).to.equal(steps + 50);
    } finally {
      await s.close();
    }
  });

  it("the process's own figures only when asked (a process running one server), never twice", async () => {
    const plain = await simServer('ergo-jr', { recordsDir: tmp });
    const own = await simServer('ergo-jr', { recordsDir: tmp, processMetrics: true });
    try {
      expect((await plain.get('/metrics')).body).to.not.contain('nodejs_eventloop_lag');
      const m = parse((await own.get('/metrics')).body);
      expect(Number(sample(m, 'process_resident_memory_bytes')?.value)).to.be.greaterThan(10e6);
      expect(Number(sample(m, 'nodejs_eventloop_lag_max_seconds')?.value)).to.be.at.least(0);
      expect(m.get('nodejs_eventloop_lag_max_seconds')!.metrics).to.have.length(1);
    } finally {
      await plain.close();
      await own.close();
    }
  });

  it("real: the bus's transactions, timeouts and loop lateness", async () => {
    const emulator = await startEmulator({ robot: 'ergo-jr' });
    try {
      const server = await createRobotServer({
        backend: 'real',
        robot: 'ergo-jr',
        real: { serial: await emulator.addPort() },
        recordsDir: tmp,
      });
      try {
        const scrape = async () => parse((await server.app.inject({ url: '/metrics' })).body);
        const m = await until('a few loop cycles', async () => {
          const now = await scrape();
          return Number(sample(now, 'poppy_bus_loop_lateness_seconds')?.count ?? 0) >= 5 ? now : undefined;
        });
        expect(Number(sample(m, 'poppy_bus_transactions_total')?.value)).to.be.greaterThan(5);
        // The timeouts mirror the motors' health counters (a starved machine may have some).
        const timeouts = () =>
          [...(server.backend as RealBackend).health.values()].reduce((n, h) => n + h.timeouts, 0);
        const before = timeouts();
        const counted = Number(sample(await scrape(), 'poppy_bus_timeouts_total')?.value);
        expect(counted).to.be.within(before, timeouts());
        expect(m.get('poppy_bus_loop_lateness_seconds')!.type).to.equal('HISTOGRAM');
        expect(m.has('poppy_sim_real_time_factor'), 'no sim on the real robot').to.equal(false);
      } finally {
        await server.close();
      }
    } finally {
      await emulator.close();
    }
  });

  it("classroom: the main port merges every twin's series under its twin label", async () => {
    const room = await Classroom.create({
      twins: [
        { name: 'ana', robot: 'ergo-jr', port: 0 },
        { name: 'ben', robot: 'ergo-jr', port: 0 },
      ],
      speed: 'manual',
      recordsDir: tmp,
    });
    try {
      await room.app.inject({ url: '/twins/ana/motors/list.json' });
      await room.app.inject({ url: '/twins/ana/motors/list.json' });
      await room.app.inject({ url: '/twins/ben/motors/list.json' });
      await room.advance(0.2);
      const m = parse((await room.app.inject({ url: '/metrics' })).body);
      const route = '/motors/list.json';
      expect(sample(m, 'poppy_http_requests_total', { route, twin: 'ana' })?.value).to.equal('2');
      expect(sample(m, 'poppy_http_requests_total', { route, twin: 'ben' })?.value).to.equal('1');
      for (const twin of ['ana', 'ben'])
        expect(sample(m, 'poppy_sim_physics_steps_total', { twin })?.value, twin).to.equal('100');
      expect(sample(m, 'poppy_classroom_twins', { ready: 'true' })?.value).to.equal('2');
      expect(m.has('process_resident_memory_bytes')).to.equal(true);
      // Each twin's own port has its own series only.
      const own = parse((await room.twins.get('ben')!.server.app.inject({ url: '/metrics' })).body);
      expect(own.get('poppy_http_requests_total')!.metrics.every((s) => s.labels?.twin === 'ben')).to.equal(
        true,
      );
    } finally {
      await room.close();
    }
  });
});

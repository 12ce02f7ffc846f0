/**
 * Ten thousand random start/pause/resume/stop calls across primitives (seeded), some over HTTP, with sim time
 * advancing and REST gotos playing: no primitive stuck, no exception escaping, lists consistent.
 */
import { expect } from 'chai';
import type { LightMyRequestResponse } from 'fastify';
import { mulberry32 } from '../../src/core/prng.ts';
import type { Primitive } from '../../src/primitives/primitive.ts';
import { json, simServer, type TestServer } from '../helpers.ts';
import { Probe, recordingLogger } from './probes.ts';

const OPS = ['start', 'stop', 'pause', 'resume'] as const;

/** Advances sim time until `promise` settles (or `max` seconds). */
async function settle<T>(s: TestServer, promise: Promise<T>, max = 30): Promise<T> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let t = 0; t < max && !done; t += 0.05) await s.advance(0.05);
  await new Promise((r) => setImmediate(r));
  expect(done, 'did not settle').to.equal(true);
  return promise;
}

for (const [robot, calls] of [
  ['ergo-jr', 10_000],
  ['torso', 2_000],
] as const) {
  describe(`primitives: stress on the ${robot}`, function () {
    this.timeout(60_000);

    it(`${calls} random lifecycle calls leave nothing stuck and the lists consistent`, async () => {
      const log = recordingLogger();
      const s = await simServer(robot, { logger: log, seed: 3 });
      const unhandled: unknown[] = [];
      const onUnhandled = (e: unknown) => void unhandled.push(e);
      process.on('unhandledRejection', onUnhandled);
      try {
        const ctx = s.primitives.context;
        const probes = [
          new Probe(ctx, 'probe_fast'),
          new Probe(ctx, 'probe_slow', { setupSeconds: 0.3, teardownSeconds: 0.2 }),
          new Probe(ctx, 'probe_fail_update', { failIn: 'update' }),
          new Probe(ctx, 'probe_fail_setup', { failIn: 'setup', setupSeconds: 0.05 }),
          new Probe(ctx, 'probe_fail_teardown', { failIn: 'teardown', teardownSeconds: 0.05 }),
          new Probe(ctx, 'probe_once', { oneShot: 0.1 }),
        ];
        for (const p of probes) s.primitives.attach(p);
        for (const m of s.robot.motors)
          await s.post(`/motors/${m.name}/registers/compliant/value.json`, false);
        const all: Primitive[] = s.primitives.list();
        const rand = mulberry32(12345);
        const pending: Promise<unknown>[] = [];
        const answers: LightMyRequestResponse[] = [];
        const tally = { start: 0, stop: 0, pause: 0, resume: 0, conflicts: 0, http: 0, gotos: 0 };

        for (let i = 0; i < calls; i++) {
          const p = all[Math.floor(rand() * all.length)]!;
          const op = OPS[Math.floor(rand() * OPS.length)]!;
          tally[op]++;
          if (rand() < 0.1) {
            tally.http++;
            pending.push(s.get(`/primitives/${p.name}/${op}.json`).then((res) => answers.push(res)));
          } else {
            const before = p.state;
            let threw: unknown;
            try {
              if (op === 'start' || op === 'stop') pending.push(p[op]());
              else p[op]();
            } catch (err) {
              threw = err;
            }
            // The state rules of docs/reference/contract.md 5, call by call.
            const expected = {
              start: before === 'stopped' ? 'running' : before,
              stop: 'stopped',
              pause: before === 'stopped' ? 'stopped' : 'paused',
              resume: before === 'paused' ? 'running' : before,
            }[op];
            expect(p.state, `${op} of ${p.name} when ${before}`).to.equal(expected);
            const shouldThrow =
              (op === 'pause' && before === 'stopped') || (op === 'resume' && before !== 'paused');
            if (shouldThrow) {
              expect(threw, `${op} of ${p.name} when ${before}`).to.have.property('code', 'conflict');
              tally.conflicts++;
            } else expect(threw).to.equal(undefined);
          }
          if (i % 10 === 9) await s.advance(0.02 + rand() * 0.04);
          if (i % 250 === 0) {
            // Moves playing meanwhile (409 when a primitive left the motor compliant).
            const m = s.robot.motors[Math.floor(rand() * s.robot.motors.length)]!;
            tally.gotos++;
            pending.push(
              s
                .post(`/motors/${m.name}/goto.json`, {
                  position: rand() * 40 - 20,
                  duration: 0.5 + rand(),
                  wait: true,
                })
                .then((res) => answers.push(res)),
            );
          }
          if (i % 1000 === 999) {
            const running = json(await s.get('/primitives/running/list.json')).primitives;
            expect(running).to.deep.equal(all.filter((x) => x.running).map((x) => x.name));
          }
        }

        // Wind down: everything stops, every call answers.
        await settle(s, Promise.all(all.map((p) => p.stop())));
        await settle(s, Promise.all(pending));
        for (const res of answers) expect(res.statusCode, res.body).to.be.oneOf([200, 409]);
        for (const p of all) {
          expect(p.state, p.name).to.equal('stopped');
          expect(p.busy, `${p.name} busy`).to.equal(false);
        }
        expect(s.primitives.runningList()).to.deep.equal([]);
        expect(json(await s.get('/primitives/running/list.json'))).to.deep.equal({
          primitives: [],
          running_primitives: [],
        });
        expect(s.primitives.activeCount()).to.equal(0);
        for (const p of probes) {
          expect(p.maxLive, `${p.name} ran two setups at once`).to.equal(1);
          expect(p.live, p.name).to.equal(0);
          expect(p.teardowns, p.name).to.equal(p.setups);
        }
        expect(unhandled).to.deep.equal([]);
        const unexpected = log.lines.filter(
          (l) => l.level === 'error' && !/primitive probe_fail_/.test(l.msg),
        );
        expect(unexpected).to.deep.equal([]);
        expect(tally.conflicts).to.be.greaterThan(calls / 10);

        // Nothing stuck: each loop primitive runs again and its time moves.
        for (const p of [
          probes[0]!,
          ...all.filter((x) => x.rate !== undefined && !x.name.startsWith('probe')),
        ]) {
          await p.start();
          await s.advance(0.5);
          expect(p.state, p.name).to.equal('running');
          expect(p.elapsed, p.name).to.be.greaterThan(0.3);
          expect(p.lastError, p.name).to.equal(undefined);
          await settle(s, p.stop());
        }
      } finally {
        process.off('unhandledRejection', onUnhandled);
        await s.close();
      }
    });
  });
}

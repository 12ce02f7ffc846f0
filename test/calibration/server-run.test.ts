/**
 * The server's calibration run (src/calibration/server-run.ts) on the sim twin at its stepped clock, its fit stubbed:
 * a whole run of one joint held, then handed back, the file written into its folder and loadable; the guard's
 * refusal of the first joint leaves everything as it was; a stop during the fit writes nothing. The fit's worker
 * thread itself: its failure and its stop (a whole fit takes minutes: docs/calibration.md has a by-hand run's).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadCalibration } from '../../src/config/calibration.ts';
import { conflict } from '../../src/core/errors.ts';
import { defaultMotorCalibration } from '../../src/calibration/defaults.ts';
import { type FitJob, fitInWorker } from '../../src/calibration/fit-thread.ts';
import { planTouch } from '../../src/calibration/touch.ts';
import { type MotorLog, SAMPLE, runPlan } from '../../src/calibration/run.ts';
import {
  CalibrationRun,
  type CalibrationRunOptions,
  type Fitter,
  excitationPath,
} from '../../src/calibration/server-run.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { type TestServer, simServer, standStill } from '../helpers.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-server-run-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A log of `motor` as a perfect servo would give it: every goal reached at once. */
async function perfectLog(motor: string): Promise<MotorLog> {
  const config = await loadRobotConfig('ergo-jr');
  const { pose, ex } = runPlan(config, motor);
  const t: number[] = [];
  for (let k = 0; k < Math.round(ex.duration / SAMPLE); k++) t.push(k * SAMPLE);
  const command = t.map((s) => ex.at(s));
  const id = config.motors.find((m) => m.name === motor)!.id;
  return {
    motor,
    id,
    pose,
    t,
    command,
    position: command.map((c) => c.goal),
    segments: ex.segments,
    start: ex.start,
  };
}

describe('the calibration run of a server', function () {
  this.timeout(120000);
  let s: TestServer;
  const calls: string[] = [];
  const run = (dir: string, more: Partial<CalibrationRunOptions> = {}) =>
    new CalibrationRun({
      config: s.config,
      robot: s.robot,
      bus: s.robot.backend.bus,
      clock: s.robot.clock,
      port: '/dev/test',
      shadow: { pause: () => calls.push('pause'), resume: () => calls.push('resume') },
      busy: () => [],
      dir,
      onClose: 'hold',
      log: () => {},
      // The twin's choice of swings runs in a worker in wall time (clearance.test.ts tests it): here, the widest.
      planSwings: async (_robot, motors) =>
        new Map(motors.map((m) => [m, { amplitudeDeg: 20, refused: [] }])),
      // The table's touches are planned in a worker too (touch.test.ts tests them): here, none unless a test says.
      planTouches: async () => [],
      ...more,
    });
  /** Advances the twin until the run leaves `state`. */
  const past = async (r: CalibrationRun, state: string) => {
    for (let i = 0; i < 200 && r.status().state === state; i++) await s.advance(0.5);
  };
  beforeEach(async () => {
    calls.length = 0;
    s = await simServer('ergo-jr');
    await standStill(s);
  });
  afterEach(() => s.close());

  it('runs a joint with the robot held, hands it back, fits and writes a loadable file in its folder', async () => {
    const dir = path.join(tmp, 'done');
    const fitted: string[] = [];
    const fit: Fitter = async (job, onFitted) => {
      expect(job.robot).to.equal(s.config.source);
      for (const log of job.logs) {
        fitted.push(`${log.motor} ${log.t.length}`);
        onFitted(log.motor, { ...defaultMotorCalibration(s.config.motors[2]!), residualRmsDeg: 0.5 }, 7);
      }
    };
    const r = run(dir, { fit });
    const started = await r.start(['m3']);
    expect(started).to.include({ state: 'running', motor: 'm3' });
    expect(s.robot.holder?.reason).to.equal('a calibration run holds the robot');
    await past(r, 'running');
    expect(s.robot.holder, 'handed back once the run is over').to.equal(undefined);
    await past(r, 'fitting');
    const done = r.status();
    expect(done.state, JSON.stringify(done)).to.equal('done');
    expect(fitted).to.deep.equal(['m3 1900']);
    expect(calls).to.deep.equal(['pause', 'resume']);
    expect(done.progress[0]).to.equal('m3: 0 % of 38 s');
    expect(done.progress).to.include('m3: run done, 1900 samples');
    expect(done.progress.at(-2)).to.equal(
      'm3: offset 0 deg, residual 0.5 deg RMS, 7 simulations; not identifiable: none',
    );
    expect(done.file).to.match(new RegExp(`^${dir}/ergo-jr-\\d{8}T\\d{6}Z\\.json$`));
    expect(done.load).to.include(`--calibration=${done.file}`);
    const cal = await loadCalibration(done.file!, s.config);
    expect(cal.motors.m3!.residualRmsDeg).to.equal(0.5);
    expect(cal.bus.port).to.equal('/dev/test');
    // --on-close=hold: stiff where the run left it, and free to move again.
    expect(s.robot.motor('m3').commands.compliant).to.equal(false);
    expect((await s.post('/motors/m3/goto.json', { position: 0, duration: 0.5 })).statusCode).to.equal(200);
  });

  it("after the joints, the table's touches: one skipped and said, one run on the bus, its log to the fit", async () => {
    const plan = await planTouch(s.config, await loadUrdf(s.config.urdfPath), { motor: 'm2', direction: -1 });
    if ('refused' in plan) expect.fail(plan.refused);
    let job: FitJob | undefined;
    const fit: Fitter = async (j, _onFitted, _signal, onLine) => {
      job = j;
      onLine?.('offsets from the table (deg): m2 1 +- 0.5');
    };
    const r = run(path.join(tmp, 'touched'), {
      fit,
      planTouches: async () => [{ refused: 'm6 meets nothing within its limits from that pose' }, plan],
    });
    await r.start(['m3']);
    await past(r, 'running');
    await past(r, 'fitting');
    const done = r.status();
    expect(done.state, JSON.stringify(done)).to.equal('done');
    // First what the arm will do, and that the table is to be kept clear.
    const touching = done.progress.indexOf(
      '2 touches of the table: the arm lowered gently onto it and pressed (keep the table clear within its reach)',
    );
    expect(touching, done.progress.join('\n')).to.be.above(-1);
    expect(done.progress[touching + 1]).to.equal(
      'touch 1/2: skipped, m6 meets nothing within its limits from that pose',
    );
    const said = done.progress.find((l) => l.startsWith('touch 2/2: m2 put the tip on the table ('));
    expect(said, done.progress.join('\n')).to.not.equal(undefined);
    expect(done.progress).to.include('offsets from the table (deg): m2 1 +- 0.5');
    expect(job!.logs.map((l) => l.motor)).to.deep.equal(['m3']);
    expect(job!.touches).to.have.length(1);
    // The twin pressed its tip onto its table: every reading while pressing, m2 held short of its goal.
    const touch = job!.touches![0]!;
    expect(touch.samples.length).to.be.at.least(10);
    for (const reading of touch.samples) expect(reading.m2! - plan.target).to.be.at.least(3);
  });

  it('a run asked without touches does none', async () => {
    let job: FitJob | undefined;
    let planned = false;
    const r = run(path.join(tmp, 'untouched'), {
      fit: async (j) => {
        job = j;
      },
      planTouches: async () => {
        planned = true;
        return [];
      },
    });
    await r.start(['m3'], false);
    await past(r, 'running');
    await past(r, 'fitting');
    expect(r.status().state).to.equal('done');
    expect(planned).to.equal(false);
    expect(job!.touches).to.deep.equal([]);
  });

  it('a joint every swing of which touches is skipped and said; a narrowed one says what it avoided', async () => {
    const fitted: string[] = [];
    let chirpSwing = 0;
    const fit: Fitter = async (job) => {
      fitted.push(...job.logs.map((l) => l.motor));
      for (const log of job.logs)
        log.segments.forEach(([name, from, to]) => {
          if (!name.startsWith('chirp')) return;
          for (const [k, t] of log.t.entries())
            if (t >= from && t < to)
              chirpSwing = Math.max(chirpSwing, Math.abs(log.command[k]!.goal - log.start));
        });
    };
    const touch = { links: ['tip', 'table'] as const, time: 9.7 };
    const r = run(path.join(tmp, 'skipped'), {
      fit,
      planSwings: async () =>
        new Map([
          [
            'm2',
            {
              amplitudeDeg: 14,
              chirpAmplitudeDeg: 7,
              refused: [{ ...touch, amplitudeDeg: 20 }],
              unsteady: [{ chirpAmplitudeDeg: 14, spreadDeg: 0.3 }],
            },
          ],
          ['m3', { amplitudeDeg: null, refused: [4, 8, 14, 20].map((a) => ({ ...touch, amplitudeDeg: a })) }],
        ]),
    });
    await r.start(['m3', 'm2']);
    await past(r, 'running');
    await past(r, 'fitting');
    const done = r.status();
    expect(done.progress).to.include(
      "m3: skipped, every swing touches; its figures stay the model's defaults",
    );
    expect(done.progress).to.include(
      "m2: a swing of +-20 deg would bring tip and table into contact 9.7 s in (the twin's prediction)",
    );
    // The chirp the plan narrowed is the one that ran, and the run said why.
    expect(done.progress).to.include(
      "m2: a chirp of +-14 deg would not replay (the twin's prediction moves 0.30 deg RMS with the other joints " +
        '0.1 deg elsewhere): narrowed',
    );
    expect(chirpSwing).to.be.within(6.9, 7);
    expect(fitted).to.deep.equal(['m2']);
  });

  it('a stop during the fit writes nothing', async () => {
    const dir = path.join(tmp, 'stopped');
    const fit: Fitter = (_job, _onFitted, signal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
    const r = run(dir, { fit });
    await r.start(['m6']);
    await past(r, 'running');
    expect(r.status().state).to.equal('fitting');
    const stopped = await r.stop();
    expect(stopped.state).to.equal('stopped');
    expect(stopped.progress.at(-1)).to.equal('stopped during the fit: nothing written');
    expect(existsSync(dir) ? readdirSync(dir) : []).to.deep.equal([]);
  });

  it("the guard's refusal of the first joint leaves the robot free and the status as it was", async () => {
    const paths: string[] = [];
    const guard = {
      check: async (p: { what: string }) => {
        paths.push(p.what);
        throw conflict('the guard predicts tip touching table 1.2 s into this move');
      },
    };
    const r = run(path.join(tmp, 'guarded'), { guard });
    const err = await r.start(['m2']).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.match(/tip touching table/);
    expect(paths).to.deep.equal([
      'the calibration run of m2 (its start pose and the first 4.5 s of its excitation)',
    ]);
    expect(r.status().state).to.equal('idle');
    expect(s.robot.holder).to.equal(undefined);
    expect(calls).to.deep.equal(['pause', 'resume']);
  });

  it("the guard's path: the run's pose at once, then the joint's holds below, at and above its centre", () => {
    const p = excitationPath(s.config, s.robot.motors, 'm3');
    const m3 = s.robot.motor('m3');
    const { ex } = runPlan(s.config, 'm3');
    const at = (t: number) => p.goalsAt(t, new Map()).get(m3)!;
    expect(p.duration).to.equal(6);
    expect(at(0)).to.be.closeTo(m3.toUser(ex.start), 1e-9);
    expect([at(2), at(3.5), at(5)].map((v) => Math.round(Math.abs(v - at(0))))).to.deep.equal([20, 0, 20]);
  });

  it('refuses a second run, an unknown motor and a robot on the move', async () => {
    const r = run(path.join(tmp, 'refused'));
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: Error) => e.message,
      );
    expect(await refusal(r.start(['m7']))).to.equal('unknown motor "m7"');
    expect(await refusal(r.start(['m1', 'm1']))).to.equal('motor "m1" is listed twice');
    expect((await s.post('/motors/m1/goto.json', { position: 10, duration: 1 })).statusCode).to.equal(200);
    expect(await refusal(r.start(['m1']))).to.equal('the robot is moving');
    await s.advance(1.1);
    await r.start(['m1']);
    expect(await refusal(r.start(['m2']))).to.equal('a calibration run is in progress');
    await r.stop();
    expect(r.status().state).to.equal('stopped');
    expect(s.robot.holder).to.equal(undefined);
  });
});

describe("the fit's worker thread", function () {
  this.timeout(60000);

  it('says why a fit failed', async () => {
    const log = await perfectLog('m3');
    const noApproach = { ...log, segments: log.segments.filter(([n]) => !n.startsWith('approach')) };
    const err = await fitInWorker(
      { robot: 'ergo-jr', logs: [noApproach] },
      () => {},
      new AbortController().signal,
    )
      .then(() => undefined)
      .catch((e: unknown) => e as Error);
    expect(err?.message).to.match(/^the fit failed: Error: m3: the log has no approach pair/);
  });

  it('a stop ends it at once', async () => {
    const stop = new AbortController();
    const fitted: string[] = [];
    const fitting = fitInWorker(
      { robot: 'ergo-jr', logs: [await perfectLog('m3')] },
      (m) => fitted.push(m),
      stop.signal,
    );
    // The answer does not wait for the worker: it is terminated, booting or fitting, and the promise rejects at once.
    const t = performance.now();
    stop.abort();
    const err = await fitting.then(() => undefined).catch((e: unknown) => e as Error);
    expect(err?.name).to.equal('AbortError');
    expect(performance.now() - t).to.be.below(500);
    expect(fitted).to.deep.equal([]);
  });
});

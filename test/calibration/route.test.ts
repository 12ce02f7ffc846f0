/**
 * POST /calibration/run.json on a `--backend=real --shadow` server over the bus emulator on a real pseudo-terminal,
 * from outside over HTTP: refused on the sim backend and without --shadow (409, with a tip); 400 for an unknown motor;
 * 409 while a goto or a primitive moves the robot; a run of one motor holds the robot (every move 409 with a tip
 * naming the status and stop routes), drives its servo and pauses the shadow comparison; stopped, it ends at once,
 * the servos left compliant (--on-close) and nothing written. No full run here: 38 s of robot time and a minute of
 * fit per motor (docs/calibration.md gives a by-hand run's figures). Wall time is inherent: waits are bounded polls.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { simServer, until } from '../helpers.ts';
import { createRobotServer } from '../../src/server.ts';
import { EmulatorProcess, type ShadowRig, startShadowRig } from '../shadow/emulator-process.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-calibration-route-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

interface RunStatus {
  state: string;
  motors: string[];
  motor: string | null;
  progress: string[];
  file: string | null;
  error: string | null;
  load: string | null;
}

const MOTORS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];

describe('POST /calibration/run.json', function () {
  this.timeout(120000);

  it('is refused on the sim backend: 409 with a tip to start a real server with --shadow', async () => {
    const s = await simServer('ergo-jr');
    try {
      for (const [method, url] of [
        ['POST', '/calibration/run.json'],
        ['GET', '/calibration/run.json'],
        ['POST', '/calibration/run/stop.json'],
      ] as const) {
        const res = await s.app.inject({ method, url, payload: method === 'POST' ? {} : undefined });
        expect(res.statusCode, res.body).to.equal(409);
        const body = JSON.parse(res.body) as { error: string; tip: string };
        expect(body.error).to.match(/identifies a real robot/);
        expect(body.tip).to.match(/--backend=real --shadow/);
      }
    } finally {
      await s.close();
    }
  });

  it('is refused on the real backend without --shadow: 409 saying how to start it', async () => {
    const { emulator, device } = await EmulatorProcess.start(['--robot', 'ergo-jr']);
    try {
      const plain = await createRobotServer({ backend: 'real', robot: 'ergo-jr', real: { serial: device } });
      try {
        const res = await plain.app.inject({ method: 'POST', url: '/calibration/run.json', payload: {} });
        expect(res.statusCode, res.body).to.equal(409);
        const body = JSON.parse(res.body) as { error: string; tip: string };
        expect(body.error).to.equal('a calibration run needs shadow mode');
        expect(body.tip).to.match(/--backend=real --shadow/);
      } finally {
        await plain.close();
      }
    } finally {
      await emulator.close();
    }
  });

  describe('on the real backend over the emulator', () => {
    let rig: ShadowRig;
    const call = (method: string, p: string, body?: unknown) => rig.call(method, p, body);
    const status = async () => (await call('GET', '/calibration/run.json')).body as unknown as RunStatus;
    const calibrations = path.join(tmp, 'records', 'calibrations');

    before(async function () {
      this.timeout(60000);
      rig = await startShadowRig({ recordsDir: path.join(tmp, 'records') });
    });
    after(() => rig?.close());

    it('answers idle before any run, 400 for an unknown motor or a bad body', async () => {
      expect(await status()).to.include({ state: 'idle', file: null });
      const unknown = await call('POST', '/calibration/run.json', { motors: ['m3', 'm9'] });
      expect(unknown.status, JSON.stringify(unknown.body)).to.equal(400);
      expect(unknown.body.error).to.equal('unknown motor "m9"');
      expect(unknown.body.tip).to.include('m1, m2, m3, m4, m5, m6');
      for (const body of [{ motors: 'm3' }, { motors: [] }, { motors: [3] }]) {
        const res = await call('POST', '/calibration/run.json', body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error, JSON.stringify(res.body)).to.match(/^motors/);
      }
      const touch = await call('POST', '/calibration/run.json', { motors: ['m3'], touch: 'yes' });
      expect(touch.status, JSON.stringify(touch.body)).to.equal(400);
      expect(touch.body.error, JSON.stringify(touch.body)).to.match(/^touch/);
      expect((await status()).state).to.equal('idle');
    });

    it('is refused while a goto or a primitive moves the robot', async () => {
      expect((await call('POST', '/motors/m1/registers/compliant/value.json', false)).status).to.equal(200);
      const goto = await call('POST', '/motors/m1/goto.json', { position: 20, duration: 2, wait: false });
      expect(goto.status).to.equal(200);
      const refused = await call('POST', '/calibration/run.json', { motors: ['m3'] });
      expect(refused.status, JSON.stringify(refused.body)).to.equal(409);
      expect(refused.body.error).to.equal('the robot is moving');
      expect(refused.body.details).to.equal('a goto of m1');
      // A newer, short goto takes m1 over; waited for, the robot is at rest after it.
      const ended = await call('POST', '/motors/m1/goto.json', { position: 20, duration: 0.2, wait: true });
      expect(ended.status).to.equal(200);
      expect((await call('GET', '/primitives/dance/start.json')).status).to.equal(200);
      const busy = await call('POST', '/calibration/run.json', {});
      expect(busy.status).to.equal(409);
      expect(busy.body.details).to.include('primitive "dance"');
      expect((await call('GET', '/primitives/dance/stop.json')).status).to.equal(200);
      await until('no primitive running', async () => {
        const running = (await call('GET', '/primitives/running/list.json')).body.primitives as string[];
        return running.length === 0 ? true : undefined;
      });
      expect((await status()).state).to.equal('idle');
    });

    it('holds the robot while it runs, drives the motor, and stops at once: servos compliant, nothing written', async () => {
      const started = await call('POST', '/calibration/run.json', { motors: ['m3'] });
      expect(started.status, JSON.stringify(started.body)).to.equal(202);
      const s0 = started.body as unknown as RunStatus;
      expect(s0).to.include({ state: 'running', motor: 'm3', error: null });
      expect(s0.motors).to.deep.equal(['m3']);
      expect(s0.file).to.match(new RegExp(`^${calibrations}/ergo-jr-\\d{8}T\\d{6}Z\\.json$`));

      // Every move is refused with a tip naming the status and stop routes; the LED is not a move.
      const moves: [string, string, unknown][] = [
        ['POST', '/motors/m1/goto.json', { position: 10, duration: 1 }],
        ['POST', '/motors/goto.json', { motors: ['m1'], positions: [10], duration: 1 }],
        ['POST', '/motors/m2/registers/compliant/value.json', true],
        ['POST', '/motors/m2/registers/goal_position/value.json', 10],
        ['POST', '/motors/m2/registers/torque_limit/value.json', 50],
        ['GET', '/primitives/dance/start.json', undefined],
        ['POST', '/ik/chain/goto.json', { xyz: '0,-0.1,0.15', duration: 1 }],
        ['POST', '/calibration/run.json', { motors: ['m2'] }],
      ];
      for (const [method, url, body] of moves) {
        const res = await call(method, url, body);
        expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).to.equal(409);
        expect(res.body.tip, url).to.match(
          /GET \/calibration\/run\.json.*POST \/calibration\/run\/stop\.json/,
        );
      }
      expect((await call('POST', '/motors/m2/registers/led/value.json', 'green')).status).to.equal(200);

      // The run's progress: the CLI's lines, once the settle is over.
      const first = await until(
        'the first progress line',
        async () => (await status()).progress[0],
        10000,
        50,
      );
      expect(first).to.equal('m3: 0 % of 38 s');
      // Its writes stand (the server's loop writes nothing meanwhile): m3 goes to its first hold, 20 degrees off.
      await until(
        'm3 driven to its hold below',
        async () => {
          const at = (await call('GET', '/motors/m3/registers/present_position/value.json')).body
            .present_position as number;
          return Math.abs(at) > 12 ? true : undefined;
        },
        5000,
        50,
      );
      // The twin's comparison is paused: no event raised by an uncalibrated twin's mismatch.
      const shadow = (await call('GET', '/shadow/status.json')).body as {
        motors: { state: string }[];
        events: unknown[];
      };
      expect(shadow.motors.map((m) => m.state)).to.deep.equal(MOTORS.map(() => 'paused'));

      const t = performance.now();
      const stopped = await call('POST', '/calibration/run/stop.json');
      const stopMs = performance.now() - t;
      expect(stopped.status).to.equal(200);
      const s1 = stopped.body as unknown as RunStatus;
      expect(s1).to.include({ state: 'stopped', motor: null, error: null, load: null });
      expect(s1.progress.at(-1)).to.equal('stopped: servos left compliant, nothing written');
      console.log(`      stopped in ${Math.round(stopMs)} ms`);
      expect(stopMs, 'the run ends at once').to.be.below(1000);

      // Servos left compliant: the Robot's commands and the twin, which takes every write the servos take.
      await until('every motor compliant in the twin', async () => {
        const now = (await call('GET', '/shadow/status.json')).body as { motors: { state: string }[] };
        return now.motors.every((m) => m.state === 'compliant') ? true : undefined;
      });
      const compliant = (await call('GET', '/motors/registers/compliant/list.json')).body.compliant as Record<
        string,
        boolean
      >;
      expect(Object.values(compliant)).to.deep.equal(MOTORS.map(() => true));
      // Nothing written, and the robot is free again.
      expect(existsSync(calibrations) ? readdirSync(calibrations) : []).to.deep.equal([]);
      expect((await call('POST', '/motors/m1/registers/compliant/value.json', false)).status).to.equal(200);
      const goto = await call('POST', '/motors/m1/goto.json', { position: 0, duration: 0.5, wait: true });
      expect(goto.status, JSON.stringify(goto.body)).to.equal(200);
      // Stopping again changes nothing.
      const again = await call('POST', '/calibration/run/stop.json');
      expect(again.body).to.deep.equal(stopped.body);
    });
  });
});

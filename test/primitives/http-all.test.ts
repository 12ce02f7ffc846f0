/**
 * From outside over HTTP: every built-in primitive of each robot starts, pauses, resumes and stops as docs/reference/contract.md 5
 * says, and its effect shows in the motors' registers.
 */
import { expect } from 'chai';
import { json, simServer, untilAnswered, type TestServer } from '../helpers.ts';

const EXPECTED: Record<string, string[]> = {
  'ergo-jr': [
    'safe_power_up',
    'dance',
    'base_posture',
    'rest_posture',
    'curious_posture',
    'tetris_posture',
    'tinsel_demo',
    'stubborn_demo',
    'chicken_demo',
    'puzzel_demo',
  ],
  torso: [
    'limit_torque',
    'temperature_monitoring',
    'dance_beat_motion',
    'init_position',
    'upper_body_idle_motion',
    'head_idle_motion',
    'arms_turn_compliant',
    'arms_copy_motion',
  ],
  humanoid: [
    'temperature_monitoring',
    'stand_position',
    'sit_position',
    'limit_torque',
    'dance_beat_motion',
    'upper_body_idle_motion',
    'head_idle_motion',
    'arms_turn_compliant',
    'arms_copy_motion',
  ],
};

/** What a REST client can see of the motors. */
async function snapshot(s: TestServer) {
  const motors = json(await s.get('/robot.json')).motors as Record<string, unknown>[];
  return motors.map((m) => ({
    name: m.name as string,
    position: m.present_position as number,
    registers: JSON.stringify([m.compliant, m.torque_limit, m.moving_speed, m.led ?? null, m.pid ?? null]),
  }));
}

describe('primitives: every built-in over HTTP', function () {
  for (const robot of Object.keys(EXPECTED)) {
    it(`${robot}: start, pause, resume, stop answer as docs/reference/contract.md 5 says and each one has a visible effect`, async () => {
      const s = await simServer(robot);
      try {
        const names = json(await s.get('/primitives/list.json')).primitives as string[];
        expect(names).to.deep.equal(EXPECTED[robot]);
        const background = robot === 'ergo-jr' ? [] : ['temperature_monitoring'];
        expect(json(await s.get('/primitives/running/list.json')).primitives).to.deep.equal(background);
        // Stiff first, as a user would (dance_beat_motion does not stiffen motors itself).
        for (const m of s.robot.motors)
          await s.post(`/motors/${m.name}/registers/compliant/value.json`, false);
        await s.advance(0.3);
        for (const name of names) {
          const before = await snapshot(s);
          expect(json(await s.get(`/primitives/${name}/start.json`)), name).to.deep.equal({
            [name]: 'started',
          });
          expect(json(await s.get('/primitives/running/list.json')).primitives, name).to.include(name);
          await s.advance(1.2);
          const after = await snapshot(s);
          const moved = Math.max(...after.map((m, i) => Math.abs(m.position - before[i]!.position)));
          const changed = after.some((m, i) => m.registers !== before[i]!.registers);
          if (name !== 'temperature_monitoring')
            expect(moved > 1 || changed, `${name} has no visible effect`).to.equal(true);
          const running = s.primitives.get(name).running;
          const pause = await s.get(`/primitives/${name}/pause.json`);
          if (running) {
            expect(pause.json(), name).to.deep.equal({ [name]: 'paused' });
            expect((await s.get(`/primitives/${name}/pause.json`)).statusCode).to.equal(200);
            expect(json(await s.get('/primitives/running/list.json')).primitives, name).to.include(name);
            await s.advance(0.2);
            expect(json(await s.get(`/primitives/${name}/resume.json`)), name).to.deep.equal({
              [name]: 'resumed',
            });
            expect((await s.get(`/primitives/${name}/resume.json`)).statusCode, name).to.equal(409);
          } else {
            // one-shot postures that already ended
            expect(pause.statusCode, name).to.equal(409);
          }
          const stop = await untilAnswered(s, s.get(`/primitives/${name}/stop.json`), 5, 0.05);
          expect(stop.json(), name).to.deep.equal({ [name]: 'stopped' });
          expect((await s.get(`/primitives/${name}/resume.json`)).statusCode, name).to.equal(409);
          expect((await s.get(`/primitives/${name}/pause.json`)).statusCode, name).to.equal(409);
          expect(json(await s.get(`/primitives/${name}/stop.json`)), name).to.deep.equal({
            [name]: 'stopped',
          });
          const stillRunning = json(await s.get('/primitives/running/list.json')).primitives;
          expect(stillRunning, name).to.deep.equal(name === 'temperature_monitoring' ? [] : background);
          expect(
            (json(await s.get('/robot.json')).primitives as { primitive: string; running: boolean }[]).find(
              (p) => p.primitive === name,
            )!.running,
          ).to.equal(false);
          if (name === 'temperature_monitoring') await s.get('/primitives/temperature_monitoring/start.json');
        }
      } finally {
        await s.close();
      }
    });
  }
});

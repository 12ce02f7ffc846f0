/** The Humanoid's own behaviours (docs/reference/robots.md 3.3) and its variants of the shared ones. */
import { expect } from 'chai';
import type { LimitTorque } from '../../src/primitives/builtins/poppy.ts';
import { simServer, type TestServer } from '../helpers.ts';

describe('primitives: Humanoid behaviours', function () {
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('humanoid');
  });
  afterEach(() => s.close());

  const pos = (m: string) => s.robot.motor(m).state.presentPosition;

  it('stand_position: powered up with pypot gains, to 0, then the standing pose; it ends by itself', async () => {
    await s.get('/primitives/stand_position/start.json');
    await s.advance(0.3);
    expect(s.robot.motors.every((m) => !m.commands.compliant)).to.equal(true);
    expect(s.robot.motor('abs_y').commands.pid).to.deep.equal([6, 1.953125, 0]);
    expect(s.robot.motor('l_hip_y').commands.pid).to.deep.equal([4, 1.953125, 0]);
    expect(s.robot.motor('l_knee_y').commands.torqueLimit).to.equal(70);
    await s.advance(2.3); // setup 0.5 s + 2 s to 0
    expect(pos('l_knee_y')).to.be.closeTo(0, 3);
    await s.advance(3.2);
    const pose = {
      l_shoulder_x: 20,
      r_shoulder_x: -20,
      l_shoulder_y: 10,
      l_elbow_y: -20,
      r_elbow_y: -20,
      head_y: 1,
    };
    for (const [m, target] of Object.entries(pose)) expect(pos(m), m).to.be.closeTo(target, 3);
    await s.advance(1.2);
    expect(s.primitives.get('stand_position').state).to.equal('stopped');
    expect(s.robot.motors.every((m) => m.commands.torqueLimit === 70 && !m.commands.compliant)).to.equal(
      true,
    );
  });

  it('sit_position: hips and knees to the sitting pose in 2 s, then knees and ankles compliant, legs weak', async () => {
    await s.get('/primitives/sit_position/start.json');
    await s.advance(2.1);
    expect(pos('l_hip_y')).to.be.closeTo(-39, 4);
    expect(pos('r_hip_y')).to.be.closeTo(-39, 4);
    expect(pos('l_knee_y')).to.be.closeTo(134, 5);
    expect(s.robot.motor('l_knee_y').commands.compliant).to.equal(true);
    expect(s.robot.motor('r_ankle_y').commands.compliant).to.equal(true);
    expect(s.robot.motor('l_hip_y').commands.compliant).to.equal(false);
    expect(s.robot.motor('r_hip_x').commands.torqueLimit).to.equal(20);
    await s.advance(2.1);
    expect(s.primitives.get('sit_position').state).to.equal('stopped');
  });

  it('limit_torque uses the default torque_max 95; dance_beat_motion also sways abs_x', async () => {
    expect((s.primitives.get('limit_torque') as LimitTorque).torqueMax).to.equal(95);
    for (const m of s.robot.motors) await s.post(`/motors/${m.name}/registers/compliant/value.json`, false);
    await s.advance(0.3);
    await s.get('/primitives/limit_torque/start.json');
    await s.post('/motors/head_z/registers/goal_position/value.json', 50);
    await s.advance(0.1);
    expect(s.robot.motor('head_z').commands.torqueLimit).to.equal(95);
    await s.get('/primitives/limit_torque/stop.json');
    await s.get('/primitives/dance_beat_motion/start.json');
    const xs: number[] = [];
    for (let i = 0; i < 30; i++) {
      await s.advance(0.1);
      xs.push(s.robot.motor('abs_x').commands.goalPosition);
    }
    expect(Math.max(...xs) - Math.min(...xs)).to.be.above(0.5);
    await s.get('/primitives/dance_beat_motion/stop.json');
  });
});

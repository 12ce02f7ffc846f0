/** The Torso's built-in behaviours do what docs/reference/robots.md 2.4 says, checked on the twin through the REST registers. */
import { expect } from 'chai';
import type { TemperatureMonitoring } from '../../src/primitives/builtins/poppy.ts';
import { json, simServer, untilAnswered, value, type TestServer } from '../helpers.ts';
import { recordingLogger } from './probes.ts';

const L_ARM = ['l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y'];
const R_ARM = ['r_shoulder_y', 'r_shoulder_x', 'r_arm_z', 'r_elbow_y'];

describe('primitives: Torso behaviours', function () {
  let s: TestServer;
  let log: ReturnType<typeof recordingLogger>;
  beforeEach(async () => {
    log = recordingLogger();
    s = await simServer('torso', { logger: log });
  });
  afterEach(() => s.close());

  const pos = (m: string) => s.robot.motor(m).state.presentPosition;
  async function allStiff() {
    for (const m of s.robot.motors) await s.post(`/motors/${m.name}/registers/compliant/value.json`, false);
    await s.advance(0.3);
  }
  /** Samples present_position of `motor` every `dt` for `seconds`. */
  async function samples(motor: string, seconds: number, dt = 0.02): Promise<number[]> {
    const out: number[] = [];
    for (let t = 0; t < seconds - 1e-9; t += dt) {
      await s.advance(dt);
      out.push(pos(motor));
    }
    return out;
  }

  it('temperature_monitoring runs from the start, as on the real robot', async () => {
    expect(json(await s.get('/primitives/running/list.json')).primitives).to.deep.equal([
      'temperature_monitoring',
    ]);
  });

  it('init_position: all stiff and to 0 in 3 s, then bust_y to 4; it ends by itself', async () => {
    await s.get('/primitives/init_position/start.json');
    await s.advance(2);
    expect(s.robot.motors.every((m) => !m.commands.compliant)).to.equal(true);
    expect(
      s.robot.motors.every((m) => m.commands.torqueLimit === 100 && m.commands.movingSpeed === 0),
    ).to.equal(true);
    await s.advance(2.6);
    expect(s.primitives.get('init_position').state).to.equal('stopped');
    for (const m of s.robot.motors) {
      const target = m.name === 'bust_y' ? 4 : 0;
      expect(m.state.presentPosition, m.name).to.be.closeTo(target, 2);
    }
  });

  it('dance_beat_motion moves head_y at its beat (50 bpm: 1.2 s period, 5 degrees); pause holds; stop powers up', async () => {
    await allStiff();
    await s.get('/primitives/dance_beat_motion/start.json');
    await s.advance(1);
    expect(s.robot.motors.every((m) => m.commands.movingSpeed === 50)).to.equal(true);
    const dt = 0.02;
    const ys = await samples('head_y', 3.6, dt);
    const mean = ys.reduce((a, b) => a + b, 0) / ys.length;
    const ups: number[] = [];
    for (let i = 1; i < ys.length; i++) if (ys[i - 1]! < mean && ys[i]! >= mean) ups.push(i * dt);
    expect(ups.length).to.be.within(2, 4);
    const periods = ups.slice(1).map((t, i) => t - ups[i]!);
    for (const p of periods) expect(p).to.be.closeTo(1.2, 0.06);
    expect(Math.max(...ys) - Math.min(...ys)).to.be.within(8, 12);
    // head_z at half the beat
    const zs = await samples('head_z', 2.4, 0.04);
    expect(Math.max(...zs) - Math.min(...zs)).to.be.within(7, 12);

    expect((await s.get('/primitives/dance_beat_motion/pause.json')).statusCode).to.equal(200);
    await s.advance(0.2);
    const held = await samples('head_y', 0.6, 0.1);
    expect(Math.max(...held) - Math.min(...held)).to.be.below(0.5);
    expect((await s.get('/primitives/dance_beat_motion/resume.json')).statusCode).to.equal(200);
    const moving = await samples('head_y', 0.6, 0.1);
    expect(Math.max(...moving) - Math.min(...moving)).to.be.above(1);
    expect(json(await s.get('/primitives/dance_beat_motion/stop.json'))).to.deep.equal({
      dance_beat_motion: 'stopped',
    });
    expect(
      s.robot.motors.every((m) => m.commands.movingSpeed === 0 && m.commands.torqueLimit === 100),
    ).to.equal(true);
  });

  it('limit_torque lowers torque_limit where the position error is small and raises it where it is large', async () => {
    await allStiff();
    await s.get('/primitives/limit_torque/start.json');
    await s.advance(0.5);
    for (const m of s.robot.motors) {
      const err = Math.abs(m.commands.goalPosition - m.state.presentPosition);
      // 20 % at no error up to 80 % (the Torso's torque_max) at 10 degrees
      expect(m.commands.torqueLimit, m.name).to.be.closeTo(Math.min(80, 20 + (err / 10) * 60), 6);
    }
    expect(await value(s, 'head_z', 'torque_limit')).to.be.below(30);
    await s.post('/motors/head_z/registers/goal_position/value.json', 60);
    await s.advance(0.1);
    expect(await value(s, 'head_z', 'torque_limit')).to.equal(80);
    await s.advance(1.5);
    expect(pos('head_z')).to.be.closeTo(60, 3);
    expect(await value(s, 'head_z', 'torque_limit')).to.be.below(40);
    // Stopping gives the motors back the torque they had (pypot's teardown crashed instead).
    expect(json(await s.get('/primitives/limit_torque/stop.json'))).to.deep.equal({
      limit_torque: 'stopped',
    });
    expect(s.robot.motors.every((m) => m.commands.torqueLimit === 100)).to.equal(true);
    expect(json(await s.get('/primitives/running/list.json')).primitives).not.to.include('limit_torque');
  });

  it('temperature_monitoring warns about a watched motor above its limit, never about the head', async () => {
    const monitor = s.primitives.get('temperature_monitoring') as TemperatureMonitoring;
    expect(monitor.limit).to.equal(55);
    expect(monitor.motors).not.to.include('head_z');
    // A hand pushes a stiff shoulder harder than it can hold: the servo works at full torque and heats up.
    await allStiff();
    monitor.limit = 25.5; // heating past 55 C takes minutes of sim time; the rule is the same
    const id = s.robot.motor('l_shoulder_x').id;
    void s.simulation!.hand.push(id, 3, 8);
    let warnedAt: number | undefined;
    for (let t = 0; t < 8 && warnedAt === undefined; t += 0.5) {
      await s.advance(0.5);
      if (log.has('warn', /l_shoulder_x overheating/)) warnedAt = t;
    }
    expect(warnedAt, 'no warning').not.to.equal(undefined);
    expect(await value(s, 'l_shoulder_x', 'present_temperature')).to.be.above(25.5);
    expect(monitor.overheating.map((o) => o.motor)).to.include('l_shoulder_x');
    expect(log.lines.filter((l) => /overheating/.test(l.msg)).every((l) => !/head/.test(l.msg))).to.equal(
      true,
    );
    // Back under the limit: logged, and the list empties.
    monitor.limit = 55;
    await s.advance(2.1);
    expect(monitor.overheating).to.deep.equal([]);
    expect(log.has('info', /l_shoulder_x back to/)).to.equal(true);
  });

  it('upper_body_idle_motion: torso and arms stiff, slow sinuses added up; stop ends the sub-primitives', async () => {
    await s.get('/primitives/upper_body_idle_motion/start.json');
    await s.advance(0.1);
    for (const m of ['abs_z', 'bust_y', 'bust_x', ...L_ARM, ...R_ARM])
      expect(s.robot.motor(m).commands.compliant, m).to.equal(false);
    const abs = await samples('abs_z', 5, 0.05);
    // 3 degrees at 0.2 Hz + 0.8 at 0.5 Hz
    expect(Math.max(...abs) - Math.min(...abs)).to.be.within(5, 8.5);
    expect(pos('l_shoulder_y')).to.be.within(10, 20); // offset 15
    expect(s.primitives.activeCount()).to.equal(1 + 1 + 14); // temperature_monitoring, the parent, 14 sinuses
    expect(json(await s.get('/primitives/upper_body_idle_motion/stop.json')).upper_body_idle_motion).to.equal(
      'stopped',
    );
    expect(s.primitives.activeCount()).to.equal(1);
  });

  it('head_idle_motion: the head turns stiff and drifts', async () => {
    await s.get('/primitives/head_idle_motion/start.json');
    const zs = await samples('head_z', 2.5, 0.1);
    expect(s.robot.motor('head_z').commands.compliant).to.equal(false);
    expect(Math.max(...zs) - Math.min(...zs)).to.be.above(20);
    expect(json(await s.get('/primitives/head_idle_motion/pause.json')).head_idle_motion).to.equal('paused');
    await s.advance(0.2);
    const held = await samples('head_z', 0.5, 0.1);
    expect(Math.max(...held) - Math.min(...held)).to.be.below(0.5);
    await s.get('/primitives/head_idle_motion/stop.json');
  });

  it('arms_turn_compliant: an arm pushed hard gives way, then stiffens again; the other arm stays stiff', async () => {
    await s.get('/primitives/arms_turn_compliant/start.json');
    await s.advance(0.5);
    expect([...L_ARM, ...R_ARM].every((m) => s.robot.motor(m).commands.torqueLimit === 20)).to.equal(true);
    expect([...L_ARM, ...R_ARM].every((m) => !s.robot.motor(m).commands.compliant)).to.equal(true);
    const start = pos('l_shoulder_x');
    // Drag the left shoulder outwards (user +50 degrees: raw -(50 - 90) = 40).
    const id = s.robot.motor('l_shoulder_x').id;
    void s.simulation!.hand.drag(id, 40, 2);
    let limp = 0;
    let rightLimp = 0;
    for (let t = 0; t < 2; t += 0.02) {
      await s.advance(0.02);
      if (s.robot.motor('l_shoulder_x').commands.compliant) limp++;
      if (R_ARM.some((m) => s.robot.motor(m).commands.compliant)) rightLimp++;
    }
    expect(limp).to.be.greaterThan(10);
    expect(rightLimp).to.equal(0);
    expect(pos('l_shoulder_x') - start).to.be.greaterThan(30);
    // Released: stiff again where it was left (within what gravity takes at 20 % torque).
    await s.advance(0.6);
    expect(L_ARM.every((m) => !s.robot.motor(m).commands.compliant)).to.equal(true);
    await s.get('/primitives/arms_turn_compliant/stop.json');
  });

  it('arms_copy_motion: the right arm mirrors the left arm moved by hand; stop brings both to 0 in 2 s', async () => {
    await s.get('/primitives/arms_copy_motion/start.json');
    await s.advance(0.3);
    expect(L_ARM.every((m) => s.robot.motor(m).commands.compliant)).to.equal(true);
    expect(R_ARM.every((m) => !s.robot.motor(m).commands.compliant)).to.equal(true);
    // Lift the left arm sideways and turn it: l_shoulder_x to user 60 (raw 30), l_arm_z to user -30 (raw 30).
    const hand = s.simulation!.hand;
    void hand.drag(s.robot.motor('l_shoulder_x').id, 30, 2.5);
    void hand.drag(s.robot.motor('l_arm_z').id, 30, 2.5);
    await s.advance(2.2);
    expect(pos('l_shoulder_x')).to.be.closeTo(60, 5);
    const signs = [1, -1, -1, 1];
    L_ARM.forEach((l, i) => {
      expect(pos(R_ARM[i]!), `${R_ARM[i]} mirrors ${l}`).to.be.closeTo(signs[i]! * pos(l), 3);
    });
    expect(pos('r_shoulder_x')).to.be.closeTo(-60, 5);
    const t0 = s.backend.clock.now();
    const stopped = await untilAnswered(s, s.get('/primitives/arms_copy_motion/stop.json'), 5, 0.05);
    expect(stopped.json()).to.deep.equal({ arms_copy_motion: 'stopped' });
    expect(s.backend.clock.now() - t0).to.be.within(1.95, 2.15);
    await s.advance(0.5);
    for (const m of [...L_ARM, ...R_ARM]) {
      expect(s.robot.motor(m).commands.compliant, m).to.equal(false);
      expect(pos(m), m).to.be.closeTo(0, 3);
    }
  });
});

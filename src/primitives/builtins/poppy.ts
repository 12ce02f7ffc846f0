/**
 * The Poppy Torso and Humanoid behaviours (docs/reference/robots.md 2.4 and 3.3), with pypot's numbers. Deviations are noted
 * where they are made.
 */
import { sign } from '../../core/frames.ts';
import type { PrimitiveContext } from '../primitive.ts';
import { Sinus } from '../sinus.ts';
import { ARMS, Behaviour, HEAD, HUMANOID_TORSO, LEGS, L_ARM, R_ARM, sin } from './common.ts';

export interface LimitTorqueOptions {
  readonly torqueMax?: number;
  readonly torqueMin?: number;
  readonly maxError?: number;
}

/**
 * limit_torque (20 Hz): each motor's torque_limit follows its position error, torque_min at 0 degrees up to
 * torque_max at max_error and beyond, so a motor that holds still is gentle. pypot's teardown crashes (docs/reference/robots.md 9.6);
 * this one gives every motor back the torque_limit it had at start.
 */
export class LimitTorque extends Behaviour {
  readonly torqueMax: number;
  readonly torqueMin: number;
  readonly maxError: number;
  readonly #saved = new Map<string, number>();

  constructor(ctx: PrimitiveContext, name: string, opts: LimitTorqueOptions = {}) {
    super(ctx, name, { frequency: 20 });
    this.torqueMax = opts.torqueMax ?? 95;
    this.torqueMin = opts.torqueMin ?? 20;
    this.maxError = opts.maxError ?? 10;
  }

  protected override setup(): void {
    this.#saved.clear();
    for (const m of this.robot.motors) this.#saved.set(m.name, m.commands.torqueLimit);
  }

  protected override update(): void {
    for (const m of this.robot.motors) {
      const d = Math.abs(m.commands.goalPosition - m.state.presentPosition);
      const limit =
        d > this.maxError
          ? this.torqueMax
          : this.torqueMin + (d / this.maxError) * (this.torqueMax - this.torqueMin);
      // The register holds 0.1 %: finer changes would only cost bus writes.
      this.request(m.name, 'torque_limit', Math.round(limit * 10) / 10);
    }
  }

  protected override teardown(): void {
    for (const [name, limit] of this.#saved) this.request(name, 'torque_limit', limit);
  }
}

export interface Overheat {
  readonly motor: string;
  readonly temperature: number;
}

/**
 * temperature_monitoring (0.5 Hz, started with the robot): warns when a watched motor runs above the limit (55 C)
 * and keeps the list in `overheating`. pypot also plays a sound through aplay; the twin only logs.
 */
export class TemperatureMonitoring extends Behaviour {
  readonly motors: readonly string[];
  /** Degrees Celsius. */
  limit: number;
  readonly #hot = new Map<string, number>();

  constructor(ctx: PrimitiveContext, name: string, motors: readonly string[], limit = 55) {
    super(ctx, name, { frequency: 0.5, autoStart: true });
    this.motors = motors.filter((m) => ctx.robot.hasMotor(m));
    this.limit = limit;
  }

  /** Watched motors above the limit at the last check. */
  get overheating(): Overheat[] {
    return [...this.#hot].map(([motor, temperature]) => ({ motor, temperature }));
  }

  protected override setup(): void {
    this.#hot.clear();
  }

  protected override update(): void {
    for (const name of this.motors) {
      const t = this.robot.motor(name).state.presentTemperature;
      if (t > this.limit) {
        if (!this.#hot.has(name)) this.logger.warn(`${name} overheating: ${t} °C (limit ${this.limit} °C)`);
        this.#hot.set(name, t);
      } else if (this.#hot.delete(name)) {
        this.logger.info(`${name} back to ${t} °C`);
      }
    }
  }
}

/** dance_beat_motion's goals at `t` s (user degrees): amplitude `A`, beat `F` Hz. */
export function danceBeatGoals(t: number, A: number, F: number, humanoid = false): Record<string, number> {
  const goals: Record<string, number> = {
    head_y: sin(A / 2, F, t),
    head_z: sin(A / 2, F / 2, t),
    bust_x: sin(A / 6, F / 2, t) + sin(A / 6, F / 4, t),
    l_shoulder_y: sin(A / 3, F / 2, t),
    r_shoulder_y: -sin(A / 3, F / 2, t),
    r_elbow_y: sin(A / 2, F, t, -20),
    l_elbow_y: sin(A / 2, F / 2, t, -20),
  };
  if (humanoid) goals.abs_x = -sin(A / 8, F / 4, t) + sin(A / 6, F / 4, t);
  return goals;
}

/**
 * dance_beat_motion (SimpleBodyBeatMotion, 50 Hz): head, bust and arms swing to the beat (bpm 50, amplitude 10).
 * Like pypot it does not make the motors stiff (run init_position first); its teardown powers the robot up.
 */
export class DanceBeatMotion extends Behaviour {
  readonly bpm: number;
  readonly amplitude: number;
  readonly #humanoid: boolean;

  constructor(
    ctx: PrimitiveContext,
    name: string,
    opts: { bpm?: number; amplitude?: number; humanoid?: boolean } = {},
  ) {
    super(ctx, name, { frequency: 50 });
    this.bpm = opts.bpm ?? 50;
    this.amplitude = opts.amplitude ?? 10;
    this.#humanoid = opts.humanoid ?? false;
  }

  /** Beat frequency, Hz. */
  get beat(): number {
    return this.bpm / 60;
  }

  protected override setup(): void {
    this.requestAll(this.allMotors, 'moving_speed', 50);
  }

  protected override update(t: number): void {
    const goals = danceBeatGoals(t, this.amplitude, this.beat, this.#humanoid);
    for (const [motor, goal] of Object.entries(goals)) this.request(motor, 'goal_position', goal);
  }

  protected override teardown(): void {
    this.powerUp(this.allMotors);
  }
}

/**
 * init_position (one-shot): stiff and powered up, every motor to 0 in 3 s, then bust_y to 4 degrees in 1 s. pypot
 * ends 0.5 s into that last move, leaving a speed-based move running; here the primitive waits for the move's end so
 * that it is not cut short.
 */
export class InitPosition extends Behaviour {
  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
  }

  protected override async run(): Promise<void> {
    this.powerUp(this.allMotors);
    await this.gotoAll(this.allMotors, 0, 3);
    const bust = this.goto({ bust_y: 4 }, 1);
    await this.sleep(0.5);
    await bust;
  }
}

type SinusSpec = readonly [motor: string, amp: number, freq: number, offset?: number, phase?: number];

/** A behaviour made of Sinus sub-primitives that are summed by the manager; optionally makes motors stiff first. */
abstract class SinusBehaviour extends Behaviour {
  readonly #specs: readonly SinusSpec[];
  readonly #stiff: readonly string[];
  readonly #sinus: Sinus[];

  constructor(ctx: PrimitiveContext, name: string, specs: readonly SinusSpec[], stiff: readonly string[]) {
    super(ctx, name);
    this.#specs = specs.filter(([m]) => ctx.robot.hasMotor(m));
    this.#stiff = stiff.filter((m) => ctx.robot.hasMotor(m));
    this.#sinus = this.#specs.map(([motor, amp, freq, offset, phase], i) =>
      this.child(new Sinus(ctx, `${name}:${motor}#${i}`, { motors: [motor], amp, freq, offset, phase })),
    );
  }

  protected override async setup(): Promise<void> {
    this.stiff(this.#stiff);
    await Promise.all(this.#sinus.map((s) => s.start()));
  }
}

/** upper_body_idle_motion: 14 slow sinuses on the torso and arms (stiff), added up. */
export class UpperBodyIdleMotion extends SinusBehaviour {
  constructor(ctx: PrimitiveContext, name: string, torso: readonly string[]) {
    super(
      ctx,
      name,
      [
        ['abs_z', 3, 0.2],
        ['abs_z', 0.8, 0.5],
        ['l_shoulder_x', 2, 0.2, 5],
        ['l_shoulder_x', 0.8, 0.5],
        ['r_shoulder_x', 2, 0.2, -5, 66],
        ['r_shoulder_x', 0.8, 0.5, 0, 66],
        ['l_shoulder_y', 3, 0.2, 15],
        ['l_shoulder_y', 0.8, 0.5],
        ['l_elbow_y', 2, 0.5, -25],
        ['l_elbow_y', 0.3, 0.2],
        ['r_elbow_y', 2, 0.5, -25, 75],
        ['r_elbow_y', 0.3, 0.2, 0, 75],
        ['l_arm_z', 3, 0.2],
        ['r_arm_z', 3, 0.2, 0, 78],
      ],
      [...torso, ...ARMS],
    );
  }
}

/** head_idle_motion: the head (stiff) drifts with 4 slow sinuses. */
export class HeadIdleMotion extends SinusBehaviour {
  constructor(ctx: PrimitiveContext, name: string) {
    super(
      ctx,
      name,
      [
        ['head_z', 20, 0.05],
        ['head_z', 15, 0.1],
        ['head_y', 20, 0.04],
        ['head_y', 5, 0.09],
      ],
      HEAD,
    );
  }
}

/**
 * arms_turn_compliant (50 Hz): arms stiff at 20 % torque; an arm whose largest |present_load| averages above the
 * threshold over 0.2 s turns compliant, and stiff again below 7 %. pypot's threshold is 20 %, which real servos pass
 * through their noisy load estimate although the torque limit is 20 %; the twin's load saturates at the limit, so
 * it trips at 19 %.
 */
export class ArmsTurnCompliant extends Behaviour {
  readonly threshold = 19;
  readonly stiffBelow = 7;
  readonly #windows = { l: [] as number[], r: [] as number[] };
  readonly #window: number;

  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name, { frequency: 50 });
    this.#window = Math.round(0.2 * 50);
  }

  protected override setup(): void {
    this.#windows.l = [0];
    this.#windows.r = [0];
    this.stiff(ARMS);
    this.requestAll(ARMS, 'torque_limit', 20);
  }

  protected override update(): void {
    for (const [side, motors] of [
      ['l', L_ARM],
      ['r', R_ARM],
    ] as const) {
      const window = this.#windows[side];
      window.push(Math.max(...motors.map((m) => Math.abs(this.robot.motor(m).state.presentLoad))));
      if (window.length > this.#window) window.shift();
      const mean = window.reduce((a, b) => a + b, 0) / window.length;
      if (mean > this.threshold) this.limp(motors);
      else if (mean < this.stiffBelow) this.stiff(motors);
    }
  }
}

/**
 * arms_copy_motion (PuppetMaster, 50 Hz): the left arm is compliant, the right arm (stiff, 50 % torque) mirrors it:
 * right goal = left present_position times +1 where the left motor is direct, -1 where indirect. Teardown: arms
 * stiff and back to 0 in 2 s.
 */
export class ArmsCopyMotion extends Behaviour {
  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name, { frequency: 50 });
  }

  protected override setup(): void {
    this.requestAll(ARMS, 'moving_speed', 0);
    this.requestAll(ARMS, 'torque_limit', 50);
    this.limp(L_ARM);
    this.stiff(R_ARM);
  }

  protected override update(): void {
    L_ARM.forEach((left, i) => {
      const l = this.robot.motor(left);
      this.request(R_ARM[i]!, 'goal_position', l.state.presentPosition * sign(l.frame));
    });
  }

  protected override async teardown(): Promise<void> {
    this.stiff(ARMS);
    await this.gotoAll(ARMS, 0, 2);
    this.requestAll(ARMS, 'moving_speed', 0);
  }
}

/**
 * stand_position (Humanoid): powered up with pypot's gains, all to 0 in 2 s, then a balanced standing pose in 3 s.
 */
export class StandPosition extends Behaviour {
  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
  }

  protected override async setup(): Promise<void> {
    const all = this.allMotors;
    this.powerUp(all);
    for (const m of this.robot.motors) if (m.hasRegister('pid')) this.request(m.name, 'pid', [4, 2, 0]);
    for (const m of HUMANOID_TORSO) this.request(m, 'pid', [6, 2, 0]);
    this.requestAll(all, 'torque_limit', 70);
    await this.sleep(0.5);
  }

  protected override async run(): Promise<void> {
    const all = this.allMotors;
    await this.gotoAll(all, 0, 2);
    await this.goto(
      {
        r_hip_z: -2,
        l_hip_z: 2,
        r_hip_x: -2,
        l_hip_x: 2,
        l_shoulder_x: 20,
        r_shoulder_x: -20,
        l_shoulder_y: 10,
        r_shoulder_y: 10,
        l_elbow_y: -20,
        r_elbow_y: -20,
        l_ankle_y: -3,
        r_ankle_y: -2,
        abs_y: -2,
        head_y: 1,
        head_z: 0,
      },
      3,
    );
    this.powerUp(all);
    this.requestAll(all, 'torque_limit', 70);
    await this.sleep(1);
  }
}

/**
 * sit_position (Humanoid): hips and knees to a sitting pose in 2 s, then knees and ankles compliant and the legs at
 * 20 % torque. pypot moves the motors as they are; here the moved motors are made stiff first, or a compliant
 * robot would not move at all.
 */
export class SitPosition extends Behaviour {
  static readonly POSE: Readonly<Record<string, number>> = {
    l_hip_y: -39,
    r_hip_y: -39,
    l_knee_y: 134,
    r_knee_y: 134,
    abs_x: 0,
    abs_y: 3,
    abs_z: 0,
    bust_x: 0,
    bust_y: 0,
  };

  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
  }

  protected override async run(): Promise<void> {
    this.stiff(Object.keys(SitPosition.POSE));
    await this.goto(SitPosition.POSE, 2);
    this.limp(['l_knee_y', 'r_knee_y', 'l_ankle_y', 'r_ankle_y']);
    this.requestAll(LEGS, 'torque_limit', 20);
    await this.sleep(2);
  }
}

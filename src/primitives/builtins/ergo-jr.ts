// Over 400 lines: every Ergo Jr behaviour in one file, as poppy-ergo-jr ships them.
/**
 * The Poppy Ergo Jr behaviours (docs/reference/robots.md 1.4): postures, the dance, and the demos of poppy-ergo-jr, with their
 * LED signals on the XL-320 `led` register.
 */
import type { LedColour } from '../../dynamixel/registers.ts';
import type { MethodSpec, PrimitiveContext } from '../primitive.ts';
import { Sinus } from '../sinus.ts';
import { Behaviour, ERGO_BASE, ERGO_TIP } from './common.ts';

const MOTORS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'] as const;

function pose(values: readonly number[]): Record<string, number> {
  return Object.fromEntries(MOTORS.map((m, i) => [m, values[i]!]));
}

/** SimplePosture: LEDs on (if any), all stiff, a goto over `duration` s; LEDs off when it ends or is stopped. */
export class Posture extends Behaviour {
  readonly target: Readonly<Record<string, number>>;
  readonly duration: number;
  readonly leds: LedColour | undefined;

  constructor(
    ctx: PrimitiveContext,
    name: string,
    target: Readonly<Record<string, number>>,
    duration: number,
    leds?: LedColour,
  ) {
    super(ctx, name);
    this.target = target;
    this.duration = duration;
    this.leds = leds;
  }

  protected override async run(): Promise<void> {
    if (this.leds) this.requestAll(this.allMotors, 'led', this.leds);
    this.stiff(this.allMotors);
    await this.goto(this.target, this.duration);
  }

  protected override teardown(): void {
    this.requestAll(this.allMotors, 'led', 'off');
  }
}

export const POSTURES = {
  base_posture: { pose: pose([0, 0, 0, 0, 0, 0]) },
  rest_posture: { pose: pose([0, -90, 35, 0, 55, -5]), leds: 'blue' },
  curious_posture: { pose: pose([0, -15, 40, 0, -35, -60]), leds: 'pink' },
  tetris_posture: { pose: pose([0, -90, 90, 0, -90, -90]), leds: 'yellow' },
} as const satisfies Record<string, { pose: Record<string, number>; leds?: LedColour }>;

export const IDLE_POSTURE = pose([0, -110, 65, 0, 34, 20]);

/** safe_power_up: the idle posture (LEDs blue) over 3 s, then moving_speed 0 (full speed) on every motor. */
export class SafePowerUp extends Posture {
  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name, IDLE_POSTURE, 3, 'blue');
  }

  protected override async run(): Promise<void> {
    await super.run();
    this.requestAll(this.allMotors, 'moving_speed', 0);
  }
}

/**
 * dance: all stiff and to 0 in 3 s, moving_speed 150, LEDs green, then five sinuses at 25 Hz added up: m1 and m4
 * (90 degrees, 0.25 Hz, m4 in opposition), m5 and m6 (30 degrees, 0.8 Hz, m6 in opposition), all six (10, 0.1 Hz).
 */
export class Dance extends Behaviour {
  readonly #sinus: Sinus[];

  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
    const s = (i: number, motors: string[], amp: number, freq: number, phase = 0) =>
      this.child(new Sinus(ctx, `${name}:sinus#${i}`, { motors, amp, freq, phase, rate: 25 }));
    this.#sinus = [
      s(0, ['m1'], 90, 0.25),
      s(1, ['m4'], 90, 0.25, 180),
      s(2, ['m5'], 30, 0.8),
      s(3, ['m6'], 30, 0.8, 180),
      s(4, [...MOTORS], 10, 0.1),
    ];
  }

  protected override async setup(): Promise<void> {
    const all = this.allMotors;
    this.stiff(all);
    await this.gotoAll(all, 0, 3);
    this.requestAll(all, 'moving_speed', 150);
    this.requestAll(all, 'led', 'green');
    await Promise.all(this.#sinus.map((p) => p.start()));
  }

  protected override teardown(): void {
    this.requestAll(this.allMotors, 'led', 'off');
  }
}

/** tinsel_demo: every LED through green, red, yellow, blue, pink, cyan, white, off, a colour each 0.5 s. */
export class Tinsel extends Behaviour {
  static readonly COLOURS: readonly LedColour[] = [
    'green',
    'red',
    'yellow',
    'blue',
    'pink',
    'cyan',
    'white',
    'off',
  ];
  #index = 0;

  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name, { frequency: 2 });
  }

  protected override setup(): void {
    this.#index = 0;
  }

  protected override update(): void {
    this.requestAll(this.allMotors, 'led', Tinsel.COLOURS[this.#index % Tinsel.COLOURS.length]);
    this.#index++;
  }

  protected override teardown(): void {
    this.requestAll(this.allMotors, 'led', 'off');
  }
}

/**
 * BaseDemo: goes to the default posture at 100 degrees/s, then every motor compliant with LEDs off; the teardown
 * does the same, so a demo always ends in a known, limp pose.
 */
export abstract class BaseDemo extends Behaviour {
  static readonly DEFAULT = [0, -45, 25, 0, 45, -25] as const;

  protected presentPose(): number[] {
    return MOTORS.map((m) => this.robot.motor(m).state.presentPosition);
  }

  /** Every motor within `error` degrees of `target` (m1..m6). */
  protected postureIs(target: readonly number[], error = 2): boolean {
    return this.presentPose().every((p, i) => Math.abs(p - target[i]!) <= error);
  }

  /** Seconds to reach `target` at 100 degrees/s for the motor that is farthest. */
  protected travelTime(target: readonly number[]): number {
    return Math.floor(Math.max(...this.presentPose().map((p, i) => Math.abs(p - target[i]!)))) / 100;
  }

  /** Stiff, goto `target` at 100 degrees/s; resolves when the move is over (safe to leave unawaited). */
  protected moveTo(target: readonly number[], duration = this.travelTime(target)): Promise<void> {
    this.stiff(MOTORS);
    return this.goto(pose(target), duration);
  }

  /** Waits until the posture is reached (within 2 degrees), `timeout` seconds at most. */
  protected async reach(target: readonly number[], timeout = 3): Promise<void> {
    for (let t = 0; t < timeout && !this.postureIs(target); t += 0.1) await this.sleep(0.1);
  }

  protected async toDefault(): Promise<void> {
    await this.moveTo(BaseDemo.DEFAULT);
    await this.sleep(0.2);
    this.limp(MOTORS);
    this.requestAll(MOTORS, 'led', 'off');
    await this.sleep(0.1);
  }

  protected leds(colour: LedColour, motors: readonly string[] = MOTORS): void {
    this.requestAll(motors, 'led', colour);
  }

  protected override async setup(): Promise<void> {
    await this.toDefault();
  }

  protected override async teardown(): Promise<void> {
    await this.toDefault();
  }
}

/**
 * stubborn_demo (Tetu): after a blinking-green countdown (4.5 s) in which it can be posed by hand, it keeps that pose:
 * moved more than 6 degrees, it turns yellow, waits 1 s and up to 2 s more (unless moved beyond 45 degrees), then if
 * still away turns red, goes back stiffly in 0.5 s, waits 1.5 s and turns green and compliant again.
 */
export class StubbornDemo extends BaseDemo {
  #start: number[] = [];

  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
  }

  /** The pose it defends (m1..m6, rounded degrees). */
  get startPose(): readonly number[] {
    return this.#start;
  }

  protected override async setup(): Promise<void> {
    await super.setup();
    for (let i = 0; i < 6; i++) {
      this.leds('off');
      await this.sleep(0.5 - 0.1 * i);
      this.leds('green');
      await this.sleep(0.5);
    }
    this.#start = this.presentPose().map((p) => Math.round(p));
  }

  protected override async run(): Promise<void> {
    for (;;) {
      if (!this.postureIs(this.#start, 6)) {
        this.leds('yellow');
        await this.sleep(1);
        for (let t = 0; t < 2 && this.postureIs(this.#start, 45); t += 0.02) await this.sleep(0.02);
        if (!this.postureIs(this.#start, 6)) {
          this.leds('red');
          await this.moveTo(this.#start, 0.5);
          await this.sleep(1.5);
        }
        this.leds('green');
        this.limp(MOTORS);
      }
      await this.sleep(0.02);
    }
  }
}

/** chicken_demo (Poule): base compliant (green), tip stiff (red); m4, m5, m6 copy minus m1, m2, m3 at 50 Hz. */
export class ChickenDemo extends BaseDemo {
  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
  }

  protected override async setup(): Promise<void> {
    await super.setup();
    this.leds('red', ERGO_TIP);
    this.stiff(ERGO_TIP);
    this.leds('green', ERGO_BASE);
    this.limp(ERGO_BASE);
  }

  protected override async run(): Promise<void> {
    for (;;) {
      ERGO_BASE.forEach((base, i) => {
        this.request(ERGO_TIP[i]!, 'goal_position', -this.robot.motor(base).state.presentPosition);
      });
      await this.sleep(0.02);
    }
  }
}

/**
 * puzzel_demo (Puzzel): a memory game. The robot shows a figure, goes back to its default pose and turns compliant;
 * during a blinking countdown the player poses it like the figure. Within `precision` degrees: a point (one more
 * green LED); otherwise it shows the figure again in red and the score resets. Six points: it replays the figures and
 * dances for 5 s. Levels choose how varied the figures are; 'growing' makes them harder with the score.
 * pypot lists the method `level_noramle` but defines `level_normal`; this one lists and answers `level_normal`.
 */
export class PuzzelDemo extends BaseDemo {
  /** 0..5; with `growing`, the score is used instead. */
  level = 0;
  growing = true;
  /** Degrees. */
  precision = 20;
  readonly #figures: number[][] = [];
  readonly #dance: Dance;

  constructor(ctx: PrimitiveContext, name: string) {
    super(ctx, name);
    this.#dance = this.child(new Dance(ctx, `${name}:dance`));
  }

  /** The figures of this round, the last one being played (m1..m6 degrees). */
  get figures(): readonly (readonly number[])[] {
    return this.#figures;
  }

  override methods(): MethodSpec[] {
    const set = (name: string, apply: () => void): MethodSpec => ({
      name,
      params: [],
      call: () => {
        apply();
        return null;
      },
    });
    const level = (n: number) => () => {
      this.growing = false;
      this.level = n;
    };
    return [
      ...super.methods(),
      set('level_veryeasy', level(1)),
      set('level_easy', level(2)),
      set('level_normal', level(3)),
      set('level_hard', level(4)),
      set('level_veryhard', level(5)),
      set('level_growing', () => {
        this.growing = true;
        this.level = 0;
      }),
      set('precision_easy', () => (this.precision = 20)),
      set('precision_normal', () => (this.precision = 10)),
      set('precision_hard', () => (this.precision = 5)),
    ];
  }

  /** A figure (m1..m6) of the given difficulty, from the seeded random source. */
  newFigure(level: number): number[] {
    const values = [-75, -45, 0, 0, 45, 75];
    const shapes = [
      [0, 0, -90, 0, 45, 0],
      [0, 0, 90, 0, -45, 0],
      [0, 0, 0, 0, -90, 0],
      [0, 0, 0, 0, 90, 0],
      [0, 45, -90, 0, 0, 0],
      [0, 45, -90, 0, 90, 0],
      [0, -45, 90, 0, 0, 0],
      [0, -45, 90, 0, -90, 0],
    ];
    const pick = <T>(list: readonly T[]): T => list[Math.floor(this.random() * list.length)]!;
    const sample = (k: number) => {
      const idx = values.map((_, i) => i);
      const out: number[] = [];
      for (let i = 0; i < k; i++)
        out.push(values[idx.splice(Math.floor(this.random() * idx.length), 1)[0]!]!);
      return out;
    };
    const fig = [...(level <= 1 ? shapes[0]! : pick(shapes))];
    if (level === 0) return fig;
    let twist: number[];
    if (level <= 2) {
      const m = sample(1)[0]!;
      twist = [m, m, m];
    } else if (level === 3) {
      const [a, b] = sample(2);
      twist = [a!, b!, a!];
    } else if (level === 4) twist = sample(3);
    else twist = [0, 0, 0].map(() => Math.floor(this.random() * 150) - 75);
    [fig[0], fig[3], fig[5]] = [twist[0]!, twist[1]!, twist[2]!];
    return fig;
  }

  protected override async run(): Promise<void> {
    for (;;) {
      this.#figures.push(this.newFigure(this.growing ? this.#figures.length : this.level));
      const fig = this.#figures[this.#figures.length - 1]!;
      // Show the figure for 5 s, in red.
      this.leds('red');
      void this.moveTo(fig);
      await this.sleep(5);
      void this.goto(pose(BaseDemo.DEFAULT), 1);
      await this.reach(BaseDemo.DEFAULT);
      // The player's turn: compliant, blinking countdown.
      this.limp(MOTORS);
      this.leds('green');
      for (let i = 0; i < 12; i++) {
        this.leds('green');
        await this.sleep(0.5);
        this.leds('off');
        await this.sleep(0.5 - (0.5 / 12) * i);
      }
      if (this.postureIs(fig, this.precision)) {
        this.leds('green');
        await this.sleep(0.5);
        this.leds('off');
        for (let i = 0; i < this.#figures.length; i++) {
          this.request(MOTORS[i]!, 'led', 'green');
          await this.sleep(0.25);
        }
      } else {
        this.leds('red');
        void this.moveTo(fig, 1);
        await this.sleep(2);
        this.#figures.length = 0;
      }
      if (this.#figures.length === 6) await this.celebrate();
      this.leds('off');
      void this.moveTo(BaseDemo.DEFAULT, 1);
      await this.reach(BaseDemo.DEFAULT);
    }
  }

  /** Replays the six figures, then dances 5 s (the dance alone drives the motors meanwhile). */
  async celebrate(): Promise<void> {
    this.leds('off');
    for (let i = 0; i < this.#figures.length; i++) {
      const fig = this.#figures[i]!;
      const duration = this.travelTime(fig);
      this.request(MOTORS[i]!, 'led', 'green');
      await this.moveTo(fig, duration);
    }
    this.release();
    await this.#dance.start();
    await this.sleep(5);
    await this.#dance.stop();
    this.#figures.length = 0;
  }
}

/** The Ergo Jr's primitives, in pypot's attach order. */
export function ergoJrPrimitives(ctx: PrimitiveContext): Behaviour[] {
  const postures = Object.entries(POSTURES).map(
    ([name, p]) => new Posture(ctx, name, p.pose, 2, 'leds' in p ? p.leds : undefined),
  );
  return [
    new SafePowerUp(ctx, 'safe_power_up'),
    new Dance(ctx, 'dance'),
    ...postures,
    new Tinsel(ctx, 'tinsel_demo'),
    new StubbornDemo(ctx, 'stubborn_demo'),
    new ChickenDemo(ctx, 'chicken_demo'),
    new PuzzelDemo(ctx, 'puzzel_demo'),
  ];
}

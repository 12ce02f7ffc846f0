/** The simulation's hand: it drags, pushes and holds joints with a torque about their axes, on the sim clock. */
import type { HandTool } from './controls.ts';
import { AbortError, type SteppedClock } from '../core/clock.ts';
import { hardwareError } from '../core/errors.ts';
import type { PhysicsWorld } from './world.ts';
import type { SimServo } from './servo.ts';
import { frictionBudget } from './servo-models.ts';

const DEG = Math.PI / 180;
/** A followed joint's measured angle is carried on at its measured speed for this long at most (s): 3 bus cycles. */
const FOLLOW_LEAD_S = 0.06;
/**
 * The follow's spring (N.m/rad) and damper (N.m.s/rad) per N.m of the servo's stall torque: stiffer than a person's
 * hand, so that a load sags the joint a fraction of a degree, and about critically damped on the armature alone
 * (armatures are 0.002 to 0.003 kg.m^2 per N.m of stall); explicit, k dt^2 / armature stays under 0.1.
 */
const FOLLOW_STIFFNESS = 30;
const FOLLOW_DAMPING = 0.5;
/**
 * The follow pushes no harder than the limp link needs to move as measured (docs/decisions/0056): its weight's torque
 * when lifting it, its gearbox friction, and an acceleration (rad/s^2) of what the joint carries: FOLLOW_ACCEL_MOVING
 * while the measured joint moves that way (a 60-degree drag in 0.6 s peaks at 16), FOLLOW_ACCEL while it stands.
 */
const FOLLOW_ACCEL = 20;
const FOLLOW_ACCEL_MOVING = 60;
/** A joint moves (rad/s) above this: 4 degrees/s, the comparator's "still". */
const FOLLOW_MOVING = (4 * Math.PI) / 180;

interface Hand {
  readonly world: PhysicsWorld;
  readonly joint: number;
  readonly servo: SimServo;
  readonly from: number;
  readonly to: number;
  readonly start: number;
  /** Sim seconds to reach `to` (min-jerk); the hand then holds there until it lets go. */
  readonly arrive: number;
  /** Constant torque mode (push) when defined. */
  readonly torque?: number;
  /** Follow mode (follow()): the measured angle (rad) and speed (rad/s) at sim time t, and the slack (rad). */
  follow?: { at: number; speed: number; t: number; slack: number };
  /** Lets go (and settles whoever waits for it). */
  readonly done: () => void;
}

/** A motor's servo and joint in the world, by motor id (undefined: not in the simulation, or no world yet). */
export type FindJoint = (
  id: number,
) => { readonly world: PhysicsWorld; readonly servo: SimServo; readonly joint: number } | undefined;

export class SimHands {
  readonly #clock: SteppedClock;
  readonly #find: FindJoint;
  readonly #active = new Set<Hand>();
  /** The tool the simulation controls hand out. */
  readonly tool: HandTool;

  constructor(clock: SteppedClock, find: FindJoint) {
    this.#clock = clock;
    this.#find = find;
    this.tool = {
      drag: (id, rawDeg, duration, signal) =>
        this.#addHand(id, rawDeg * DEG, 0.8 * duration, duration, undefined, signal),
      push: (id, torque, duration, signal) => this.#addHand(id, NaN, 0, duration, torque, signal),
      hold: (id, rawDeg, duration) => this.#hold(id, rawDeg * DEG, duration),
      follow: (id, rawDeg, rawDegS, slackDeg) =>
        this.#follow(id, rawDeg * DEG, rawDegS * DEG, slackDeg * DEG),
      release: (ids) => this.release((id) => !ids || ids.includes(id)),
      holding: () => [...this.#active].filter((h) => h.torque === undefined).map((h) => h.servo.id),
    };
  }

  /** Each step, before the servos: every hand sets its torque for the step at sim time t. */
  apply(t: number): void {
    for (const h of this.#active) this.#apply(h, t);
  }

  /** Lets go of the motors `which` says (by id), settling whoever waits for them. */
  release(which: (id: number) => boolean = () => true): void {
    for (const h of [...this.#active]) if (which(h.servo.id)) h.done();
  }

  /** The hand acts on motor `id` for `duration` s: towards `to` (rad, reached in `arrive` s), or a constant torque. */
  #addHand(
    id: number,
    to: number,
    arrive: number,
    duration: number,
    torque: number | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    const started = this.#startHand(id, to, arrive, torque);
    if (!started) return Promise.reject(hardwareError(`motor ${id} is not in the simulation`));
    return new Promise<void>((resolve, reject) => {
      started.released.then(resolve, reject);
      // The hand lets go on a clock timer, so whoever waits for it runs at exactly that sim time.
      void this.#clock.sleepUntil(started.hand.start + duration).then(() => started.hand.done());
      signal?.addEventListener(
        'abort',
        () => {
          started.hand.done();
          reject(new AbortError());
        },
        { once: true },
      );
    });
  }

  /** The hand takes the joint to `to` over `duration` and keeps holding it there until released. */
  #hold(id: number, to: number, duration: number): Promise<void> {
    const started = this.#startHand(id, to, duration, undefined);
    if (!started) return Promise.reject(hardwareError(`motor ${id} is not in the simulation`));
    return this.#clock.sleepUntil(started.hand.start + duration);
  }

  /** Starts following motor `id`, or moves the angle an existing follow keeps to. */
  #follow(id: number, at: number, speed: number, slack: number): void {
    const t = this.#clock.now();
    for (const h of this.#active)
      if (h.servo.id === id && h.follow) {
        h.follow = { at, speed, t, slack };
        return;
      }
    const started = this.#startHand(id, at, 0, undefined);
    if (!started) throw hardwareError(`motor ${id} is not in the simulation`);
    started.hand.follow = { at, speed, t, slack };
  }

  #startHand(
    id: number,
    to: number,
    arrive: number,
    torque: number | undefined,
  ): { hand: Hand; released: Promise<void> } | undefined {
    const found = this.#find(id);
    if (!found) return undefined;
    const { world, servo, joint } = found;
    for (const h of [...this.#active]) if (h.servo === servo) h.done();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const hand: Hand = {
      world,
      joint: joint,
      servo,
      from: world.angle(joint),
      to,
      start: this.#clock.now(),
      arrive,
      torque,
      done: () => {
        if (!this.#active.delete(hand)) return;
        world.setExternalTorque(joint, 0);
        release();
      },
    };
    this.#active.add(hand);
    return { hand, released };
  }

  /** A hand is a soft spring-damper towards a min-jerk moving target, about as strong as two stalled servos. */
  #apply(h: Hand, t: number): void {
    const world = h.world;
    const elapsed = t - h.start;
    if (h.torque !== undefined) {
      world.setExternalTorque(h.joint, h.torque);
      return;
    }
    if (h.follow) {
      world.setExternalTorque(h.joint, this.#followTorque(h, h.follow, t));
      return;
    }
    const tau = h.arrive > 0 ? Math.min(1, elapsed / h.arrive) : 1;
    const s = tau * tau * tau * (10 - 15 * tau + 6 * tau * tau);
    const target = h.from + (h.to - h.from) * s;
    const stall = h.servo.spec.stallTorque;
    const k = 6 * stall;
    const c = 0.15 * stall;
    const cap = 2 * stall;
    const torque = Math.max(
      -cap,
      Math.min(cap, k * (target - world.angle(h.joint)) - c * world.velocity(h.joint)),
    );
    world.setExternalTorque(h.joint, torque);
  }

  /**
   * Following: nothing while the joint is within the slack of the measured angle (carried on at its measured speed
   * for up to FOLLOW_LEAD_S), so the world's own physics moves it; beyond, a spring on the excess and a damper on the
   * speed difference, capped at what the link needs. While the measured joint moves that way, or the twin's is carried
   * away from it (a parent dragging its link along the table), the cap takes in the friction its own push adds to the
   * gears' load (twice round: the load terms are under 0.5); while both stand, the friction at rest only: a joint held
   * beyond the slack then is against something in the twin (the table, a link), and is not pressed into it.
   */
  #followTorque(h: Hand, f: NonNullable<Hand['follow']>, t: number): number {
    const error = f.at + f.speed * Math.min(FOLLOW_LEAD_S, Math.max(0, t - f.t)) - h.world.angle(h.joint);
    const over = Math.abs(error) - f.slack;
    if (over <= 0) return 0;
    const sign = Math.sign(error);
    const stall = h.servo.spec.stallTorque;
    const speed = h.world.velocity(h.joint);
    const load = h.world.load(h.joint);
    const weight = load.torque - h.world.externalTorque(h.joint);
    const lift = Math.max(0, -sign * weight);
    const needed = (push: number, accel: number) =>
      lift + frictionBudget(h.servo.model.friction, speed, 0, weight + push) + accel * load.inertia;
    const a = FOLLOW_ACCEL_MOVING;
    const moving = sign * f.speed > FOLLOW_MOVING || sign * speed < -FOLLOW_MOVING;
    const cap = Math.min(
      2 * stall,
      moving ? needed(sign * needed(sign * needed(0, a), a), a) : needed(0, FOLLOW_ACCEL),
    );
    const torque = stall * (FOLLOW_STIFFNESS * sign * over - FOLLOW_DAMPING * (speed - f.speed));
    return Math.max(-cap, Math.min(cap, torque));
  }
}

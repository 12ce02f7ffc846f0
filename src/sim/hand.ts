/** The simulation's hand: it drags, pushes and holds joints with a torque about their axes, on the sim clock. */
import type { HandTool } from './controls.ts';
import { AbortError, type SteppedClock } from '../core/clock.ts';
import { hardwareError } from '../core/errors.ts';
import type { PhysicsWorld } from './world.ts';
import type { SimServo } from './servo.ts';

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
   * speed difference, capped as a hand.
   */
  #followTorque(h: Hand, f: NonNullable<Hand['follow']>, t: number): number {
    const q = h.world.angle(h.joint);
    const error = f.at + f.speed * Math.min(FOLLOW_LEAD_S, Math.max(0, t - f.t)) - q;
    const over = Math.abs(error) - f.slack;
    if (over <= 0) return 0;
    const stall = h.servo.spec.stallTorque;
    const cap = 2 * stall;
    const speedError = h.world.velocity(h.joint) - f.speed;
    const torque = stall * (FOLLOW_STIFFNESS * Math.sign(error) * over - FOLLOW_DAMPING * speedError);
    return Math.max(-cap, Math.min(cap, torque));
  }
}

/** The simulation's hand: it drags, pushes and holds joints with a torque about their axes, on the sim clock. */
import type { HandTool } from './controls.ts';
import { AbortError, type SteppedClock } from '../core/clock.ts';
import { hardwareError } from '../core/errors.ts';
import type { PhysicsWorld } from './world.ts';
import type { SimServo } from './servo.ts';

const DEG = Math.PI / 180;

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
}

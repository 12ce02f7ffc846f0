/**
 * Rest detection: a world at rest stops stepping the solver until a joint's drive changes (a goal, the torque, a
 * hand, a teleport). At rest means no joint has moved more than REST_DRIFT from where it was REST_STEPS steps ago,
 * its angle as the encoder sees it: a window, not a speed, so a joint that jitters in place still rests and one that
 * creeps does not (docs/decisions/0003-world-rests-when-still.md).
 */
import { type JointRuntime, appliedTorque } from './build-world.ts';

const REST_DRIFT = 1e-4; // rad: 0.006 deg
const REST_STEPS = 250; // 0.5 s of 2 ms steps
/** A drive that moves less than this leaves the world at rest: target 1e-6 rad, speed 1e-5 rad/s, gains 0.1 %. */
const REST_TARGET = 1e-6;
const REST_TARGET_SPEED = 1e-5;
const REST_RELATIVE = 1e-3;
const REST_TORQUE = 1e-6; // N.m

/** Whether a world rests, over the joints it was made with (their stillFrom and restDrive are kept here). */
export class RestWatch {
  readonly #joints: readonly JointRuntime[];
  readonly #enabled: boolean;
  /** Steps in a row with everything still, whether the world rests, and the steps it skipped so. */
  #stillSteps = 0;
  #resting = false;
  #restingSteps = 0;

  constructor(joints: readonly JointRuntime[], enabled: boolean) {
    this.#joints = joints;
    this.#enabled = enabled;
  }

  get resting(): boolean {
    return this.#resting;
  }

  /** Steps taken at rest, the solver not run. */
  get restingSteps(): number {
    return this.#restingSteps;
  }

  /** At rest: counts the step as skipped and says so; otherwise false, and the world steps. */
  skip(): boolean {
    if (!this.#resting) return false;
    this.#restingSteps++;
    return true;
  }

  /** After a step, the joints measured: one more still step, or a new window; REST_STEPS still ones and it rests. */
  stepped(): void {
    let still = this.#enabled;
    if (still)
      for (const j of this.#joints)
        if (Math.abs(j.unwrapped - j.stillFrom) > REST_DRIFT) {
          still = false;
          break;
        }
    if (still) this.#stillSteps++;
    else this.#restartStillness();
    if (this.#stillSteps >= REST_STEPS) {
      this.#resting = true;
      for (const j of this.#joints) {
        j.modeAtRest = j.mode;
        j.speed = 0;
      }
    }
  }

  /** Joint j's drive was just set: at rest, the world wakes if it moved from the one it rests under. */
  driven(j: JointRuntime): void {
    if (this.#resting) this.#keepResting(j);
  }

  /** Joint j's external torque was just set: at rest, the world wakes if it changed. */
  pushed(j: JointRuntime): void {
    if (this.#resting && j.restDrive) this.#keepResting(j);
  }

  wake(): void {
    this.#resting = false;
    for (const j of this.#joints) j.restDrive = undefined;
    this.#restartStillness();
  }

  /**
   * Ends the rest if joint j's drive changed its kind, or moved from the one the world rests under (its first at rest,
   * else taken now).
   * Called for every driven joint at every resting step: it allocates nothing once the drive is taken.
   */
  #keepResting(j: JointRuntime): void {
    // A drive of another kind than the one the world came to rest under (a goal that outpulls the gearbox, the torque
    // off) moves the joint. Taken into the first drive at rest below, a goal sent as the world came to rest froze its
    // joint until the next command (decision 0082).
    if (j.mode !== j.modeAtRest) {
      this.wake();
      return;
    }
    const rest = j.restDrive;
    const law = j.lastLaw;
    if (!rest) {
      j.restDrive = {
        law: [law[0], law[1], law[2], law[3]],
        budget: j.lastBudget,
        torque: appliedTorque(j),
      };
      return;
    }
    if (
      Math.abs(law[0] - rest.law[0]) > REST_TARGET ||
      Math.abs(law[1] - rest.law[1]) > REST_TARGET_SPEED ||
      !near(law[2], rest.law[2], 0) ||
      !near(law[3], rest.law[3], 0) ||
      !near(j.lastBudget, rest.budget, 0) ||
      !near(appliedTorque(j), rest.torque, REST_TORQUE)
    )
      this.wake();
  }

  /** A new window of stillness begins at the joints' angles now. */
  #restartStillness(): void {
    this.#stillSteps = 0;
    for (const j of this.#joints) j.stillFrom = j.unwrapped;
  }
}

/** a and b within `floor` of each other, or within REST_RELATIVE of the larger. */
function near(a: number, b: number, floor: number): boolean {
  return Math.abs(a - b) <= Math.max(floor, REST_RELATIVE * Math.max(Math.abs(a), Math.abs(b)));
}

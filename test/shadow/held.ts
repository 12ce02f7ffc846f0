/**
 * Robots as users hold them, for shadow mode's tests and soak: which joints are limp and where a hand moves them, where
 * the stiff ones go, and a built-in primitive that leaves some limp. The ranges keep every link clear of the table and
 * of the robot itself (sampled on the twin: none of 100 poses at their ends touches): a hand pressing a limp link into
 * the table pushes the robot, which shadow mode rightly reports.
 */
import { userToRaw } from '../../src/core/frames.ts';
import { mulberry32, uniform } from '../../src/core/prng.ts';
import type { ShadowEventAnswer, ShadowRig, ShadowStatusAnswer } from './emulator-process.ts';

type Ranges = Readonly<Record<string, readonly [number, number]>>;

/** A robot as users hold it, user degrees. */
export interface HoldPlan {
  readonly robot: string;
  /** The pose it stands in, every motor stiff, before some go limp. */
  readonly stand: Readonly<Record<string, number>>;
  /** The limp joints and the ranges a hand moves them in. */
  readonly hand: Ranges;
  /** The stiff joints and the ranges of their gotos. */
  readonly gotos: Ranges;
  /**
   * A built-in primitive run with some joints limp: the joints made limp once it is under way (it makes every motor
   * stiff in its set-up, `setupS` long), the hand's ranges for the limp ones, the gotos beside it.
   */
  readonly primitive: {
    readonly name: string;
    readonly setupS: number;
    readonly limp: readonly string[];
    readonly hand: Ranges;
    readonly gotos: Ranges;
  };
}

export const ERGO_JR_HELD: HoldPlan = {
  robot: 'ergo-jr',
  stand: { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
  hand: { m4: [-60, 60], m5: [-40, 40], m6: [-40, 40] },
  gotos: { m1: [-40, 40], m2: [-40, 0], m3: [-30, 20] },
  // chicken_demo: the base limp, resting where it falls (its forearm folds onto the arm), the tip copying it, stiff.
  // No hand meanwhile: turning the base rolls the stiff tip pressed against the folded forearm, a contact the twin's
  // rigid solver jams in and the emulator's slides out of (docs/twin.md, shadow mode).
  primitive: { name: 'chicken_demo', setupS: 2.5, limp: [], hand: {}, gotos: {} },
};

const LEFT_ARM: Ranges = {
  l_shoulder_y: [-60, 0],
  l_shoulder_x: [0, 20],
  l_arm_z: [-30, 30],
  // Bent further with the arm hanging, the forearm meets the table.
  l_elbow_y: [0, 10],
};
const HEAD: Ranges = { head_z: [-40, 40], head_y: [-15, 15] };
const TRUNK: Ranges = { abs_z: [-30, 30], bust_y: [-5, 3], bust_x: [-5, 5] };

export const TORSO_HELD: HoldPlan = {
  robot: 'torso',
  stand: Object.fromEntries(
    ['abs_z', 'bust_y', 'bust_x', 'head_z', 'head_y', 'l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y']
      .concat(['r_shoulder_y', 'r_shoulder_x', 'r_arm_z', 'r_elbow_y'])
      .map((m) => [m, 0]),
  ),
  hand: { ...HEAD, ...LEFT_ARM },
  gotos: {
    ...TRUNK,
    r_shoulder_y: [-60, -30],
    r_shoulder_x: [-20, 0],
    r_arm_z: [-30, 30],
    r_elbow_y: [0, 40],
  },
  // arms_copy_motion: the left arm limp (the hand moves it), the right one mirrors it, stiff.
  primitive: {
    name: 'arms_copy_motion',
    setupS: 0.5,
    limp: [],
    hand: { ...HEAD, ...LEFT_ARM },
    gotos: TRUNK,
  },
};

export interface HeldSoak {
  /** Laps run (each: 12 s of gotos and hand moves, then the primitive for 8 s) and how long they took (s). */
  readonly laps: number;
  readonly seconds: number;
  /** Shadow events raised or cleared since the soak began: none is the goal. */
  readonly events: ShadowEventAnswer[];
  /** The server's shadow warnings meanwhile (events, and re-anchorings after a stall). */
  readonly warnings: string[];
  /** The info lines of motors the twin held against a contact the robot did not feel (comparator.ts, touching). */
  readonly touching: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Shadow mode on the emulator with the robot held as `plan` says, for `seconds` of wall time (a lap at least): every
 * 2 s a goto of the stiff joints (1 to 1.5 s) and the emulator's hand moving the limp ones (1 to 1.6 s), every third
 * time leaving them where they are, every fifth making them stiff for a round; then the primitive for 8 s, the hand
 * at work, and the robot held as before again.
 */
export async function soakHeld(rig: ShadowRig, plan: HoldPlan, seconds: number, seed = 1): Promise<HeldSoak> {
  const rand = mulberry32(seed);
  const motors = new Map(rig.server.config.motors.map((m) => [m.name, m]));
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await rig.call(method, p, body);
    if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const compliant = async (names: Iterable<string>, on: boolean) => {
    for (const m of names) await call('POST', `/motors/${m}/registers/compliant/value.json`, on);
  };
  const goto = async (targets: Ranges) => {
    const names = Object.keys(targets);
    if (!names.length) return;
    const positions = names.map((m) => uniform(rand, targets[m]![0], targets[m]![1]));
    await call('POST', '/motors/goto.json', {
      motors: names,
      positions,
      duration: uniform(rand, 1, 1.5),
    });
  };
  const hand = async (ranges: Ranges) => {
    if (!Object.keys(ranges).length) return;
    const moves = Object.entries(ranges).map(([m, [lo, hi]]) => {
      const raw = userToRaw(motors.get(m)!, uniform(rand, lo, hi));
      return `${motors.get(m)!.id}@${raw.toFixed(1)}:${uniform(rand, 1, 1.6).toFixed(2)}`;
    });
    const answer = await rig.emulator.send(`hand=${moves.join('+')}`);
    if (!answer.startsWith('hand ')) throw new Error(answer);
  };
  const round = async (i: number, handRanges: Ranges, gotos: Ranges) => {
    await goto(gotos);
    if (i % 3 !== 2) await hand(handRanges);
    await sleep(2000);
  };
  const held = async () => {
    await compliant(motors.keys(), false);
    const stand = Object.entries(plan.stand);
    await call('POST', '/motors/goto.json', {
      motors: stand.map(([m]) => m),
      positions: stand.map(([, deg]) => deg),
      duration: 1.5,
      wait: true,
    });
    await compliant(Object.keys(plan.hand), true);
  };

  const status = (await call('GET', '/shadow/status.json')) as unknown as ShadowStatusAnswer;
  const from = rig.logs.length;
  const fromLogged = rig.logged.length;
  const started = performance.now();
  await held();
  let laps = 0;
  do {
    for (let i = 0; i < 6; i++) {
      if (i === 4) await compliant(Object.keys(plan.hand), false);
      if (i === 5) await compliant(Object.keys(plan.hand), true);
      await round(i, i === 4 ? {} : plan.hand, i === 4 ? { ...plan.gotos, ...plan.hand } : plan.gotos);
    }
    await call('GET', `/primitives/${plan.primitive.name}/start.json`);
    await sleep(plan.primitive.setupS * 1000);
    await compliant(plan.primitive.limp, true);
    for (let i = 0; i < 4; i++) await round(i, plan.primitive.hand, plan.primitive.gotos);
    await call('GET', `/primitives/${plan.primitive.name}/stop.json`);
    // Its teardown moves the robot (stiff) and may leave it limp: held again as the plan says.
    await sleep(2500);
    await held();
    laps++;
  } while (performance.now() - started < seconds * 1000);
  await sleep(500);
  const events = (await call('GET', `/shadow/events.json?since=${status.time}`))
    .events as ShadowEventAnswer[];
  return {
    laps,
    seconds: (performance.now() - started) / 1000,
    events,
    warnings: rig.logs.slice(from).filter((l) => l.startsWith('shadow:')),
    touching: rig.logged
      .slice(fromLogged)
      .map((l) => l.line)
      .filter((l) => / touching: /.test(l)),
  };
}

/**
 * Gotos of the upright Ergo Jr that put its tip on the table (the guard's contact time, issue 45): [what, user degrees
 * of m1-m6, duration s]. The bent wrist meets the robot's own base as it lands.
 */
export const ERGO_JR_INTO_TABLE: readonly (readonly [string, readonly number[], number])[] = [
  ['a bow', [0, 60, 40, 0, 0, 0], 2],
  ['a fast bow', [0, 60, 40, 0, 0, 0], 1],
  ['a long reach', [0, 30, 70, 0, 30, 0], 2],
  ['a bow to the side', [60, 50, 50, 0, 20, 0], 1.5],
  ['a bent wrist', [0, 20, 30, 0, 90, 0], 1.5],
];

/**
 * Gotos of the upright Torso (every motor at 0: the elbows bent, the forearms ahead over the table) that put a forearm
 * on the table: [what, user degrees by motor, duration s].
 */
export const TORSO_INTO_TABLE: readonly (readonly [string, Readonly<Record<string, number>>, number])[] = [
  ['a bow', { bust_y: 35 }, 2],
  ['a left forearm down', { l_elbow_y: 85 }, 1.5],
  ['a right forearm down', { r_elbow_y: 85 }, 1.5],
  ['a bow to the left', { bust_y: 25, bust_x: 20 }, 1.5],
  ['a fast bow', { bust_y: 35 }, 1],
];

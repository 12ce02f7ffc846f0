/**
 * The shadow twin's physics rate, chosen per machine at start (issue 46): a short run of the twin's own world with
 * every servo stiff and moving says what a step costs here, and the twin takes the finest faithful step whose steps
 * stay within TWIN_CPU_SHARE of the CPU (OWN_CORE_CPU_SHARE of a core in a worker thread of its own);
 * `--shadow-physics-hz` sets it instead. docs/decisions/0061-twin-physics-rate.md, 0076-the-twin-on-a-small-core.md.
 */
import type { ServoParams } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { degToPosition, positionToDeg } from '../dynamixel/registers.ts';
import { SimBackend } from '../sim/backend.ts';
import { DEFAULT_SOLVER_ITERATIONS } from '../sim/build-world.ts';
import type { UrdfRobot } from '../urdf/types.ts';

/**
 * The steps the choice takes from on the server's thread, finest first (s): only 500 Hz. At 400, 250 and 200 Hz the
 * twin's gravity-loaded joints hold 3-5 degrees off the same servo model at 500 Hz and test/shadow raises false events
 * (decisions/0061).
 */
export const TWIN_STEPS_S = [0.002] as const;
/** Every rate the flag takes, Hz: the faithful one, then coarser ones that keep time on a slow machine, less faithful. */
export const TWIN_PHYSICS_HZ = [500, 400, 250, 200];
/** The share of the CPU the twin's physics may take while the robot moves (the rest: the bus, HTTP, the web view). */
export const TWIN_CPU_SHARE = 0.2;
/**
 * Beyond this share the start says the twin may fall behind. Not TWIN_CPU_SHARE: the probe runs beside the server's
 * own start and reads up to twice the cost (0.66 ms against 0.32 here, decisions/0061), and a twin over a fifth of a
 * core still kept real time at 0.2 and 0.5 of a core; over half of one it does not.
 */
export const TWIN_WARN_SHARE = 0.5;
/**
 * A twin in a worker thread has a core to itself (on a Pi, one of four): the share of that core its steps may take,
 * the rest for its messages, its collector and the probe's error. Steps that the probe read at 88 % of a Pi 3B+
 * core saturated the Torso's thread there (decisions/0076, 0079).
 */
export const OWN_CORE_CPU_SHARE = 0.75;
/** The fewer a twin on a small core may take: its steps 1.4x cheaper (decisions/0079). */
export const LEAN_SOLVER_ITERATIONS = 2;
/** The fewest, a last resort where even two do not fit: 1.4x cheaper again, its margin thinner (decisions/0080). */
export const LEANEST_SOLVER_ITERATIONS = 1;
/**
 * A twin on a core of its own, finest first: 500 Hz with the sim's four substeps; else 500 Hz with two where four
 * would not fit that core (a step 1.4x cheaper, its soak against the emulator as quiet); else 400 Hz with two; else
 * 400 Hz with one (the Torso on a Pi 3B+ on a slow hour), said that it may fall behind when even that does not fit
 * (decisions/0079, 0080).
 */
export const OWN_CORE_SETTINGS: readonly TwinSetting[] = [
  { stepS: 0.002, solverIterations: DEFAULT_SOLVER_ITERATIONS },
  { stepS: 0.002, solverIterations: LEAN_SOLVER_ITERATIONS },
  { stepS: 0.0025, solverIterations: LEAN_SOLVER_ITERATIONS },
  { stepS: 0.0025, solverIterations: LEANEST_SOLVER_ITERATIONS },
];

export interface TwinSetting {
  /** The twin's step, s. */
  readonly stepS: number;
  /** The solver's iterations (substeps) a step. */
  readonly solverIterations: number;
}

/** Steps timed at start: about 0.3 s of the moving robot in chunks, after as many to warm the code up. */
const PROBE_STEPS = 150;
const PROBE_CHUNK_STEPS = 15;

export interface TwinPhysics extends TwinSetting {
  /** What a step of the moving robot cost when measured, ms (undefined: set by the flag, not measured). */
  readonly stepCostMs?: number;
  /** The share of the CPU the twin's steps take at that step (undefined: not measured). */
  readonly share?: number;
  /** Even the coarsest step it may take costs more than TWIN_CPU_SHARE here. */
  readonly over: boolean;
}

/** The finest of `steps` whose cost (ms a step) stays within `share` of the CPU; the coarsest when none does. */
export function chooseTwinStep(
  stepCostMs: number,
  share = TWIN_CPU_SHARE,
  steps: readonly number[] = TWIN_STEPS_S,
): TwinPhysics {
  const fits = steps.find((s) => stepCostMs / (s * 1000) <= share);
  const stepS = fits ?? steps.at(-1)!;
  return {
    stepS,
    solverIterations: DEFAULT_SOLVER_ITERATIONS,
    stepCostMs,
    share: stepCostMs / (stepS * 1000),
    over: fits === undefined,
  };
}

/**
 * The first of `settings` (finest first) whose step, at the cost `costMs` gives for its solver iterations (ms, asked
 * for only as needed: each is a probe), stays within `share` of a core; the last when none does.
 */
export async function chooseTwinSetting(
  costMs: (solverIterations: number) => Promise<number>,
  share = OWN_CORE_CPU_SHARE,
  settings: readonly TwinSetting[] = OWN_CORE_SETTINGS,
): Promise<TwinPhysics & { readonly costs: ReadonlyMap<number, number> }> {
  const costs = new Map<number, number>();
  const costOf = async (iterations: number) => {
    if (!costs.has(iterations)) costs.set(iterations, await costMs(iterations));
    return costs.get(iterations)!;
  };
  for (const setting of settings) {
    const cost = await costOf(setting.solverIterations);
    const taken = cost / (setting.stepS * 1000);
    if (taken <= share) return { ...setting, stepCostMs: cost, share: taken, over: false, costs };
  }
  const last = settings.at(-1)!;
  const cost = costs.get(last.solverIterations)!;
  return { ...last, stepCostMs: cost, share: cost / (last.stepS * 1000), over: true, costs };
}

export interface ProbeOptions {
  readonly config: RobotConfig;
  readonly urdf: UrdfRobot;
  readonly servoParams?: ReadonlyMap<number, ServoParams>;
  /** The solver's iterations a step (default DEFAULT_SOLVER_ITERATIONS). */
  readonly solverIterations?: number;
  /** Milliseconds, monotonic (default performance.now; tests script it). */
  readonly now?: () => number;
}

/**
 * What a step of the twin's world costs here (ms): a world of its own at the finest step, every servo stiff and
 * swinging 15 degrees (the solver's work, as when the robot moves; at rest it skips the solver), PROBE_STEPS timed in
 * chunks after as many to warm up. The mean of the fastest quarter of the chunks: the server's own start-up work
 * (the bus, V8 compiling the engine) runs beside the probe and made single runs 3-14x dearer (decisions/0061).
 */
export async function measureStepCost(opts: ProbeOptions): Promise<number> {
  const sim = new SimBackend({
    config: opts.config,
    urdf: opts.urdf,
    speed: 'manual',
    dt: TWIN_STEPS_S[0],
    solverIterations: opts.solverIterations,
    restWhenStill: false,
    servoParams: opts.servoParams,
  });
  await sim.open();
  try {
    const ids = [...sim.models.keys()];
    const start = await sim.bus.read(ids, 'present_position');
    await sim.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
    const now = opts.now ?? (() => performance.now());
    const chunks: number[] = [];
    const swing = async (deg: number, timed: boolean) => {
      const goals = ids.map((id): [number, number] => {
        const spec = sim.models.get(id)!;
        return [id, degToPosition(spec, positionToDeg(spec, start.get(id) as number) + deg)];
      });
      await sim.bus.write('goal_position', new Map(goals));
      for (let done = 0; done < PROBE_STEPS / 2; done += PROBE_CHUNK_STEPS) {
        const t0 = timed ? now() : 0;
        await sim.advance(PROBE_CHUNK_STEPS * sim.dt);
        if (timed) chunks.push((now() - t0) / PROBE_CHUNK_STEPS);
      }
    };
    await swing(15, false);
    await swing(0, false);
    await swing(15, true);
    await swing(0, true);
    const fastest = chunks.sort((a, b) => a - b).slice(0, Math.ceil(chunks.length / 4));
    return fastest.reduce((sum, c) => sum + c, 0) / fastest.length;
  } finally {
    await sim.close();
  }
}

/** A step's cost and a share of a core, as the start's line says them. */
const costText = (ms: number) => ms.toFixed(ms < 0.1 ? 3 : 2);
const percent = (share: number) => `${Math.round(share * 100)} %`;
const solverSubsteps = (n: number) => `${n} solver substep${n === 1 ? '' : 's'}`;

/**
 * The twin's physics: `hz` from the flag, measured and chosen for 'auto' (the command line's default), the finest
 * step when not given (a server made in code: tests stay deterministic); with the one line that says so. `probe`
 * times a step with the solver iterations it is given.
 */
export async function twinPhysics(
  hz: number | 'auto' | undefined,
  probe: (solverIterations: number) => Promise<number>,
  ownCore = false,
  solverIterations = DEFAULT_SOLVER_ITERATIONS,
): Promise<{ physics: TwinPhysics; line: string }> {
  const substeps =
    solverIterations === DEFAULT_SOLVER_ITERATIONS ? '' : ` with ${solverSubsteps(solverIterations)}`;
  if (hz === undefined) {
    const physics = { stepS: TWIN_STEPS_S[0], solverIterations, over: false };
    return { physics, line: `shadow twin: physics at ${TWIN_PHYSICS_HZ[0]} Hz${substeps} (the default)` };
  }
  if (hz !== 'auto') {
    const physics = { stepS: 1 / hz, solverIterations, over: false };
    const coarse =
      hz < TWIN_PHYSICS_HZ[0]! ? `, less faithful than ${TWIN_PHYSICS_HZ[0]} Hz (docs/shadow.md)` : '';
    return { physics, line: `shadow twin: physics at ${hz} Hz${substeps} (--shadow-physics-hz${coarse})` };
  }
  if (ownCore) return ownCorePhysics(await chooseTwinSetting(probe));
  const physics = chooseTwinStep(await probe(DEFAULT_SOLVER_ITERATIONS));
  const cost = costText(physics.stepCostMs!);
  const over =
    physics.share! > TWIN_WARN_SHARE
      ? `; its steps take ${percent(physics.share!)} of a core: it may fall behind the robot ` +
        '(docs/shadow.md, "Its physics rate")'
      : '';
  return {
    physics,
    line: `shadow twin: physics at ${Math.round(1 / physics.stepS)} Hz on this machine (a step costs ${cost} ms)${over}`,
  };
}

/**
 * The line for a twin on a core of its own (chooseTwinSetting): its rate and substeps, what a step costs and the share
 * of the core it takes, and when it is not the finest setting what the finer ones would have taken.
 */
function ownCorePhysics(physics: TwinPhysics & { readonly costs: ReadonlyMap<number, number> }): {
  physics: TwinPhysics;
  line: string;
} {
  const finest = OWN_CORE_SETTINGS[0]!;
  const hz = Math.round(1 / physics.stepS);
  const finestHz = Math.round(1 / finest.stepS);
  const lean = physics.solverIterations !== finest.solverIterations;
  const cost = physics.stepCostMs!;
  const atFinest = (ms: number) => percent(ms / (finest.stepS * 1000));
  const parts = [`a step costs ${costText(cost)} ms, ${percent(physics.share!)} of its core`];
  if (hz !== finestHz) parts.push(`${finestHz} Hz would take ${atFinest(cost)}`);
  if (lean) {
    const full = physics.costs.get(finest.solverIterations)!;
    parts.push(
      `with ${finest.solverIterations} substeps ${costText(full)} ms, ${atFinest(full)} at ${finestHz} Hz`,
    );
  }
  const fidelity = hz !== finestHz ? `; less faithful than ${finestHz} Hz` : '';
  const over = physics.over ? ': it may fall behind the robot' : '';
  const see = hz === finestHz && !lean ? '' : ' (docs/shadow.md, "Its physics rate")';
  const substeps = lean ? ` with ${solverSubsteps(physics.solverIterations)}` : '';
  const { costs: _, ...chosen } = physics;
  return {
    physics: chosen,
    line: `shadow twin: physics at ${hz} Hz${substeps} on this machine (${parts.join('; ')}${fidelity})${over}${see}`,
  };
}

/**
 * The twin's step and solver iterations for the server: from `hz`, else measured by `measure` (default here, on this
 * thread); logs the line that says which.
 */
export async function twinStep(
  opts: ProbeOptions & {
    readonly hz?: number | 'auto';
    /** The solver iterations with a rate set or none (a server made in code); 'auto' chooses its own. */
    readonly iterations?: number;
    readonly log: (line: string) => void;
    readonly measure?: (probe: ProbeOptions) => Promise<number>;
    /** The twin runs in a worker thread, a core to itself (OWN_CORE_CPU_SHARE). */
    readonly ownCore?: boolean;
  },
): Promise<TwinSetting> {
  const { physics, line } = await twinPhysics(
    opts.hz,
    (solverIterations) => (opts.measure ?? measureStepCost)({ ...opts, solverIterations }),
    opts.ownCore,
    opts.iterations,
  );
  opts.log(line);
  return { stepS: physics.stepS, solverIterations: physics.solverIterations };
}

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
 * the rest for its messages and its collector. Its steps: 500 Hz, else 400 Hz where 500 would not fit that core (the
 * Torso on a Pi 3B+). At 400 Hz the Torso's shadow tests and ten-minute soaks raised no event; the Ergo Jr's tests
 * one false `offset` on m2, which a Pi 3B+ runs at 500 Hz (decisions/0061, 0076).
 */
export const OWN_CORE_CPU_SHARE = 0.85;
export const OWN_CORE_STEPS_S = [0.002, 0.0025] as const;

/** Steps timed at start: about 0.3 s of the moving robot in chunks, after as many to warm the code up. */
const PROBE_STEPS = 150;
const PROBE_CHUNK_STEPS = 15;

export interface TwinPhysics {
  /** The twin's step, s. */
  readonly stepS: number;
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
  return { stepS, stepCostMs, share: stepCostMs / (stepS * 1000), over: fits === undefined };
}

export interface ProbeOptions {
  readonly config: RobotConfig;
  readonly urdf: UrdfRobot;
  readonly servoParams?: ReadonlyMap<number, ServoParams>;
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

/**
 * The twin's physics: `hz` from the flag, measured and chosen for 'auto' (the command line's default), the finest
 * step when not given (a server made in code: tests stay deterministic); with the one line that says so.
 */
export async function twinPhysics(
  hz: number | 'auto' | undefined,
  probe: () => Promise<number>,
  ownCore = false,
): Promise<{ physics: TwinPhysics; line: string }> {
  if (hz === undefined) {
    const physics = { stepS: TWIN_STEPS_S[0], over: false };
    return { physics, line: `shadow twin: physics at ${TWIN_PHYSICS_HZ[0]} Hz (the default)` };
  }
  if (hz !== 'auto') {
    const physics = { stepS: 1 / hz, over: false };
    const coarse =
      hz < TWIN_PHYSICS_HZ[0]! ? `, less faithful than ${TWIN_PHYSICS_HZ[0]} Hz (docs/shadow.md)` : '';
    return { physics, line: `shadow twin: physics at ${hz} Hz (--shadow-physics-hz${coarse})` };
  }
  if (ownCore) return ownCorePhysics(await probe());
  const physics = chooseTwinStep(await probe());
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

/** The choice and its line for a twin on a core of its own (OWN_CORE_STEPS_S within OWN_CORE_CPU_SHARE). */
function ownCorePhysics(stepCostMs: number): { physics: TwinPhysics; line: string } {
  const physics = chooseTwinStep(stepCostMs, OWN_CORE_CPU_SHARE, OWN_CORE_STEPS_S);
  const hz = Math.round(1 / physics.stepS);
  const finest = OWN_CORE_STEPS_S[0];
  const costs = `a step costs ${costText(stepCostMs)} ms`;
  const coarser =
    physics.stepS === finest
      ? `${costs}, ${percent(physics.share!)} of its core`
      : `${costs}: ${Math.round(1 / finest)} Hz would take ${percent(stepCostMs / (finest * 1000))} of its core; ` +
        `less faithful than ${Math.round(1 / finest)} Hz`;
  const over = physics.over
    ? `; its steps take ${percent(physics.share!)} of its core: it may fall behind the robot`
    : '';
  const see = physics.stepS === finest && !over ? '' : ' (docs/shadow.md, "Its physics rate")';
  return { physics, line: `shadow twin: physics at ${hz} Hz on this machine (${coarser})${over}${see}` };
}

/**
 * The twin's step (s) for the server: from `hz`, else measured by `measure` (default here, on this thread); logs the
 * line that says which.
 */
export async function twinStep(
  opts: ProbeOptions & {
    readonly hz?: number | 'auto';
    readonly log: (line: string) => void;
    readonly measure?: (probe: ProbeOptions) => Promise<number>;
    /** The twin runs in a worker thread, a core to itself (OWN_CORE_CPU_SHARE). */
    readonly ownCore?: boolean;
  },
): Promise<number> {
  const { physics, line } = await twinPhysics(
    opts.hz,
    () => (opts.measure ?? measureStepCost)(opts),
    opts.ownCore,
  );
  opts.log(line);
  return physics.stepS;
}

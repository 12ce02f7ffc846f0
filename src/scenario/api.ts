/**
 * The scenario API. A scenario is a module in scenarios/ whose default export is `defineScenario({...})`; its
 * `run(t)` gets a ready twin of its robot (manual clock, no HTTP) and declares named checks, built in
 * (t.checkMove, t.checkIkTargets, t.checkPrimitive) or its own (t.check with expect-style helpers).
 * With `runsOn: 'any'` the same scenario can run against a server by URL, for the checks that only read or replay.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { settleWithin } from '../core/settle.ts';
import { loadRobotConfig } from '../config/robot-config.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { Motor } from '../robot/motor.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { ScenarioArgumentError, isNamed, show } from './args.ts';
import { contactRules } from './checks/contacts.ts';
import { type ScenarioContext, createContext } from './context.ts';
import {
  type ScenarioFailure,
  ScenarioWatch,
  type TimeLimit,
  checkLimit,
  describeFailure,
  resolveLimit,
} from './limits.ts';
import { type CheckResult, type ScenarioResult, skippedCheck, worstStatus } from './result.ts';
import { type RemoteOptions, type Target, remoteTarget, twinTarget } from './target.ts';
import { type Twin, openTwin } from './twin.ts';

export type { ScenarioContext } from './context.ts';
export { type MoveRef, loadMove, moveNameOf } from './moves.ts';
export { DEFAULT_TIME_LIMIT, type TimeLimit } from './limits.ts';

export interface ScenarioDefinition {
  readonly name: string;
  /** The robot it is written for, or the robots it supports (the first is the default; --robot picks another). */
  readonly robot: string | readonly string[];
  /** 'twin' (default): needs the twin. 'any': may also run against a server by URL. */
  readonly runsOn?: 'twin' | 'any';
  /** Contacts that are not collisions for this scenario (e.g. a gripper closing on its own fingers). */
  readonly contacts?: { toleranceM?: number; allowedPairs?: [string, string][]; resting?: string[] };
  /** Its time limits (default DEFAULT_TIME_LIMIT; over one, the scenario fails naming the step it was in). */
  readonly timeLimit?: TimeLimit;
  run(t: ScenarioContext): Promise<void>;
}

/** Checks the definition (scenario files run untyped): a mistake is an error at the line that defines it. */
export function defineScenario(def: ScenarioDefinition): ScenarioDefinition {
  const bad = (what: string) => {
    throw new ScenarioArgumentError(`defineScenario: ${what}`);
  };
  if (typeof def !== 'object' || def === null) bad(`give {name, robot, run}, not ${show(def)}`);
  if (typeof def.name !== 'string' || !def.name) bad(`name is ${show(def.name)}; give a non-empty string`);
  const robots: unknown = def.robot;
  if (
    !(typeof robots === 'string' && robots) &&
    !(Array.isArray(robots) && robots.length && robots.every((r) => typeof r === 'string' && r))
  )
    bad(`robot is ${show(robots)}; give a robot's name ("ergo-jr") or a list of them`);
  if (typeof def.run !== 'function') bad(`run is ${show(def.run)}; give async run(t) { ... }`);
  if (def.runsOn !== undefined && def.runsOn !== 'twin' && def.runsOn !== 'any')
    bad(`runsOn is ${show(def.runsOn)}; give "twin" or "any"`);
  checkLimit(def.timeLimit, 'defineScenario: timeLimit');
  return def;
}

export function robotsOf(def: ScenarioDefinition): readonly string[] {
  return typeof def.robot === 'string' ? [def.robot] : def.robot;
}

export interface RunOptions {
  /** Overrides the scenario's default robot (must be one it supports). */
  readonly robot?: string;
  /** Run against this server instead of the twin. */
  readonly url?: string;
  readonly remote?: RemoteOptions;
  /** Shown in the report (default: the file path). */
  readonly file?: string;
  /** Physics seed and the like (ServerOptions of the twin). */
  readonly seed?: number;
  /** Limits for a scenario that sets none of its own (the command line's flags). */
  readonly timeLimit?: TimeLimit;
  /** The scenario module's absolute path: its frames in a stack give the line of a failure. */
  readonly scenarioFile?: string;
  /** Called when the scenario enters a new step (the runner's watchdog shows the last one). */
  readonly onStep?: (label: string) => void;
  /** Called when run(t) starts, the twin ready: the wall limit counts from here. */
  readonly onBegin?: (robot: string) => void;
}

/** How long a scenario past its limit gets to unwind before its twin is closed, ms. */
const UNWIND_MS = 2000;

/** Runs one scenario to its result; never throws (a scenario that throws is an 'error' result). */
export async function runScenario(
  def: ScenarioDefinition,
  dir: string,
  opts: RunOptions = {},
): Promise<ScenarioResult> {
  const started = performance.now();
  const robots = robotsOf(def);
  const robot = opts.robot ?? robots[0]!;
  const results: CheckResult[] = [];
  const timeLimit = resolveLimit(def.timeLimit, opts.timeLimit);
  const watch = new ScenarioWatch(timeLimit, { scenarioFile: opts.scenarioFile, onStep: opts.onStep });
  let failure: ScenarioFailure | undefined;
  const finish = (): ScenarioResult => {
    watch.stop();
    return {
      file: opts.file ?? dir,
      name: def.name,
      robot,
      target: opts.url ?? 'twin',
      status: failure ? 'error' : worstStatus(results.map((r) => r.status)),
      checks: results,
      ...failure,
      simSeconds: Math.round(watch.simElapsed * 1000) / 1000,
      timeLimit,
      wallSeconds: Math.round((performance.now() - started) / 10) / 100,
    };
  };
  if (!robots.includes(robot)) {
    results.push(skippedCheck('robot', `written for ${robots.join(', ')}, not ${robot}`));
    return finish();
  }
  if (opts.url && def.runsOn !== 'any') {
    results.push(skippedCheck('target', 'needs the twin (runsOn is not "any")'));
    return finish();
  }
  let twin: Twin | undefined;
  let recordsDir: string | undefined;
  const body = async () => {
    const config = await loadRobotConfig(robot);
    const urdf = await loadUrdf(config.urdfPath);
    const rules = contactRules(urdf, {
      toleranceM: def.contacts?.toleranceM,
      extraResting: def.contacts?.resting,
      allowedPairs: def.contacts?.allowedPairs,
    });
    let target: Target;
    let motors: readonly Motor[];
    if (opts.url) {
      target = remoteTarget(opts.url, opts.remote);
      motors = config.motors.map((m) => new Motor(m, modelSpec(m.model)));
    } else {
      recordsDir = await mkdtemp(path.join(os.tmpdir(), 'scenario-records-'));
      twin = await openTwin(robot, { recordsDir, seed: opts.seed ?? 1 });
      guardAdvance(twin, watch);
      target = twinTarget(twin);
      motors = twin.robot.motors;
    }
    watch.begin(() => target.now(), opts.url ? 'target' : 'sim');
    opts.onBegin?.(robot);
    const chains = Object.keys(config.chains);
    const ctx = { robot, target, twin, motors, chains, dir, rules, results, watch };
    await def.run(createContext({ ...ctx, scenarioFile: opts.scenarioFile }));
  };
  const running = body();
  try {
    await Promise.race([running, watch.expired]);
  } catch (err) {
    failure = describeFailure(err, watch, opts.scenarioFile);
    // Past a limit the scenario's next call throws: let it unwind before its twin goes.
    if (isNamed(err, 'TimeLimitError') && twin) await settleWithin(running, UNWIND_MS);
  } finally {
    await twin?.close();
    if (recordsDir) await rm(recordsDir, { recursive: true, force: true });
  }
  return finish();
}

/** The twin's clock moves a second at most at a time, and never past the sim limit, checking both limits. */
function guardAdvance(twin: Twin, watch: ScenarioWatch): void {
  const advance = twin.advance.bind(twin);
  twin.advance = async (seconds: number) => {
    for (let left = seconds; ;) {
      watch.check();
      if (!(left > 1e-9)) return;
      const chunk = Math.min(left, 1, watch.simLeft + 0.01);
      await advance(chunk);
      left -= chunk;
    }
  };
}

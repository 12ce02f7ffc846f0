/**
 * The scenario API. A scenario is a module in scenarios/ whose default export is `defineScenario({...})`; its
 * `run(t)` gets a ready twin of its robot (manual clock, no HTTP) and declares named checks, built in
 * (t.checkMove, t.checkIkTargets, t.checkPrimitive) or its own (t.check with expect-style helpers).
 * With `runsOn: 'any'` the same scenario can run against a server by URL, for the checks that only read or replay.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadRobotConfig } from '../config/robot-config.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { Motor } from '../robot/motor.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { contactRules } from './checks/contacts.ts';
import { type ScenarioContext, createContext } from './context.ts';
import { type CheckResult, type ScenarioResult, skippedCheck, worstStatus } from './result.ts';
import { type RemoteOptions, type Target, remoteTarget, twinTarget } from './target.ts';
import { type Twin, openTwin } from './twin.ts';

export type { ScenarioContext } from './context.ts';
export { type MoveRef, loadMove, moveNameOf } from './moves.ts';

export interface ScenarioDefinition {
  readonly name: string;
  /** The robot it is written for, or the robots it supports (the first is the default; --robot picks another). */
  readonly robot: string | readonly string[];
  /** 'twin' (default): needs the twin. 'any': may also run against a server by URL. */
  readonly runsOn?: 'twin' | 'any';
  /** Contacts that are not collisions for this scenario (e.g. a gripper closing on its own fingers). */
  readonly contacts?: { toleranceM?: number; allowedPairs?: [string, string][]; resting?: string[] };
  run(t: ScenarioContext): Promise<void>;
}

export function defineScenario(def: ScenarioDefinition): ScenarioDefinition {
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
}

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
  const base = {
    file: opts.file ?? dir,
    name: def.name,
    robot,
    target: opts.url ?? 'twin',
  };
  const finish = (error?: string): ScenarioResult => ({
    ...base,
    status: error ? 'error' : worstStatus(results.map((r) => r.status)),
    checks: results,
    ...(error ? { error } : {}),
    wallSeconds: Math.round((performance.now() - started) / 10) / 100,
  });
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
  try {
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
      target = twinTarget(twin);
      motors = twin.robot.motors;
    }
    await def.run(createContext({ robot, target, twin, motors, dir, rules, results }));
    return finish();
  } catch (err) {
    return finish(err instanceof Error ? `${err.message}` : String(err));
  } finally {
    await twin?.close();
    if (recordsDir) await rm(recordsDir, { recursive: true, force: true });
  }
}

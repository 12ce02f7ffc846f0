/**
 * The scenario API. A scenario is a module in scenarios/ whose default export is `defineScenario({...})`; its
 * `run(t)` gets a ready twin of its robot (manual clock, no HTTP) and declares named checks, built in
 * (t.checkMove, t.checkIkTargets, t.checkPrimitive) or its own (t.check with expect-style helpers).
 * With `runsOn: 'any'` the same scenario can run against a server by URL, for the checks that only read or replay.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadRobotConfig } from '../config/robot-config.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { type Move, parseMoveFile } from '../records/move.ts';
import { RecordStore } from '../records/store.ts';
import { Motor } from '../robot/motor.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { type ContactRules, contactRules } from './checks/contacts.ts';
import { type IkOptions, type IkTarget, ikChecks } from './checks/ik.ts';
import { type MoveCheckOptions, checkMoveOnRemote, checkMoveOnTwin } from './checks/move.ts';
import { RunObserver } from './checks/observe.ts';
import { type PrimitiveRunOptions, primitiveRunCheck } from './checks/primitive.ts';
import { CheckRecorder } from './expect.ts';
import { type CheckResult, type ScenarioResult, skippedCheck, worstStatus } from './result.ts';
import { type Answer, type RemoteOptions, type Target, ok, remoteTarget, twinTarget } from './target.ts';
import { type Twin, openTwin } from './twin.ts';

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

export interface MoveRef {
  /** A pypot .record file (relative to the scenario file), or a move name in `recordsDir`. */
  readonly file?: string;
  readonly name?: string;
  readonly recordsDir?: string;
}

export interface ScenarioContext {
  readonly robot: string;
  /** The REST API of what the scenario runs on (twin or server). */
  readonly target: Target;
  /** The twin itself (motors, records, primitives, backend), when running on it. */
  readonly twin: Twin | undefined;
  /** The twin, or an error saying this part needs it. */
  requireTwin(): Twin;
  /** The robot's motors (limits, servo models); on a remote server, as the robot config describes them. */
  readonly motors: readonly Motor[];
  /** The folder of the scenario file, for its data files. */
  readonly dir: string;
  /** Lets time pass on the target (sim time on the twin). */
  wait(seconds: number): Promise<void>;
  /** Calls a route that must answer 200 and returns its JSON. */
  call(method: 'GET' | 'POST', url: string, body?: unknown): Promise<Record<string, unknown>>;
  /** Hands drag joints on the twin, `{motor: user degrees}` over `duration` sim seconds; resolves when let go. */
  hand(targets: Readonly<Record<string, number>>, duration: number): Promise<void>;
  /** The sim's marker cards (routes of the vision work: GET /sim/cards/list.json, show, pose, hide). */
  readonly cards: {
    list(): Promise<Answer>;
    show(name: string, distance?: number): Promise<Answer>;
    pose(name: string, xyz: readonly number[], rpy: readonly number[]): Promise<Answer>;
    hide(name: string): Promise<Answer>;
  };
  /** Declares a check of the scenario's own: `c.expect(value, 'what').toBeAtMost(limit, {unit, time})`. */
  check(name: string, body: (c: CheckRecorder) => void | Promise<void>): Promise<CheckResult>;
  loadMove(ref: MoveRef | string): Promise<Move>;
  /** Every check of a move (prefixed "<label>: "). On a server the move must already be there by that name. */
  checkMove(label: string, move: Move, opts?: MoveCheckOptions & { name?: string }): Promise<CheckResult[]>;
  checkIkTargets(chain: string, targets: readonly IkTarget[], opts?: IkOptions): Promise<CheckResult[]>;
  /** Runs a primitive for `seconds`: no error, still running at the end; on the twin, no collision either. */
  checkPrimitive(name: string, seconds: number, opts?: PrimitiveRunOptions): Promise<CheckResult[]>;
  /** The checks declared so far. */
  readonly results: readonly CheckResult[];
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

function createContext(p: {
  robot: string;
  target: Target;
  twin: Twin | undefined;
  motors: readonly Motor[];
  dir: string;
  rules: ContactRules;
  results: CheckResult[];
}): ScenarioContext {
  const { target, twin, rules, results } = p;
  const requireTwin = (): Twin => {
    if (!twin) throw new Error('this part of the scenario needs the twin, not a server by URL');
    return twin;
  };
  const add = (prefix: string, checks: CheckResult[]): CheckResult[] => {
    const named = checks.map((c) => ({ ...c, name: prefix ? `${prefix}: ${c.name}` : c.name }));
    results.push(...named);
    return named;
  };
  const cardUrl = (name: string, op: string) => `/sim/cards/${encodeURIComponent(name)}/${op}.json`;
  return {
    robot: p.robot,
    target,
    twin,
    requireTwin,
    motors: p.motors,
    dir: p.dir,
    results,
    wait: (s) => target.wait(s),
    call: (method, url, body) =>
      ok(method === 'GET' ? target.get(url) : target.post(url, body), `${method} ${url}`),
    hand: async (targets, duration) => {
      const t = requireTwin();
      let pending = 0;
      const drags = Object.entries(targets).map(([name, position]) => {
        const m = t.robot.motor(name);
        pending++;
        return t.simulation!.hand.drag(m.id, m.toRaw(position), duration).finally(() => pending--);
      });
      // The hands let go on a physics step at or just after `duration`: move time until they have.
      for (let waited = 0; pending > 0 && waited < duration + 1; waited += 0.02) await t.advance(0.02);
      await Promise.all(drags);
    },
    cards: {
      list: () => target.get('/sim/cards/list.json'),
      show: (name, distance) =>
        target.post(cardUrl(name, 'show'), distance === undefined ? undefined : { distance }),
      pose: (name, xyz, rpy) => target.post(cardUrl(name, 'pose'), { xyz, rpy }),
      hide: (name) => target.post(cardUrl(name, 'hide')),
    },
    check: async (name, body) => {
      const recorder = new CheckRecorder(name);
      let result: CheckResult;
      try {
        await body(recorder);
        result = recorder.result();
      } catch (err) {
        result = {
          name,
          status: 'error',
          summary: (err as Error).message ?? String(err),
          findings: [],
          measured: {},
        };
      }
      results.push(result);
      return result;
    },
    loadMove: (ref) => loadMove(typeof ref === 'string' ? { file: ref } : ref, p.dir),
    checkMove: async (label, move, opts) => {
      const checks = twin
        ? await checkMoveOnTwin(twin, rules, moveNameOf(label), move, opts)
        : await checkMoveOnRemote(target, p.motors, opts?.name ?? moveNameOf(label), move, opts);
      return add(label, checks);
    },
    checkIkTargets: async (chain, targets, opts) => {
      const observer = twin ? new RunObserver(twin, [], rules) : undefined;
      try {
        const checks = await ikChecks(target, chain, targets, opts);
        return add('', [
          ...checks,
          ...(observer?.collisions(rules).map((c) => ({ ...c, name: `${chain}: ${c.name}` })) ?? []),
        ]);
      } finally {
        observer?.stop();
      }
    },
    checkPrimitive: async (name, seconds, opts = {}) => {
      const observer = twin ? new RunObserver(twin, [], rules) : undefined;
      try {
        const run = await primitiveRunCheck(target, name, seconds, {
          lastError: twin ? (n) => twin.primitives.get(n).lastError : undefined,
          ...opts,
        });
        return add('', [
          run,
          ...(observer?.collisions(rules).map((c) => ({ ...c, name: `${name}: ${c.name}` })) ?? []),
        ]);
      } finally {
        observer?.stop();
      }
    },
  };
}

/** The label as a move name (the twin saves the move under it; on a server, the name it is installed as). */
export function moveNameOf(label: string): string {
  return (
    label
      .replace(/[^A-Za-z0-9_.-]+/g, '_')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 64) || 'move'
  );
}

/** A move from a .record file (relative to `dir`) or by name from a records directory (default ./records). */
export async function loadMove(ref: MoveRef, dir: string): Promise<Move> {
  if (ref.file) {
    const file = path.resolve(dir, ref.file);
    return parseMoveFile(await readFile(file, 'utf8'), path.basename(file));
  }
  if (!ref.name) throw new Error('a move reference needs a file or a name');
  return new RecordStore(path.resolve(ref.recordsDir ?? 'records')).load(ref.name);
}

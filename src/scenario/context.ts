/** The `t` a scenario's run(t) gets: the target's REST API, the twin, and the built-in checks. */
import type { Move } from '../records/move.ts';
import type { Motor } from '../robot/motor.ts';
import type { ContactRules } from './checks/contacts.ts';
import { type IkOptions, type IkTarget, ikChecks } from './checks/ik.ts';
import { type MoveCheckOptions, checkMoveOnRemote, checkMoveOnTwin } from './checks/move.ts';
import { RunObserver } from './checks/observe.ts';
import { type PrimitiveRunOptions, primitiveRunCheck } from './checks/primitive.ts';
import { CheckRecorder } from './expect.ts';
import { type MoveRef, loadMove, moveNameOf } from './moves.ts';
import type { CheckResult } from './result.ts';
import { type Answer, type Target, ok } from './target.ts';
import type { Twin } from './twin.ts';

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

export interface ContextParts {
  readonly robot: string;
  readonly target: Target;
  readonly twin: Twin | undefined;
  readonly motors: readonly Motor[];
  readonly dir: string;
  readonly rules: ContactRules;
  readonly results: CheckResult[];
}

export function createContext(p: ContextParts): ScenarioContext {
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

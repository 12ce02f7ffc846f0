/**
 * The `t` a scenario's run(t) gets. Every call enters a step of the scenario's watch (time limits, and the step a
 * failure names), and a request that waits moves the twin's clock until it is answered.
 */
import { parseWait } from '../core/values.ts';
import type { Move } from '../records/move.ts';
import type { Motor } from '../robot/motor.ts';
import type { ContactRules } from './checks/contacts.ts';
import { type IkOptions, type IkTarget, ikChecks } from './checks/ik.ts';
import { type MoveCheckOptions, checkMoveOnRemote, checkMoveOnTwin } from './checks/move.ts';
import { RunObserver } from './checks/observe.ts';
import { type PrimitiveRunOptions, primitiveRunCheck } from './checks/primitive.ts';
import { callText } from './args.ts';
import { CheckRecorder } from './expect.ts';
import { type ScenarioWatch, TimeLimitError, describeFailure } from './limits.ts';
import { type MoveRef, loadMove, moveNameOf } from './moves.ts';
import type { CheckResult } from './result.ts';
import { type Answer, type Target, ok } from './target.ts';
import type { Twin } from './twin.ts';

export interface ScenarioContext {
  readonly robot: string;
  /** The REST API of what the scenario runs on (twin or server); a POST with `wait: true` moves the twin's time. */
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
  /** Calls a route that must answer 200 and returns its JSON; with `wait: true` in the body, time moves until it answers. */
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
  /** The robot's IK chains. */
  readonly chains: readonly string[];
  readonly dir: string;
  readonly rules: ContactRules;
  readonly results: CheckResult[];
  readonly watch: ScenarioWatch;
  /** The scenario module's absolute path, to find its line in a stack. */
  readonly scenarioFile?: string;
}

/** A little more than what is left, so that a request still unanswered at the limit is over it. */
const OVER_S = 0.05;

export function createContext(p: ContextParts): ScenarioContext {
  const { twin, rules, results, watch } = p;
  const raw = p.target;
  let inCheck: string | undefined;
  /** Enters the step named by the call; `fn` runs in it, and a limit passed meanwhile wins over its error. */
  const step = async <T>(name: string, args: readonly unknown[], fn: () => Promise<T>): Promise<T> => {
    const call = callText(name, args);
    const s = watch.enter(
      inCheck === undefined ? call : `t.check(${JSON.stringify(inCheck)}) > ${call}`,
      new Error(),
    );
    try {
      return await fn();
    } catch (err) {
      watch.check();
      throw err;
    } finally {
      s.done = true;
    }
  };
  const requireTwin = (): Twin => {
    if (!twin) throw new Error('this part of the scenario needs the twin, not a server by URL');
    return twin;
  };
  const add = (prefix: string, checks: CheckResult[]): CheckResult[] => {
    const named = checks.map((c) => ({ ...c, name: prefix ? `${prefix}: ${c.name}` : c.name }));
    results.push(...named);
    return named;
  };
  const post = (url: string, body: unknown): Promise<Answer> =>
    body !== null && typeof body === 'object' && parseWait((body as { wait?: unknown }).wait)
      ? raw.postWaiting(url, body, watch.simLeft + OVER_S)
      : raw.post(url, body);
  const cardUrl = (name: string, op: string) => `/sim/cards/${encodeURIComponent(name)}/${op}.json`;
  const target: Target = {
    kind: raw.kind,
    label: raw.label,
    now: () => raw.now(),
    get: (url) => step('t.target.get', [url], () => raw.get(url)),
    post: (url, body) => step('t.target.post', [url, body], () => post(url, body)),
    postWaiting: (url, body, max) =>
      step('t.target.postWaiting', [url, body, max], () =>
        raw.postWaiting(url, body, Math.min(max ?? Infinity, watch.simLeft + OVER_S)),
      ),
    wait: (s) => step('t.target.wait', [s], () => raw.wait(s)),
  };
  return {
    robot: p.robot,
    target,
    twin,
    requireTwin,
    motors: p.motors,
    dir: p.dir,
    results,
    wait: (s) => step('t.wait', [s], () => raw.wait(s)),
    call: (method, url, body) =>
      step('t.call', [method, url, body], () =>
        ok(method === 'GET' ? raw.get(url) : post(url, body), `${method} ${url}`),
      ),
    hand: (targets, duration) =>
      step('t.hand', [targets, duration], async () => {
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
      }),
    cards: {
      list: () => step('t.cards.list', [], () => raw.get('/sim/cards/list.json')),
      show: (name, distance) =>
        step('t.cards.show', [name, distance], () =>
          raw.post(cardUrl(name, 'show'), distance === undefined ? undefined : { distance }),
        ),
      pose: (name, xyz, rpy) =>
        step('t.cards.pose', [name, xyz, rpy], () => raw.post(cardUrl(name, 'pose'), { xyz, rpy })),
      hide: (name) => step('t.cards.hide', [name], () => raw.post(cardUrl(name, 'hide'))),
    },
    check: (name, body) =>
      step('t.check', [name], async () => {
        const recorder = new CheckRecorder(name);
        let result: CheckResult;
        inCheck = name;
        try {
          await body(recorder);
          result = recorder.result();
        } catch (err) {
          // A time limit stops the scenario; anything else is this check's error.
          if (err instanceof TimeLimitError) throw err;
          result = {
            name,
            status: 'error',
            summary: describeFailure(err, watch, p.scenarioFile).error,
            findings: [],
            measured: {},
          };
        } finally {
          inCheck = undefined;
        }
        results.push(result);
        return result;
      }),
    loadMove: (ref) =>
      step('t.loadMove', [ref], () => loadMove(typeof ref === 'string' ? { file: ref } : ref, p.dir)),
    checkMove: (label, move, opts) =>
      step('t.checkMove', [label], async () => {
        const checks = twin
          ? await checkMoveOnTwin(twin, rules, moveNameOf(label), move, opts)
          : await checkMoveOnRemote(raw, p.motors, opts?.name ?? moveNameOf(label), move, opts);
        return add(label, checks);
      }),
    checkIkTargets: (chain, targets, opts) =>
      step('t.checkIkTargets', [chain, targets, opts], async () => {
        const observer = twin ? new RunObserver(twin, [], rules) : undefined;
        try {
          const checks = await ikChecks(raw, chain, targets, opts);
          return add('', [
            ...checks,
            ...(observer?.collisions(rules).map((c) => ({ ...c, name: `${chain}: ${c.name}` })) ?? []),
          ]);
        } finally {
          observer?.stop();
        }
      }),
    checkPrimitive: (name, seconds, opts = {}) =>
      step('t.checkPrimitive', [name, seconds, opts], async () => {
        const observer = twin ? new RunObserver(twin, [], rules) : undefined;
        try {
          const run = await primitiveRunCheck(raw, name, seconds, {
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
      }),
  };
}

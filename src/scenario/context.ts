/**
 * The `t` a scenario's run(t) gets. Every call checks its arguments (scenario files run untyped), enters a step of
 * the scenario's watch (time limits, and the step a failure names), and a request that waits moves the twin's
 * clock until it is answered.
 */
import { access, readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseWait } from '../core/values.ts';
import type { Move } from '../records/move.ts';
import type { Motor } from '../robot/motor.ts';
import { Args, type ScenarioArgumentError, handArgs, isNamed, show } from './args.ts';
import type { ContactRules } from './checks/contacts.ts';
import { type IkOptions, type IkTarget, ikChecks } from './checks/ik.ts';
import { type MoveCheckOptions, checkMoveOnRemote, checkMoveOnTwin } from './checks/move.ts';
import { RunObserver } from './checks/observe.ts';
import { type PrimitiveRunOptions, primitiveRunCheck } from './checks/primitive.ts';
import { CheckRecorder } from './expect.ts';
import { type ScenarioWatch, describeFailure } from './limits.ts';
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
  call(method: 'GET' | 'POST', url: `/${string}`, body?: unknown): Promise<Record<string, unknown>>;
  /** A hand drags a joint on the twin to `degrees` (user frame) over `seconds` of sim time; resolves when let go. */
  hand(motor: string, degrees: number, seconds: number): Promise<void>;
  /** Several joints at once: `{motor: degrees}`. */
  hand(targets: Readonly<Record<string, number>>, seconds: number): Promise<void>;
  /** The sim's marker cards (routes of the vision work: GET /sim/cards/list.json, show, pose, hide). */
  readonly cards: {
    list(): Promise<Answer>;
    show(name: string, distance?: number): Promise<Answer>;
    pose(
      name: string,
      xyz: readonly [number, number, number],
      rpy: readonly [number, number, number],
    ): Promise<Answer>;
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
  const motorNames = p.motors.map((m) => m.name);
  let inCheck: string | undefined;
  /** Enters the step named by the call; `fn` runs in it, and a limit passed meanwhile wins over its error. */
  const step = async <T>(name: string, args: readonly unknown[], fn: (a: Args) => Promise<T>): Promise<T> => {
    const a = new Args(name, args);
    const s = watch.enter(
      inCheck === undefined ? a.call : `t.check(${show(inCheck)}) > ${a.call}`,
      new Error(),
    );
    try {
      return await fn(a);
    } catch (err) {
      watch.check();
      if (isNamed<ScenarioArgumentError>(err, 'ScenarioArgumentError')) err.call ??= s;
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
  /** A name, checked against the list the target gives (unchecked when the target does not give it). */
  const listed = async (a: Args, v: unknown, url: string, pick: (body: never) => string[], what: string) => {
    const name = a.string('name', v, '"name"');
    const answer = await raw.get(url);
    if (answer.status === 200) a.oneOf('name', name, pick(answer.body as never), what);
    return name;
  };
  const post = (url: string, body: unknown): Promise<Answer> =>
    body !== null && typeof body === 'object' && parseWait((body as { wait?: unknown }).wait)
      ? raw.postWaiting(url, body, watch.simLeft + OVER_S)
      : raw.post(url, body);
  const card = (a: Args, name: unknown) =>
    listed(
      a,
      name,
      '/sim/cards/list.json',
      (b: { cards: { name: string }[] }) => b.cards.map((c) => c.name),
      'the cards of the sim (GET /sim/cards/list.json)',
    );
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
    wait: (...args: unknown[]) =>
      step('t.wait', args, (a) => raw.wait(a.number('seconds', args[0], { min: 0 }))),
    call: (...args: unknown[]) =>
      step('t.call', args, (a) => {
        const [, , body] = args;
        const method = a.oneOf('method', args[0], ['GET', 'POST'], 'the methods of the REST API');
        const url =
          typeof args[1] === 'string' && args[1].startsWith('/')
            ? args[1]
            : a.fail(
                `url is ${show(args[1])}; give a path on the target starting with "/", e.g. "/robot.json"`,
              );
        if (method === 'GET' && body !== undefined)
          a.fail(`a GET takes no body (given ${show(body)}); use "POST"`);
        const what = `${method} ${url}${body === undefined ? '' : ` ${show(body, 200)}`}`;
        return ok(method === 'GET' ? raw.get(url) : post(url, body), what);
      }),
    hand: (...args: unknown[]) =>
      step('t.hand', args, async (a) => {
        const { targets, duration } = handArgs(a, args, motorNames, p.robot);
        const t = requireTwin();
        let pending = 0;
        const drags = [...targets].map(([name, position]) => {
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
      show: (...args: unknown[]) =>
        step('t.cards.show', args, async (a) => {
          a.string('name', args[0], '"card name"');
          const distance = a.optionalNumber('distance', args[1], { above: 0 }, ' (metres)');
          const name = await card(a, args[0]);
          return raw.post(cardUrl(name, 'show'), distance === undefined ? undefined : { distance });
        }),
      pose: (...args: unknown[]) =>
        step('t.cards.pose', args, async (a) => {
          a.string('name', args[0], '"card name"');
          const xyz = a.triple('xyz', args[1], 'metres');
          const rpy = a.triple('rpy', args[2], 'radians');
          return raw.post(cardUrl(await card(a, args[0]), 'pose'), { xyz, rpy });
        }),
      hide: (...args: unknown[]) =>
        step('t.cards.hide', args, async (a) => raw.post(cardUrl(await card(a, args[0]), 'hide'))),
    },
    check: (...args: unknown[]) =>
      step('t.check', [args[0]], async (a) => {
        const name = a.string('name', args[0], '"m1 peak"');
        const body = args[1] as (c: CheckRecorder) => void | Promise<void>;
        a.func('the second argument', body, "(c) => c.expect(value, 'what').toBeAtMost(limit)");
        const recorder = new CheckRecorder(name);
        let result: CheckResult;
        inCheck = name;
        try {
          await body(recorder);
          result = recorder.result();
        } catch (err) {
          // A bad argument or a time limit stops the scenario; anything else is this check's error.
          if (isNamed(err, 'ScenarioArgumentError') || isNamed(err, 'TimeLimitError')) throw err;
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
    loadMove: (...args: unknown[]) => step('t.loadMove', args, (a) => loadChecked(a, args[0], p.dir)),
    checkMove: (...args: unknown[]) =>
      step('t.checkMove', args.slice(0, 1), async (a) => {
        const label = a.string('label', args[0], '"wave"');
        const move = args[1];
        if (typeof move === 'string')
          a.fail(
            `move is the string ${show(move)}; load it first: t.checkMove(label, await t.loadMove(${show(move)}))`,
          );
        const m = move as Move;
        if (typeof m !== 'object' || m === null || !Array.isArray(m.frames) || !Array.isArray(m.motors))
          a.fail(`move is ${show(move)}; give a move from t.loadMove(file or {name})`);
        const opts = args[2] as (MoveCheckOptions & { name?: string }) | undefined;
        a.options('options', opts);
        const checks = twin
          ? await checkMoveOnTwin(twin, rules, moveNameOf(label), m, opts)
          : await checkMoveOnRemote(raw, p.motors, opts?.name ?? moveNameOf(label), m, opts);
        return add(label, checks);
      }),
    checkIkTargets: (...args: unknown[]) =>
      step('t.checkIkTargets', args, async (a) => {
        const chain = a.oneOf('chain', args[0], p.chains, `${p.robot}'s IK chains`);
        const targets = ikTargets(a, args[1]);
        a.options('options', args[2]);
        const observer = twin ? new RunObserver(twin, [], rules) : undefined;
        try {
          const checks = await ikChecks(raw, chain, targets, args[2] as IkOptions | undefined);
          return add('', [
            ...checks,
            ...(observer?.collisions(rules).map((c) => ({ ...c, name: `${chain}: ${c.name}` })) ?? []),
          ]);
        } finally {
          observer?.stop();
        }
      }),
    checkPrimitive: (...args: unknown[]) =>
      step('t.checkPrimitive', args, async (a) => {
        a.string('name', args[0], '"dance"');
        const seconds = a.number('seconds', args[1], { above: 0 });
        a.options('options', args[2]);
        const name = await listed(
          a,
          args[0],
          '/primitives/list.json',
          (b: { primitives: string[] }) => b.primitives,
          'the primitives (GET /primitives/list.json)',
        );
        const observer = twin ? new RunObserver(twin, [], rules) : undefined;
        try {
          const run = await primitiveRunCheck(raw, name, seconds, {
            lastError: twin ? (n) => twin.primitives.get(n).lastError : undefined,
            ...(args[2] as PrimitiveRunOptions | undefined),
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

function ikTargets(a: Args, v: unknown): IkTarget[] {
  if (!Array.isArray(v) || !v.length)
    a.fail(`targets is ${show(v)}; give a list of targets, e.g. [{xyz: [0.1, -0.15, 0.12]}] (metres)`);
  return v.map((t: unknown, i) => {
    if (typeof t !== 'object' || t === null || Array.isArray(t))
      a.fail(`targets[${i}] is ${show(t)}; give {xyz: [x, y, z], duration?, label?}`);
    const { xyz, duration, label } = t as Record<string, unknown>;
    a.triple(`targets[${i}].xyz`, xyz, 'metres');
    a.optionalNumber(`targets[${i}].duration`, duration, { above: 0 }, ' (seconds)');
    if (label !== undefined) a.string(`targets[${i}].label`, label, '"front"');
    return t as IkTarget;
  });
}

/** t.loadMove's argument: a file (relative to the scenario) that exists, or a name the records folder has. */
async function loadChecked(a: Args, ref: unknown, dir: string): Promise<Move> {
  const r: MoveRef | undefined =
    typeof ref === 'string'
      ? { file: ref }
      : typeof ref === 'object' && ref !== null
        ? (ref as MoveRef)
        : undefined;
  if (!r || (r.file === undefined && r.name === undefined))
    a.fail(`the argument is ${show(ref)}; give a .record file, "moves/wave.record", or {name, recordsDir}`);
  if (r.file !== undefined) {
    const file = path.resolve(dir, a.string('file', r.file, '"moves/wave.record"'));
    if (
      !(await access(file).then(
        () => true,
        () => false,
      ))
    )
      a.fail(`file ${show(r.file)} does not exist (looked for ${file}, relative to the scenario's folder)`);
  } else {
    const folder = path.resolve(r.recordsDir ?? 'records');
    const moves = (await readdir(folder).catch(() => [] as string[]))
      .filter((f) => f.endsWith('.record'))
      .map((f) => f.slice(0, -'.record'.length))
      .sort();
    a.oneOf('name', r.name, moves, `the moves in ${folder}`);
  }
  return loadMove(r, dir);
}

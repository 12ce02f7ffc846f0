/**
 * A scenario's time limits, in sim time and in wall time, and the step it is in: every API call enters a step, and
 * a scenario over either limit stops with an error naming that step and its line.
 */
import { ScenarioArgumentError, isNamed, show } from './args.ts';
import { type Site, siteOf, siteText, userStack } from './where.ts';

export interface TimeLimit {
  /** Seconds of the target's time (sim time on the twin, the clock on a server by URL). */
  readonly simSeconds?: number;
  /** Real seconds from the start of run(t) (the twin's start is not counted). */
  readonly wallSeconds?: number;
}

/** The defaults: 6 times the sim time of the longest example (torso-ik, 48 s); on the twin 300 s take 10-30 s. */
export const DEFAULT_TIME_LIMIT: Required<TimeLimit> = { simSeconds: 300, wallSeconds: 120 };

/** The scenario's own limit, else the command line's, else the default, field by field. */
export function resolveLimit(own?: TimeLimit, cli?: TimeLimit): Required<TimeLimit> {
  return {
    simSeconds: own?.simSeconds ?? cli?.simSeconds ?? DEFAULT_TIME_LIMIT.simSeconds,
    wallSeconds: own?.wallSeconds ?? cli?.wallSeconds ?? DEFAULT_TIME_LIMIT.wallSeconds,
  };
}

/** Checks a limit given by a user (definition or flag); `where` names it in the message. */
export function checkLimit(limit: unknown, where: string): TimeLimit | undefined {
  if (limit === undefined) return undefined;
  if (typeof limit !== 'object' || limit === null || Array.isArray(limit))
    throw new ScenarioArgumentError(
      `${where} is ${JSON.stringify(limit)}; give {simSeconds, wallSeconds}, e.g. {simSeconds: 60, wallSeconds: 30}`,
    );
  for (const [key, v] of Object.entries(limit)) {
    if (key !== 'simSeconds' && key !== 'wallSeconds')
      throw new ScenarioArgumentError(`${where}.${key} is not a limit: use simSeconds and wallSeconds`);
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
      throw new ScenarioArgumentError(`${where}.${key} is ${JSON.stringify(v)}; give seconds, a number > 0`);
  }
  return limit as TimeLimit;
}

/** The step a scenario is in: the API call (or check) and where the scenario made it. */
export interface Step {
  readonly label: string;
  /** The call has returned. */
  done: boolean;
  /** Captured when the step began; its stack is read only if the step is reported (reading one costs ~0.2 ms). */
  readonly trace: Error;
}

export class TimeLimitError extends Error {
  override readonly name = 'TimeLimitError';
  readonly step: string;
  readonly site: Site | undefined;

  constructor(message: string, step: string, site: Site | undefined) {
    super(message);
    this.step = step;
    this.site = site;
  }
}

const NO_STEP = 'before its first call of the scenario API';

/** Watches one scenario run. `begin` once the target is there; `enter` at each step. */
export class ScenarioWatch {
  readonly limit: Required<TimeLimit>;
  /** Rejects when a limit is passed (the wall limit by a timer, so a request that never answers ends too). */
  readonly expired: Promise<never>;
  #step: Step | undefined;
  #simNow: () => number = () => 0;
  #simStart = 0;
  #simName = 'sim';
  #wallStart: number | undefined;
  readonly #scenarioFile: string | undefined;
  readonly #onStep: ((label: string) => void) | undefined;
  #error: TimeLimitError | undefined;
  #reject: (err: TimeLimitError) => void = () => {};
  #timer: NodeJS.Timeout | undefined;

  constructor(
    limit: Required<TimeLimit>,
    opts: { scenarioFile?: string; onStep?: (label: string) => void } = {},
  ) {
    this.limit = limit;
    this.#scenarioFile = opts.scenarioFile;
    this.#onStep = opts.onStep;
    this.expired = new Promise<never>((_, reject) => (this.#reject = reject));
    this.expired.catch(() => {}); // read through Promise.race; never unhandled
  }

  /**
   * run(t) starts: both clocks count from here. `simNow` is the target's clock; `name` says what it is in messages
   * ('sim', or 'target' for a server).
   */
  begin(simNow: () => number, name = 'sim'): void {
    this.#simNow = simNow;
    this.#simStart = simNow();
    this.#simName = name;
    this.#wallStart = performance.now() / 1000;
    this.#timer = setTimeout(() => this.#over('wall'), this.limit.wallSeconds * 1000);
    this.#timer.unref();
  }

  get simElapsed(): number {
    return this.#simNow() - this.#simStart;
  }

  get wallElapsed(): number {
    return this.#wallStart === undefined ? 0 : performance.now() / 1000 - this.#wallStart;
  }

  /** Sim seconds left before the limit (never negative). */
  get simLeft(): number {
    return Math.max(0, this.limit.simSeconds - this.simElapsed);
  }

  get step(): Step | undefined {
    return this.#step;
  }

  /** The current step and where the scenario called it. */
  stepText(): { label: string; site: Site | undefined; done: boolean } {
    const s = this.#step;
    return {
      label: s?.label ?? NO_STEP,
      site: s && siteOf(s.trace.stack, this.#scenarioFile),
      done: !!s?.done,
    };
  }

  /** A new step; throws if a limit is already passed. Its `done` is set by the caller when the call returns. */
  enter(label: string, trace: Error): Step {
    if (label !== this.#step?.label) this.#onStep?.(label);
    const step = { label, trace, done: false };
    this.#step = step;
    this.check();
    return step;
  }

  /** Throws the limit's error once either limit is passed. */
  check(): void {
    if (this.#error) throw this.#error;
    if (this.simElapsed > this.limit.simSeconds + 1e-9) this.#over('sim');
    else if (this.wallElapsed > this.limit.wallSeconds) this.#over('wall');
    if (this.#error) throw this.#error;
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #over(kind: 'sim' | 'wall'): void {
    if (this.#error) return;
    const { label, site, done } = this.stepText();
    const limit = kind === 'sim' ? this.limit.simSeconds : this.limit.wallSeconds;
    const clock = kind === 'sim' ? this.#simName : 'wall';
    const figures = `${this.simElapsed.toFixed(2)} s of ${this.#simName} time, ${this.wallElapsed.toFixed(2)} s of wall time`;
    this.#error = new TimeLimitError(
      `over its ${clock}-time limit of ${limit} s (${figures}) ${this.#step ? `${done ? 'after' : 'in'} step ` : ''}${label}`,
      label,
      site,
    );
    this.#reject(this.#error);
  }
}

/** What a report says of an error that stopped a scenario: one line led by its file and line, and the step. */
export interface ScenarioFailure {
  readonly error: string;
  /** The error's class: TimeLimitError, ScenarioArgumentError, Error, TypeError... */
  readonly errorType: string;
  readonly location?: Site;
  readonly step?: string;
  /** The frames in the user's code, for an error thrown by it. */
  readonly stack?: string;
}

/** `lead` goes before the message, after the location: "x.ts:3: <lead>boom". */
export function describeFailure(
  err: unknown,
  watch?: ScenarioWatch,
  scenarioFile?: string,
  lead = '',
): ScenarioFailure {
  const step = watch?.step ? watch.stepText() : undefined;
  if (isNamed<TimeLimitError>(err, 'TimeLimitError'))
    return located(err.name, lead + err.message, err.site, err.step);
  if (!(err instanceof Error))
    return located('thrown value', `${lead}the scenario threw ${show(err)}`, step?.site, step?.label);
  // A bad argument: where its call was made. Another error: the scenario's frame in its stack, else the step's.
  const call = isNamed<ScenarioArgumentError>(err, 'ScenarioArgumentError') ? err.call : undefined;
  const site =
    (call && siteOf(call.trace.stack, scenarioFile)) ??
    (scenarioFile ? siteOf(err.stack, scenarioFile) : undefined) ??
    step?.site ??
    siteOf(err.stack);
  const ours = err.name === 'ScenarioArgumentError';
  const stack = ours ? undefined : userStack(err.stack);
  const message = ours || err.name === 'Error' ? err.message : `${err.name}: ${err.message}`;
  return {
    ...located(err.name, lead + message, site, call?.label ?? step?.label),
    ...(stack ? { stack } : {}),
  };
}

function located(
  errorType: string,
  message: string,
  site: Site | undefined,
  step: string | undefined,
): ScenarioFailure {
  return {
    error: site ? `${siteText(site)}: ${message}` : message,
    errorType,
    ...(site ? { location: site } : {}),
    ...(step ? { step } : {}),
  };
}

/**
 * One scenario job as a runner process runs it (src/scenario/worker.ts): the module loaded, run on a fresh twin
 * (nothing is shared between two scenarios but the loaded code), each step it enters told to the runner.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ScenarioDefinition, defineScenario, runScenario } from './api.ts';
import { type TimeLimit, describeFailure, resolveLimit } from './limits.ts';
import { type ScenarioResult, jobError } from './result.ts';

export interface Job {
  readonly id: number;
  /** Absolute path of the scenario module. */
  readonly path: string;
  /** As shown in reports. */
  readonly file: string;
  readonly robot?: string;
  readonly url?: string;
  /** The command line's limits, for scenarios that set none. */
  readonly timeLimit?: TimeLimit;
}

export type WorkerMessage =
  | { readonly id: number; readonly result: ScenarioResult }
  /** run(t) began (the twin ready): its wall limit counts from now. */
  | { readonly id: number; readonly wallSeconds: number; readonly name: string; readonly robot: string }
  | { readonly id: number; readonly step: string };

/** Loads a scenario module and runs it; a module that does not load is an 'error' result. */
export async function runJob(job: Job, tell: (m: WorkerMessage) => void = () => {}): Promise<ScenarioResult> {
  const started = performance.now();
  let def: ScenarioDefinition;
  try {
    const mod = (await import(pathToFileURL(job.path).href)) as { default?: ScenarioDefinition };
    if (!mod.default || typeof mod.default.run !== 'function')
      throw new Error('the module has no default export made with defineScenario({name, robot, run})');
    def = defineScenario(mod.default);
  } catch (err) {
    const failure = describeFailure(err, undefined, job.path, 'cannot load the scenario: ');
    return jobError(job, failure, performance.now() - started);
  }
  const { wallSeconds } = resolveLimit(def.timeLimit, job.timeLimit);
  return runScenario(def, path.dirname(job.path), {
    file: job.file,
    robot: job.robot,
    url: job.url,
    timeLimit: job.timeLimit,
    scenarioFile: job.path,
    onStep: (step) => tell({ id: job.id, step }),
    onBegin: (robot) => tell({ id: job.id, wallSeconds, name: def.name, robot }),
  });
}

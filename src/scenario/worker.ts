/**
 * A runner process: receives scenario jobs from the runner over IPC, runs each on a fresh twin (nothing is shared
 * between two scenarios but the loaded code) and sends back the result.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ScenarioDefinition, runScenario } from './api.ts';
import { type ScenarioResult, jobError } from './result.ts';

export interface Job {
  readonly id: number;
  /** Absolute path of the scenario module. */
  readonly path: string;
  /** As shown in reports. */
  readonly file: string;
  readonly robot?: string;
  readonly url?: string;
}

export type WorkerMessage = { readonly id: number; readonly result: ScenarioResult };

/** Loads a scenario module and runs it; a module that does not load is an 'error' result. */
export async function runJob(job: Job): Promise<ScenarioResult> {
  const started = performance.now();
  let def: ScenarioDefinition;
  try {
    const mod = (await import(pathToFileURL(job.path).href)) as { default?: ScenarioDefinition };
    if (!mod.default || typeof mod.default.run !== 'function')
      throw new Error('the module has no default export made with defineScenario({name, robot, run})');
    def = mod.default;
  } catch (err) {
    return jobError(job, `cannot load the scenario: ${(err as Error).message}`, performance.now() - started);
  }
  return runScenario(def, path.dirname(job.path), { file: job.file, robot: job.robot, url: job.url });
}

if (process.send) {
  process.on('message', (job: Job) => {
    void runJob(job).then((result) => process.send!({ id: job.id, result } satisfies WorkerMessage));
  });
}

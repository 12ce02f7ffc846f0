/** A primitive runs for N seconds without stopping on an error (and, on the twin, without hitting anything). */
import { type CheckResult, type Finding, checkResult, fmt } from '../result.ts';
import { type Target, ok } from '../target.ts';

export interface PrimitiveRunOptions {
  /** How often the run is looked at, seconds (default 0.1). */
  readonly pollS?: number;
  /** Reads why a primitive stopped (the twin knows; a remote server does not say). */
  readonly lastError?: (name: string) => string | undefined;
}

export async function primitiveRunCheck(
  target: Target,
  name: string,
  seconds: number,
  opts: PrimitiveRunOptions = {},
): Promise<CheckResult> {
  const poll = opts.pollS ?? 0.1;
  const findings: Finding[] = [];
  await ok(target.get(`/primitives/${name}/start.json`), `start ${name}`);
  const t0 = target.now();
  let elapsed = 0;
  while (elapsed < seconds - 1e-9) {
    await target.wait(Math.min(poll, seconds - elapsed));
    elapsed = target.now() - t0;
    const running = (await ok(target.get('/primitives/running/list.json'), 'running primitives'))
      .primitives as string[];
    if (running.includes(name)) continue;
    const why = opts.lastError?.(name);
    findings.push({
      message: `${name} stopped at t=${fmt(elapsed)} s of the ${fmt(seconds)} s run${why ? `: ${why}` : ''}`,
      where: name,
      time: elapsed,
      value: elapsed,
      limit: seconds,
      margin: seconds - elapsed,
      unit: 's',
    });
    break;
  }
  const error = opts.lastError?.(name);
  if (!findings.length && error)
    findings.push({ message: `${name} reported an error: ${error}`, where: name });
  await target.get(`/primitives/${name}/stop.json`);
  return checkResult(
    `${name}: runs ${fmt(seconds, 1)} s`,
    findings.length ? `stopped early` : `ran ${fmt(elapsed, 2)} s, still running at the end, no error`,
    findings,
    { ran_s: elapsed },
  );
}

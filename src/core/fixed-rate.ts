/**
 * The fixed-rate loop shared by the robot's control loop and the real bus's sync loop
 * (docs/decisions/0050-one-fixed-rate-loop.md).
 */
import { type Clock, isAbortError } from './clock.ts';

/** Behind its schedule by more than this many periods, a loop starts again from now instead of bursting. */
export const MAX_BEHIND_PERIODS = 5;

/**
 * Calls `cycle` every `period` seconds of `clock` (the first one period after the call) until `signal` aborts, each
 * call after the one before has ended. A cycle that starts late is told by how much (seconds); cycles that fell
 * behind catch up back to back, unless more than MAX_BEHIND_PERIODS behind, when the schedule restarts from now.
 * Resolves once aborted; rejects with what `cycle` throws.
 */
export async function runFixedRate(
  clock: Clock,
  period: number,
  signal: AbortSignal,
  cycle: (lateS: number) => void | Promise<void>,
): Promise<void> {
  let next = clock.now();
  while (!signal.aborted) {
    next += period;
    try {
      await clock.sleepUntil(next, signal);
    } catch (err) {
      if (isAbortError(err)) return;
      throw err;
    }
    if (signal.aborted) return;
    const now = clock.now();
    if (now - next > MAX_BEHIND_PERIODS * period) next = now;
    await cycle(Math.max(0, now - next));
  }
}

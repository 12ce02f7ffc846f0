/** Checks of a waited goto's answer (docs/api.md "Honest answers"), shared by the REST suites. */
import { expect } from 'chai';
import { GOTO_TOLERANCE, fact, type RobotFact } from './facts.ts';

/**
 * `answer` is `base` (motors, duration, waiting, cancelled) plus its arrival: per motor the error and the tolerance of
 * its model, and `reached` when every error is within its tolerance. With `present` (the motor's present_position
 * read right after the answer), each error must be that position minus the target.
 */
export async function expectArrival(
  answer: Record<string, unknown>,
  base: Record<string, unknown>,
  robot: RobotFact,
  present?: (motor: string) => Promise<number>,
): Promise<void> {
  const { reached, error, tolerance, ...rest } = answer;
  expect(rest).to.deep.equal(base);
  const targets = base.motors as Record<string, number>;
  const errors = error as Record<string, number>;
  const tolerances = tolerance as Record<string, number>;
  expect(Object.keys(errors), 'error').to.deep.equal(Object.keys(targets));
  expect(Object.keys(tolerances), 'tolerance').to.deep.equal(Object.keys(targets));
  let all = true;
  for (const [m, target] of Object.entries(targets)) {
    expect(tolerances[m], `${m} tolerance`).to.equal(GOTO_TOLERANCE[fact(robot, m).model]);
    // The motors are at rest at the answer (or SETTLE_MAX_S passed): a read a step later finds them where it said.
    if (present) expect(errors[m], `${m} error`).to.be.closeTo((await present(m)) - target, 0.3);
    all &&= Math.abs(errors[m]!) <= tolerances[m]!;
  }
  expect(reached, 'reached').to.equal(all);
}

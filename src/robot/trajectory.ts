/** Minimum-jerk profile s(tau) for tau in [0, 1]: zero speed and acceleration at both ends. */
export function minimumJerk(tau: number): number {
  const t = Math.min(1, Math.max(0, tau));
  return t * t * t * (10 - 15 * t + 6 * t * t);
}

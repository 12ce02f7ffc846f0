/**
 * Small least-squares tools of the fit (fit.ts): Nelder-Mead, central-difference Jacobians, Levenberg-Marquardt steps
 * and the inverse of a small normal matrix.
 */

/**
 * The Jacobian's step in the fit's log coordinates (5 %): the forward model's friction sticks and slips, so its
 * residuals are jagged at a 1 % scale, where central differences read steep walls (sigmas of 3 % on figures 30-80 %
 * off) and Levenberg-Marquardt stalls; at 5 % they read the slope a figure's 15 % tolerance is judged on
 * (docs/decisions/0081-the-fit-at-its-tolerance-scale.md).
 */
export const JACOBIAN_STEP = 0.05;

/** Mean square of the residuals: what the fits minimise. */
export const meanSquareOf = (r: Float64Array) => r.reduce((s, v) => s + v * v, 0) / r.length;

/** Root mean square of the residuals. */
export const rmsOf = (r: Float64Array) => Math.sqrt(meanSquareOf(r));

/** d residual / d x_i for i in `free`, by central differences of step h. */
export async function jacobian(
  residuals: (x: readonly number[]) => Promise<Float64Array>,
  x: readonly number[],
  free: readonly number[],
  h = JACOBIAN_STEP,
): Promise<Float64Array[]> {
  const J: Float64Array[] = [];
  for (const i of free) {
    const up = [...x];
    const down = [...x];
    up[i]! += h;
    down[i]! -= h;
    const a = await residuals(up);
    const b = await residuals(down);
    J.push(a.map((v, k) => (v - b[k]!) / (2 * h)));
  }
  return J;
}

/** J^T J. */
export function normal(J: readonly Float64Array[]): number[][] {
  return J.map((ji) => J.map((jj) => ji.reduce((s, v, k) => s + v * jj[k]!, 0)));
}

/**
 * Levenberg-Marquardt steps from where Nelder-Mead stopped (its simplex stalls short of the optimum on a flat valley:
 * a simplex of five shrinks slowly in a long narrow valley). Returns the point reached and the
 * last step it proposed: a step not taken is a distance to the optimum the sigmas must not undercut.
 */
export async function polish(
  residuals: (x: readonly number[]) => Promise<Float64Array>,
  x0: readonly number[],
  free: readonly number[],
  iterations = 6,
): Promise<{ x: number[]; r: Float64Array; lastStep: number[] }> {
  let x = [...x0];
  let r = await residuals(x);
  const sq = (v: Float64Array) => v.reduce((s, e) => s + e * e, 0);
  let lastStep = x.map(() => 0);
  for (let it = 0; it < iterations; it++) {
    const J = await jacobian(residuals, x, free);
    const A = normal(J);
    const g = J.map((ji) => ji.reduce((s, v, k) => s + v * r[k]!, 0));
    let moved = false;
    for (const lambda of [1e-3, 1e-2, 1e-1, 1]) {
      const inv = invert(A.map((row, i) => row.map((v, j) => (i === j ? v * (1 + lambda) : v))));
      if (!inv) continue;
      const delta = inv.map((row) => -row.reduce((s, v, k) => s + v * g[k]!, 0));
      const y = [...x];
      free.forEach((i, k) => (y[i]! += Math.max(-0.5, Math.min(0.5, delta[k]!))));
      lastStep = x.map((_, i) => y[i]! - x[i]!);
      const ry = await residuals(y);
      if (sq(ry) < sq(r)) {
        [x, r, moved] = [y, ry, true];
        break;
      }
    }
    if (!moved) break;
  }
  return { x, r, lastStep };
}

/** Gauss-Jordan inverse of a small symmetric matrix; undefined when singular. */
export function invert(a: number[][]): number[][] | undefined {
  const n = a.length;
  const m = a.map((row, i) => [...row, ...a.map((_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    if (Math.abs(m[p]![c]!) < 1e-300) return undefined;
    [m[c], m[p]] = [m[p]!, m[c]!];
    const d = m[c]![c]!;
    for (let k = 0; k < 2 * n; k++) m[c]![k]! /= d;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]!;
      for (let k = 0; k < 2 * n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row) => row.slice(n));
}

/** Nelder-Mead from x0 with initial steps `step`, at most `maxEval` evaluations. */
export async function nelderMead(
  f: (x: number[]) => Promise<number>,
  x0: number[],
  step: number[],
  maxEval: number,
): Promise<number[]> {
  // Coordinates with a zero step are held where they are.
  const free = step.flatMap((s, i) => (s !== 0 ? [i] : []));
  const n = free.length;
  const full = (y: number[]) => x0.map((v, i) => (free.includes(i) ? y[free.indexOf(i)]! : v));
  const g = (y: number[]) => f(full(y));
  const y0 = free.map((i) => x0[i]!);
  const simplex: { x: number[]; f: number }[] = [];
  for (const y of [y0, ...y0.map((_, i) => y0.map((v, j) => (i === j ? v + step[free[i]!]! : v)))])
    simplex.push({ x: y, f: await g(y) });
  let evals = n + 1;
  const comb = (a: number[], b: number[], t: number) => a.map((v, i) => v + t * (b[i]! - v));
  while (evals < maxEval) {
    simplex.sort((a, b) => a.f - b.f);
    const best = simplex[0]!;
    const worst = simplex[n]!;
    if (Math.abs(worst.f - best.f) <= 1e-10 * (Math.abs(best.f) + 1e-12)) break;
    const centroid = y0.map((_, i) => simplex.slice(0, n).reduce((s, p) => s + p.x[i]!, 0) / n);
    const xr = comb(centroid, worst.x, -1);
    const fr = await g(xr);
    evals++;
    if (fr < best.f) {
      const xe = comb(centroid, worst.x, -2);
      const fe = await g(xe);
      evals++;
      simplex[n] = fe < fr ? { x: xe, f: fe } : { x: xr, f: fr };
    } else if (fr < simplex[n - 1]!.f) {
      simplex[n] = { x: xr, f: fr };
    } else {
      const xc = comb(centroid, worst.x, 0.5);
      const fc = await g(xc);
      evals++;
      if (fc < worst.f) simplex[n] = { x: xc, f: fc };
      else {
        for (let i = 1; i <= n; i++) {
          const y = comb(best.x, simplex[i]!.x, 0.5);
          simplex[i] = { x: y, f: await g(y) };
        }
        evals += n;
      }
    }
  }
  simplex.sort((a, b) => a.f - b.f);
  return full(simplex[0]!.x);
}

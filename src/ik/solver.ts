// Over 400 lines: the solver's steps share one state per solve; splitting them would pass it around for nothing.
/**
 * Deterministic inverse kinematics: projected Levenberg-Marquardt on the analytic (geometric) Jacobian, joint limits enforced by
 * clamping with an active set, restarts from a fixed set of seeds when a start gets stuck. No clock, no randomness: the same
 * inputs always give the same output.
 */
import { badRequest } from '../core/errors.ts';
import { mat3ToRows, rpyToMatrix, type Mat3, type Vec3 } from '../urdf/transform.ts';
import { ChainFrames, type KinematicChain } from './chain.ts';

export interface IkTarget {
  /** Metres, URDF root frame. */
  readonly position: readonly number[];
  /** Wanted X axis (first column) of the end frame; normalised here. Ignored when `rotation` is given. */
  readonly rot?: readonly number[];
  /** Wanted end rotation: 3 rows of 3 numbers (e.g. rpyMatrix) or 9 numbers row-major. */
  readonly rotation?: readonly (readonly number[])[] | readonly number[];
}

export interface IkOptions {
  /** Metres; a solution within this distance (and the orientation tolerance) is `converged`. Default 1e-3. */
  readonly positionTolerance?: number;
  /** Degrees. Default 1. */
  readonly orientationTolerance?: number;
  /** LM iterations per start. Default 100. */
  readonly maxIterations?: number;
  /** Starts after the seed (from the fixed restart set). Default 24. */
  readonly restarts?: number;
  /** Metres of position error worth one radian of orientation error. Default 0.1. */
  readonly orientationWeight?: number;
}

export interface IkSolution {
  /** One value per chain motor, user degrees; passive motors keep their seed value. */
  readonly userDegrees: number[];
  /** Reached end pose (FK of userDegrees). */
  readonly position: Vec3;
  readonly rotation: Mat3;
  /** Metres. */
  readonly positionError: number;
  /** Degrees; 0 for a position-only target. */
  readonly orientationError: number;
  readonly converged: boolean;
}

/** R = Rz(y) Ry(p) Rx(r), as 3 rows. */
export function rpyMatrix(r: number, p: number, y: number): number[][] {
  for (const [k, v] of [
    ['r', r],
    ['p', p],
    ['y', y],
  ] as const) {
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw badRequest(`rpy: ${k} is not a finite number`, 'give r, p, y in radians');
  }
  return mat3ToRows(rpyToMatrix(r, p, y));
}

const MODE_POSITION = 0;
const MODE_AXIS = 1;
const MODE_FULL = 2;
type Mode = typeof MODE_POSITION | typeof MODE_AXIS | typeof MODE_FULL;

/** Inner-loop stop thresholds: far below any useful tolerance, reached in a couple of LM steps once close. */
const STOP_POSITION = 1e-7;
const STOP_ORIENTATION = 1e-6;
const MAX_STEP = 0.5;
const BOUND_EPS = 1e-12;

interface Problem {
  readonly mode: Mode;
  readonly tx: number;
  readonly ty: number;
  readonly tz: number;
  /** Target X axis (MODE_AXIS) or target rotation row-major (MODE_FULL). */
  readonly tr: Float64Array;
  readonly w: number;
}

/** Per-chain buffers and the chain's fixed restart seeds. */
class Workspace {
  readonly n: number;
  readonly frames: ChainFrames;
  readonly trialFrames: ChainFrames;
  readonly e = new Float64Array(6);
  readonly trialE = new Float64Array(6);
  readonly rhs: Float64Array;
  readonly sub: Float64Array;
  readonly jac: Float64Array;
  readonly g: Float64Array;
  readonly a: Float64Array;
  readonly dq: Float64Array;
  readonly q: Float64Array;
  readonly trialQ: Float64Array;
  readonly free: Int32Array;
  readonly seeds: Float64Array[];

  constructor(chain: KinematicChain) {
    const n = chain.dof;
    this.n = n;
    this.frames = new ChainFrames(n);
    this.trialFrames = new ChainFrames(n);
    this.jac = new Float64Array(6 * n);
    this.g = new Float64Array(n);
    this.rhs = new Float64Array(n);
    this.sub = new Float64Array(n * n);
    this.a = new Float64Array(n * n);
    this.dq = new Float64Array(n);
    this.q = new Float64Array(n);
    this.trialQ = new Float64Array(n);
    this.free = new Int32Array(n);
    this.seeds = restartSeeds(chain, 64);
  }
}

const workspaces = new WeakMap<KinematicChain, Workspace>();

function workspace(chain: KinematicChain): Workspace {
  let ws = workspaces.get(chain);
  if (!ws) {
    ws = new Workspace(chain);
    workspaces.set(chain, ws);
  }
  return ws;
}

function radicalInverse(i: number, base: number): number {
  let f = 1;
  let r = 0;
  for (let k = i; k > 0; k = Math.floor(k / base)) {
    f /= base;
    r += f * (k % base);
  }
  return r;
}

const PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];

/** Joint zero and mid-range first, then a Halton sequence over the limit box (fractions only; passive joints are overwritten per solve). */
function restartSeeds(chain: KinematicChain, count: number): Float64Array[] {
  const seeds: Float64Array[] = [];
  const fromFraction = (frac: (j: number) => number): Float64Array =>
    Float64Array.from({ length: chain.dof }, (_, j) => {
      const lo = chain.lower[j]!;
      const hi = chain.upper[j]!;
      return lo + (hi - lo) * frac(j);
    });
  seeds.push(
    Float64Array.from({ length: chain.dof }, (_, j) =>
      Math.min(chain.upper[j]!, Math.max(chain.lower[j]!, 0)),
    ),
  );
  seeds.push(fromFraction(() => 0.5));
  for (let i = 1; seeds.length < count; i++) {
    seeds.push(fromFraction((j) => 0.02 + 0.96 * radicalInverse(i, PRIMES[j % PRIMES.length]!)));
  }
  return seeds;
}

function finiteArray(v: unknown, length: number, what: string): readonly number[] {
  if (!Array.isArray(v) || v.length !== length) throw badRequest(`${what} must be ${length} numbers`);
  for (const x of v)
    if (typeof x !== 'number' || !Number.isFinite(x)) throw badRequest(`${what} must hold finite numbers`);
  return v as readonly number[];
}

function makeProblem(target: IkTarget, weight: number): Problem {
  if (typeof target !== 'object' || target === null) throw badRequest('IK target must be an object');
  const [tx, ty, tz] = finiteArray(target.position, 3, 'target position (x, y, z)') as [
    number,
    number,
    number,
  ];
  if (target.rotation !== undefined) {
    const rows = target.rotation;
    let flat: readonly number[];
    if (Array.isArray(rows) && rows.length === 3 && rows.every((r) => Array.isArray(r))) {
      flat = (rows as readonly (readonly number[])[]).flatMap((r) => [
        ...finiteArray(r, 3, 'target rotation row'),
      ]);
    } else {
      flat = finiteArray(rows, 9, 'target rotation (3x3)');
    }
    const tr = Float64Array.from(flat);
    let worst = 0;
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 3; j++) {
        const dot =
          tr[3 * i]! * tr[3 * j]! + tr[3 * i + 1]! * tr[3 * j + 1]! + tr[3 * i + 2]! * tr[3 * j + 2]!;
        worst = Math.max(worst, Math.abs(dot - (i === j ? 1 : 0)));
      }
    }
    const det =
      tr[0]! * (tr[4]! * tr[8]! - tr[5]! * tr[7]!) -
      tr[1]! * (tr[3]! * tr[8]! - tr[5]! * tr[6]!) +
      tr[2]! * (tr[3]! * tr[7]! - tr[4]! * tr[6]!);
    if (worst > 1e-6 || det < 0)
      throw badRequest('target rotation is not a rotation matrix', 'build it with rpy (r, p, y)');
    return { mode: MODE_FULL, tx, ty, tz, tr, w: weight };
  }
  if (target.rot !== undefined) {
    const [ax, ay, az] = finiteArray(target.rot, 3, 'target rot (X axis)') as [number, number, number];
    const norm = Math.hypot(ax, ay, az);
    if (!(norm > 1e-9)) throw badRequest('target rot (X axis) must not be zero');
    return { mode: MODE_AXIS, tx, ty, tz, tr: Float64Array.of(ax / norm, ay / norm, az / norm), w: weight };
  }
  return { mode: MODE_POSITION, tx, ty, tz, tr: new Float64Array(0), w: weight };
}

/** Residual e (target - current, orientation part weighted); returns the squared norm. */
function residual(p: Problem, f: ChainFrames, e: Float64Array): number {
  const pos = f.position;
  e[0] = p.tx - pos[0]!;
  e[1] = p.ty - pos[1]!;
  e[2] = p.tz - pos[2]!;
  const cost = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
  if (p.mode === MODE_POSITION) return cost;
  const r = f.rotation;
  const t = p.tr;
  if (p.mode === MODE_AXIS) {
    e[3] = p.w * (t[0]! - r[0]!);
    e[4] = p.w * (t[1]! - r[3]!);
    e[5] = p.w * (t[2]! - r[6]!);
  } else {
    rotationError(t, r, e, p.w);
  }
  return cost + e[3]! * e[3]! + e[4]! * e[4]! + e[5]! * e[5]!;
}

/** e[3..5] = w * log(T R^T): the world-frame rotation vector taking R to T. */
function rotationError(t: Float64Array, r: Float64Array, e: Float64Array, w: number): void {
  // M = T R^T
  const m = (i: number, j: number): number =>
    t[3 * i]! * r[3 * j]! + t[3 * i + 1]! * r[3 * j + 1]! + t[3 * i + 2]! * r[3 * j + 2]!;
  const m00 = m(0, 0),
    m11 = m(1, 1),
    m22 = m(2, 2);
  const wx = m(2, 1) - m(1, 2);
  const wy = m(0, 2) - m(2, 0);
  const wz = m(1, 0) - m(0, 1);
  const cos = Math.max(-1, Math.min(1, (m00 + m11 + m22 - 1) / 2));
  const sin = Math.hypot(wx, wy, wz) / 2;
  const angle = Math.atan2(sin, cos);
  let k: number;
  if (sin > 1e-4) k = angle / (2 * sin);
  else if (cos > 0) k = 0.5;
  else {
    // Near pi: axis from the symmetric part.
    const xx = Math.sqrt(Math.max(0, (m00 + 1) / 2));
    const yy = Math.sqrt(Math.max(0, (m11 + 1) / 2));
    const zz = Math.sqrt(Math.max(0, (m22 + 1) / 2));
    let ax: number, ay: number, az: number;
    if (xx >= yy && xx >= zz)
      [ax, ay, az] = [xx, (m(0, 1) + m(1, 0)) / (4 * xx), (m(0, 2) + m(2, 0)) / (4 * xx)];
    else if (yy >= zz) [ax, ay, az] = [(m(0, 1) + m(1, 0)) / (4 * yy), yy, (m(1, 2) + m(2, 1)) / (4 * yy)];
    else [ax, ay, az] = [(m(0, 2) + m(2, 0)) / (4 * zz), (m(1, 2) + m(2, 1)) / (4 * zz), zz];
    const sgn = ax * wx + ay * wy + az * wz < 0 ? -1 : 1;
    const n = Math.hypot(ax, ay, az);
    e[3] = (w * sgn * angle * ax) / n;
    e[4] = (w * sgn * angle * ay) / n;
    e[5] = (w * sgn * angle * az) / n;
    return;
  }
  e[3] = w * k * wx;
  e[4] = w * k * wy;
  e[5] = w * k * wz;
}

/** Jacobian column j of the residual model (J dq ~ e), stored at jac[6j..6j+5]. */
function jacobian(p: Problem, f: ChainFrames, jac: Float64Array, n: number): void {
  const px = f.position[0]!,
    py = f.position[1]!,
    pz = f.position[2]!;
  const r = f.rotation;
  for (let j = 0; j < n; j++) {
    const zx = f.axes[3 * j]!,
      zy = f.axes[3 * j + 1]!,
      zz = f.axes[3 * j + 2]!;
    const dx = px - f.origins[3 * j]!;
    const dy = py - f.origins[3 * j + 1]!;
    const dz = pz - f.origins[3 * j + 2]!;
    const c = 6 * j;
    jac[c] = zy * dz - zz * dy;
    jac[c + 1] = zz * dx - zx * dz;
    jac[c + 2] = zx * dy - zy * dx;
    if (p.mode === MODE_AXIS) {
      const xx = r[0]!,
        xy = r[3]!,
        xz = r[6]!;
      jac[c + 3] = p.w * (zy * xz - zz * xy);
      jac[c + 4] = p.w * (zz * xx - zx * xz);
      jac[c + 5] = p.w * (zx * xy - zy * xx);
    } else if (p.mode === MODE_FULL) {
      jac[c + 3] = p.w * zx;
      jac[c + 4] = p.w * zy;
      jac[c + 5] = p.w * zz;
    }
  }
}

/** Cholesky solve of the k x k SPD system a x = b (a overwritten). Returns false when a is not positive definite. */
function choleskySolve(a: Float64Array, b: Float64Array, k: number, x: Float64Array): boolean {
  for (let i = 0; i < k; i++) {
    for (let j = 0; j <= i; j++) {
      let s = a[i * k + j]!;
      for (let l = 0; l < j; l++) s -= a[i * k + l]! * a[j * k + l]!;
      if (i === j) {
        if (!(s > 0)) return false;
        a[i * k + i] = Math.sqrt(s);
      } else {
        a[i * k + j] = s / a[j * k + j]!;
      }
    }
  }
  for (let i = 0; i < k; i++) {
    let s = b[i]!;
    for (let l = 0; l < i; l++) s -= a[i * k + l]! * x[l]!;
    x[i] = s / a[i * k + i]!;
  }
  for (let i = k - 1; i >= 0; i--) {
    let s = x[i]!;
    for (let l = i + 1; l < k; l++) s -= a[l * k + i]! * x[l]!;
    x[i] = s / a[i * k + i]!;
  }
  return true;
}

function done(p: Problem, e: Float64Array): boolean {
  const pos2 = e[0]! * e[0]! + e[1]! * e[1]! + e[2]! * e[2]!;
  if (pos2 > STOP_POSITION * STOP_POSITION) return false;
  if (p.mode === MODE_POSITION) return true;
  const o = (STOP_ORIENTATION * p.w) ** 2;
  return e[3]! * e[3]! + e[4]! * e[4]! + e[5]! * e[5]! <= o;
}

/** Runs LM from ws.q (already within limits); leaves the result in ws.q and ws.frames, returns its cost. */
function descend(chain: KinematicChain, ws: Workspace, p: Problem, maxIterations: number): number {
  const { n, q, trialQ, frames, jac, g, a, dq, free, rhs, sub, e, trialE } = ws;
  const rows = p.mode === MODE_POSITION ? 3 : 6;
  chain.computeFrames(q, frames);
  let cost = residual(p, frames, e);
  let lambda = 1e-3;
  let stalls = 0;
  for (let iter = 0; iter < maxIterations && !done(p, e); iter++) {
    jacobian(p, frames, jac, n);
    let k = 0;
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let r = 0; r < rows; r++) s += jac[6 * j + r]! * e[r]!;
      g[j] = s;
      if (chain.passive[j]) continue;
      // A joint at a bound whose gradient pushes outward is held for this step (active set).
      if (q[j]! <= chain.lower[j]! + BOUND_EPS && s < 0) continue;
      if (q[j]! >= chain.upper[j]! - BOUND_EPS && s > 0) continue;
      free[k++] = j;
    }
    if (k === 0) break;
    for (let x = 0; x < k; x++) {
      for (let y = 0; y <= x; y++) {
        const cx = 6 * free[x]!;
        const cy = 6 * free[y]!;
        let s = 0;
        for (let r = 0; r < rows; r++) s += jac[cx + r]! * jac[cy + r]!;
        a[x * k + y] = s;
        a[y * k + x] = s;
      }
    }
    let maxDiag = 0;
    for (let x = 0; x < k; x++) maxDiag = Math.max(maxDiag, a[x * k + x]!);
    const floor = 1e-9 * maxDiag + 1e-15;
    let accepted = false;
    while (lambda < 1e10) {
      sub.set(a.subarray(0, k * k));
      for (let x = 0; x < k; x++) {
        sub[x * k + x] = a[x * k + x]! * (1 + lambda) + lambda * floor + floor;
        rhs[x] = g[free[x]!]!;
      }
      if (!choleskySolve(sub, rhs, k, dq)) {
        lambda *= 10;
        continue;
      }
      let big = 0;
      for (let x = 0; x < k; x++) big = Math.max(big, Math.abs(dq[x]!));
      const scale = big > MAX_STEP ? MAX_STEP / big : 1;
      trialQ.set(q);
      for (let x = 0; x < k; x++) {
        const j = free[x]!;
        trialQ[j] = Math.min(chain.upper[j]!, Math.max(chain.lower[j]!, q[j]! + scale * dq[x]!));
      }
      chain.computeFrames(trialQ, ws.trialFrames);
      const trialCost = residual(p, ws.trialFrames, trialE);
      if (trialCost < cost) {
        // Creeping along (unreachable target, local minimum): give up on this start.
        stalls = cost - trialCost < 1e-9 * cost ? stalls + 1 : 0;
        q.set(trialQ);
        copyFrames(ws.trialFrames, frames);
        e.set(trialE);
        cost = trialCost;
        lambda = Math.max(lambda * 0.3, 1e-9);
        accepted = true;
        break;
      }
      lambda *= 5;
    }
    if (!accepted || stalls >= 3) break;
  }
  return cost;
}

function copyFrames(from: ChainFrames, to: ChainFrames): void {
  to.position.set(from.position);
  to.rotation.set(from.rotation);
  to.origins.set(from.origins);
  to.axes.set(from.axes);
}

function errors(p: Problem, f: ChainFrames): { position: number; orientation: number } {
  const pos = f.position;
  const position = Math.hypot(p.tx - pos[0]!, p.ty - pos[1]!, p.tz - pos[2]!);
  const r = f.rotation;
  const t = p.tr;
  if (p.mode === MODE_POSITION) return { position, orientation: 0 };
  if (p.mode === MODE_AXIS) {
    const cx = r[3]! * t[2]! - r[6]! * t[1]!;
    const cy = r[6]! * t[0]! - r[0]! * t[2]!;
    const cz = r[0]! * t[1]! - r[3]! * t[0]!;
    const dot = r[0]! * t[0]! + r[3]! * t[1]! + r[6]! * t[2]!;
    return { position, orientation: Math.atan2(Math.hypot(cx, cy, cz), dot) };
  }
  const e = new Float64Array(6);
  rotationError(t, r, e, 1);
  return { position, orientation: Math.hypot(e[3]!, e[4]!, e[5]!) };
}

/**
 * Solves for user-degree motor positions that bring the chain's end point to `target` (and its X axis or whole rotation, if given).
 * Starts from `seedUserDegrees` (the present pose; passive motors keep these values), then from a fixed set of restart seeds.
 * When the target cannot be reached the closest pose found is returned with converged = false.
 * Throws bad_request on a malformed target or seed.
 */
export function solve(
  chain: KinematicChain,
  target: IkTarget,
  seedUserDegrees: readonly number[],
  options: IkOptions = {},
): IkSolution {
  const positionTolerance = options.positionTolerance ?? 1e-3;
  const orientationTolerance = ((options.orientationTolerance ?? 1) * Math.PI) / 180;
  const maxIterations = options.maxIterations ?? 100;
  const restarts = options.restarts ?? 24;
  const weight = options.orientationWeight ?? 0.1;
  const problem = makeProblem(target, weight);
  chain.checkArity(seedUserDegrees, 'seed angles');
  const seedQ = chain.toJoint(seedUserDegrees);
  const ws = workspace(chain);
  const best = new Float64Array(ws.n);
  let bestCost = Infinity;
  const attempts = Math.min(restarts, ws.seeds.length) + 1;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const start = attempt === 0 ? seedQ : ws.seeds[attempt - 1]!;
    for (let j = 0; j < ws.n; j++) {
      ws.q[j] = chain.passive[j]
        ? seedQ[j]!
        : Math.min(chain.upper[j]!, Math.max(chain.lower[j]!, start[j]!));
    }
    const cost = descend(chain, ws, problem, maxIterations);
    if (cost < bestCost) {
      bestCost = cost;
      best.set(ws.q);
      // Stop at a start that nails the target; one merely within tolerance may be a local minimum on a joint limit.
      const err = errors(problem, ws.frames);
      if (err.position <= positionTolerance * 0.01 && err.orientation <= orientationTolerance * 0.01) break;
    }
  }
  const user = chain.toUser(best);
  for (let j = 0; j < ws.n; j++) {
    if (chain.passive[j]) user[j] = seedUserDegrees[j]!;
    else {
      const [lo, hi] = chain.userLimits[j]!;
      user[j] = Math.min(hi, Math.max(lo, user[j]!));
    }
  }
  const pose = chain.forwardJoint(chain.toJoint(user));
  chain.computeFrames(chain.toJoint(user), ws.frames);
  const err = errors(problem, ws.frames);
  return {
    userDegrees: user,
    position: pose.position,
    rotation: pose.rotation,
    positionError: err.position,
    orientationError: (err.orientation * 180) / Math.PI,
    converged: err.position <= positionTolerance && err.orientation <= orientationTolerance,
  };
}

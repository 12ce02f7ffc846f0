/**
 * Watches the twin while something runs: every control tick the motors' position, load and torque limit (and,
 * for a replay, where they should be), every physics step the contacts that are not allowed by the rules.
 * Then the checks of a run: torque headroom, tracking error, collisions.
 */
import type { Motor } from '../../robot/motor.ts';
import { deadBandDeg, rawPGain } from '../../sim/servo-band.ts';
import { servoModel } from '../../sim/servo-models.ts';
import { type CheckResult, type Finding, checkResult, fmt } from '../result.ts';
import type { Twin } from '../twin.ts';
import { type ContactRules, type TimedContact, WORLD_SURFACES, collisionChecks, isHit } from './contacts.ts';

export interface TickSample {
  /** Seconds since the observer started. */
  readonly time: number;
  /** Per motor, in the order of `motors`. */
  readonly position: readonly number[];
  readonly load: readonly number[];
  readonly torqueLimit: readonly number[];
  /** Where each motor should be now (a replay), or undefined. */
  readonly reference?: readonly number[];
}

export class RunObserver {
  readonly motors: readonly Motor[];
  readonly samples: TickSample[] = [];
  /** Contacts a rule does not allow, with their time. */
  readonly contacts: TimedContact[] = [];
  steps = 0;
  /** Every contact seen, allowed ones included. */
  contactsSeen = 0;
  readonly #t0: number;
  readonly #off: (() => void)[] = [];

  constructor(
    twin: Twin,
    motors: readonly Motor[],
    rules: ContactRules,
    reference?: (now: number) => ReadonlyMap<string, number> | undefined,
  ) {
    this.motors = motors;
    const clock = twin.backend.clock;
    this.#t0 = clock.now();
    this.#off.push(
      twin.robot.onTick((now) => {
        const ref = reference?.(now);
        this.samples.push({
          time: now - this.#t0,
          position: motors.map((m) => m.state.presentPosition),
          load: motors.map((m) => m.state.presentLoad),
          torqueLimit: motors.map((m) => m.commands.torqueLimit),
          ...(ref ? { reference: motors.map((m) => ref.get(m.name) ?? NaN) } : {}),
        });
      }),
    );
    const sim = twin.simulation;
    if (sim)
      this.#off.push(
        sim.onStep((simTime) => {
          this.steps++;
          for (const c of sim.contacts()) {
            this.contactsSeen++;
            if (!isHit(c, rules) || !notable(c.a, c.b, rules)) continue;
            this.contacts.push({ ...c, time: simTime - this.#t0 });
          }
        }),
      );
  }

  stop(): void {
    for (const off of this.#off.splice(0)) off();
  }

  collisions(rules: ContactRules): CheckResult[] {
    return collisionChecks(this.contacts, rules, this.steps, this.contactsSeen);
  }
}

function notable(a: string, b: string, rules: ContactRules): boolean {
  if (rules.links.has(a) && rules.links.has(b))
    return !rules.allowedPairs.has(a < b ? `${a}|${b}` : `${b}|${a}`);
  const link = WORLD_SURFACES.has(a) ? b : WORLD_SURFACES.has(b) ? a : undefined;
  return link !== undefined && rules.links.has(link) && !rules.resting.has(link);
}

export interface TorqueOptions {
  /** Share of the torque limit that must stay unused, percent (default 15): a servo at its limit cannot follow. */
  readonly headroomPercent?: number;
  /** Loads are averaged over this window, seconds, as a servo's current reading is (default 0.1). */
  readonly windowS?: number;
}

/** Load (moving mean of |present_load|) must stay under torque_limit * (1 - headroom), per motor. */
export function torqueHeadroomCheck(
  samples: readonly TickSample[],
  motors: readonly Motor[],
  opts: TorqueOptions = {},
): CheckResult {
  const headroom = opts.headroomPercent ?? 15;
  const window = opts.windowS ?? 0.1;
  const findings: Finding[] = [];
  const measured: Record<string, number> = {};
  let highest = -Infinity;
  let highestWhere = '';
  motors.forEach((m, i) => {
    let sum = 0;
    let start = 0;
    // use: load as a share of the torque limit, percent
    let worst = { time: 0, load: 0, limit: 0, use: -Infinity };
    for (let k = 0; k < samples.length; k++) {
      const s = samples[k]!;
      sum += Math.abs(s.load[i]!);
      while (start < k && samples[start]!.time <= s.time - window + 1e-9)
        sum -= Math.abs(samples[start++]!.load[i]!);
      const load = sum / (k - start + 1);
      const limit = s.torqueLimit[i]!;
      const use = limit > 0 ? (load / limit) * 100 : load > 0 ? Infinity : 0;
      if (use > worst.use) worst = { time: s.time, load, limit, use };
    }
    if (worst.use === -Infinity) return;
    measured[`${m.name}_peak_load_pct_of_limit`] = worst.use;
    if (worst.use > highest) {
      highest = worst.use;
      highestWhere = m.name;
    }
    const allowed = worst.limit * (1 - headroom / 100);
    if (worst.load <= allowed) return;
    findings.push({
      message:
        `at t=${fmt(worst.time)} s ${m.name} carries ${fmt(worst.load, 1)} % load under its ${fmt(worst.limit, 1)} % ` +
        `torque limit (${fmt(worst.use, 0)} % of it): over the ${fmt(allowed, 1)} % that keeps ${fmt(headroom, 0)} % headroom by ${fmt(worst.load - allowed, 1)} points`,
      time: worst.time,
      where: m.name,
      value: worst.load,
      limit: allowed,
      margin: worst.load - allowed,
      unit: '%',
    });
  });
  return checkResult(
    'torque headroom',
    Number.isFinite(highest)
      ? `load vs torque limit on ${motors.length} motor(s), ${samples.length} samples; highest ${highestWhere} at ${fmt(highest, 0)} % of its limit (at most ${fmt(100 - headroom, 0)} %)`
      : 'no samples',
    findings,
    measured,
  );
}

/**
 * What a P position servo following a moving goal cannot avoid (docs/reference/servo-models.md 1 and 2), so that the tracking check
 * flags only what the servo model does not explain (sag, saturation, a hit):
 * - a lag proportional to speed: the duty that the back-EMF asks at speed v (v kt / Vin) comes from an error of
 *   duty / (error gain x raw Kp). An XL-320 at Kp 32 lags 0.084 s x v (4.6 degrees at 54 deg/s), an MX-64 0.026 s x v;
 * - a dead band: the gearbox's static friction over the P slope (deadBandDeg). XL-320 at Kp 32: 2.4 degrees;
 *   MX-64: 0.34.
 */
export function servoTrackingAllowance(motor: Motor): { lagSeconds: number; deadBandDeg: number } {
  const model = servoModel(motor.spec);
  const rawKp = rawPGain(motor);
  if (rawKp <= 0) return { lagSeconds: 0, deadBandDeg: 0 };
  return { lagSeconds: model.kt / (model.vin * model.errorGain * rawKp), deadBandDeg: deadBandDeg(motor) };
}

export interface TrackingOptions {
  /** Largest RMS error per motor beyond the servo's own lag and dead band (servoTrackingAllowance), degrees (default 3). */
  readonly maxRmsDeg?: number;
  /** Largest instantaneous error, degrees (default 10). */
  readonly maxErrorDeg?: number;
}

/** Present position against where the replay should be, per motor, over the samples that carry a reference. */
export function trackingCheck(
  samples: readonly TickSample[],
  motors: readonly Motor[],
  opts: TrackingOptions = {},
): CheckResult {
  const maxRms = opts.maxRmsDeg ?? 3;
  const maxErr = opts.maxErrorDeg ?? 10;
  const findings: Finding[] = [];
  const measured: Record<string, number> = {};
  let worstRms = 0;
  let worstWhere = '';
  let counted = 0;
  motors.forEach((m, i) => {
    const servo = servoTrackingAllowance(m);
    const lagPerSpeed = servo.lagSeconds;
    let sq = 0;
    let lagSq = 0;
    let n = 0;
    let peak = { time: 0, error: 0, present: 0, ref: 0 };
    let previous: { time: number; ref: number } | undefined;
    for (const s of samples) {
      const ref = s.reference?.[i];
      if (ref === undefined || Number.isNaN(ref)) {
        previous = undefined;
        continue;
      }
      const e = s.position[i]! - ref;
      const speed = previous && s.time > previous.time ? (ref - previous.ref) / (s.time - previous.time) : 0;
      previous = { time: s.time, ref };
      sq += e * e;
      lagSq += (speed * lagPerSpeed) ** 2;
      n++;
      if (Math.abs(e) > Math.abs(peak.error)) peak = { time: s.time, error: e, present: s.position[i]!, ref };
    }
    if (!n) return;
    counted = Math.max(counted, n);
    const rms = Math.sqrt(sq / n);
    const lag = Math.sqrt(lagSq / n) + servo.deadBandDeg;
    const allowed = maxRms + lag;
    measured[`${m.name}_rms_deg`] = rms;
    measured[`${m.name}_lag_rms_deg`] = lag;
    measured[`${m.name}_max_deg`] = Math.abs(peak.error);
    if (rms - lag > worstRms) {
      worstRms = rms - lag;
      worstWhere = m.name;
    }
    if (rms > allowed)
      findings.push({
        message:
          `${m.name} tracks the move with ${fmt(rms)} deg RMS error, over the ${fmt(allowed)} deg allowed ` +
          `(${fmt(maxRms)} + the servo's own lag and dead band at these speeds, ${fmt(lag)}) by ${fmt(rms - allowed)} deg`,
        where: m.name,
        value: rms,
        limit: allowed,
        margin: rms - allowed,
        unit: 'deg',
      });
    const peakAllowed = maxErr + lagPerSpeed * peakSpeed(samples, i) + servo.deadBandDeg;
    if (Math.abs(peak.error) > peakAllowed)
      findings.push({
        message:
          `at t=${fmt(peak.time)} s ${m.name} is at ${fmt(peak.present)} deg instead of ${fmt(peak.ref)} deg: ` +
          `${fmt(Math.abs(peak.error))} deg off, over the ${fmt(peakAllowed)} deg allowed (${fmt(maxErr)} + the P ` +
          `loop's lag at the peak speed and its dead band) by ${fmt(Math.abs(peak.error) - peakAllowed)} deg`,
        time: peak.time,
        where: m.name,
        value: Math.abs(peak.error),
        limit: peakAllowed,
        margin: Math.abs(peak.error) - peakAllowed,
        unit: 'deg',
      });
  });
  return checkResult(
    'replay tracking',
    `present vs replayed position over ${counted} ticks; worst RMS beyond the servo's lag and dead band ${worstWhere || 'none'} ${fmt(worstRms)} deg (max ${fmt(maxRms)} RMS, ${fmt(maxErr)} peak, plus the lag)`,
    findings,
    measured,
  );
}

/** Largest speed of the reference of motor `i`, degrees per second. */
function peakSpeed(samples: readonly TickSample[], i: number): number {
  let peak = 0;
  for (let k = 1; k < samples.length; k++) {
    const a = samples[k - 1]!.reference?.[i];
    const b = samples[k]!.reference?.[i];
    const dt = samples[k]!.time - samples[k - 1]!.time;
    if (a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b) || dt <= 0) continue;
    peak = Math.max(peak, Math.abs(b - a) / dt);
  }
  return peak;
}

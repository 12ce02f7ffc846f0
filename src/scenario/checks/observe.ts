/**
 * Watches the twin while something runs: every control tick the motors' position, load and torque limit (and,
 * for a replay, where they should be), every physics step the contacts that are not allowed by the rules.
 * Then the checks of a run: torque headroom, tracking error, collisions.
 */
import type { Motor } from '../../robot/motor.ts';
import { type CheckResult, type Finding, checkResult, fmt } from '../result.ts';
import type { Twin } from '../twin.ts';
import { type ContactRules, type TimedContact, WORLD_SURFACES, collisionChecks } from './contacts.ts';

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
    const sim = twin.backend.simulation;
    if (sim)
      this.#off.push(
        sim.onStep((simTime) => {
          this.steps++;
          for (const c of sim.contacts()) {
            this.contactsSeen++;
            if (c.depth <= rules.toleranceM || !notable(c.a, c.b, rules)) continue;
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

export interface TrackingOptions {
  /** Largest RMS error per motor, degrees (default 3). */
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
    let sq = 0;
    let n = 0;
    let peak = { time: 0, error: 0, present: 0, ref: 0 };
    for (const s of samples) {
      const ref = s.reference?.[i];
      if (ref === undefined || Number.isNaN(ref)) continue;
      const e = s.position[i]! - ref;
      sq += e * e;
      n++;
      if (Math.abs(e) > Math.abs(peak.error)) peak = { time: s.time, error: e, present: s.position[i]!, ref };
    }
    if (!n) return;
    counted = Math.max(counted, n);
    const rms = Math.sqrt(sq / n);
    measured[`${m.name}_rms_deg`] = rms;
    measured[`${m.name}_max_deg`] = Math.abs(peak.error);
    if (rms > worstRms) {
      worstRms = rms;
      worstWhere = m.name;
    }
    if (rms > maxRms)
      findings.push({
        message: `${m.name} tracks the move with ${fmt(rms)} deg RMS error, over the ${fmt(maxRms)} deg allowed by ${fmt(rms - maxRms)} deg`,
        where: m.name,
        value: rms,
        limit: maxRms,
        margin: rms - maxRms,
        unit: 'deg',
      });
    if (Math.abs(peak.error) > maxErr)
      findings.push({
        message:
          `at t=${fmt(peak.time)} s ${m.name} is at ${fmt(peak.present)} deg instead of ${fmt(peak.ref)} deg: ` +
          `${fmt(Math.abs(peak.error))} deg off, over the ${fmt(maxErr)} deg allowed by ${fmt(Math.abs(peak.error) - maxErr)} deg`,
        time: peak.time,
        where: m.name,
        value: Math.abs(peak.error),
        limit: maxErr,
        margin: Math.abs(peak.error) - maxErr,
        unit: 'deg',
      });
  });
  return checkResult(
    'replay tracking',
    `present vs replayed position over ${counted} ticks; worst RMS ${worstWhere || 'none'} ${fmt(worstRms)} deg (max ${fmt(maxRms)} RMS, ${fmt(maxErr)} peak)`,
    findings,
    measured,
  );
}

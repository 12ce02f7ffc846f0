/**
 * The excitation of one joint (docs/decisions/0059-calibration.md): a hold under gravity approached from both sides,
 * a release with the torque off, steps and a chirp at two torque limits, then slow approaches of three hold targets
 * from below and from above (decision 0062); all within the joint's angle limits.
 * Raw-frame degrees, encoder side (what the servo is told and reads).
 */

export interface Command {
  readonly goal: number;
  readonly torqueOn: boolean;
  /** torque_limit register, 0..1023. */
  readonly torqueLimit: number;
}

export interface Excitation {
  readonly duration: number;
  /** Where the joint starts (raw degrees): the run puts it there before t = 0. */
  readonly start: number;
  at(t: number): Command;
  /** The segments, for the fit's weighting and the report: [name, from, to] in seconds. */
  readonly segments: readonly [string, number, number][];
}

/** Two torque limits of the steps and chirps: full and half. */
export const TORQUE_LIMITS = [1023, 512] as const;

/** Degrees a slow approach starts from its target (beyond the XL-320's band of about +-5 degrees under load). */
export const APPROACH_REACH_DEG = 8;
/** An approach: 0.5 s at the start, a 1.5 s ramp onto the target, 0.5 s held (its stopping point: the last 0.4 s). */
export const APPROACH_SECONDS = 2.5;
export const APPROACH_HOLD_SECONDS = 0.4;

/** Seconds the torque is off in the release (its recovery takes the rest of 2.5 s). */
export const RELEASE_SECONDS = 0.5;

/** The widest swing of an excitation about its centre (degrees). */
export const MAX_AMPLITUDE_DEG = 20;

/**
 * The excitation about `centre` (raw degrees), kept `margin` inside the limits [lo, hi], swinging at most
 * `maxAmplitude` degrees each way (less where a wider swing would touch: clearance.ts).
 */
export function excitation(
  centre: number,
  limits: readonly [number, number],
  margin = 5,
  maxAmplitude = MAX_AMPLITUDE_DEG,
  maxChirpAmplitude = maxAmplitude,
): Excitation {
  const lo = limits[0] + margin;
  const hi = limits[1] - margin;
  const c = Math.min(hi, Math.max(lo, centre));
  const amp = Math.max(2, Math.min(maxAmplitude, (hi - lo) / 2 - 1, c - lo, hi - c));
  const chirpAmp = Math.min(amp, maxChirpAmplitude);
  const segments: [string, number, number][] = [];
  const programs: [number, (t: number) => Command][] = [];
  let t0 = 0;
  const add = (name: string, seconds: number, f: (t: number) => Command) => {
    segments.push([name, t0, t0 + seconds]);
    programs.push([t0, f]);
    t0 += seconds;
  };
  const on = (goal: number, torqueLimit = 1023): Command => ({ goal, torqueOn: true, torqueLimit });
  add('hold-below', 1.5, () => on(c - amp));
  add('hold', 1.5, () => on(c));
  add('hold-above', 1.5, () => on(c + amp));
  add('hold', 1.5, () => on(c));
  // Short: an arm released near upright falls for about a second before it meets the table (clearance.ts).
  add('release', RELEASE_SECONDS, () => ({ goal: c, torqueOn: false, torqueLimit: 1023 }));
  add('recover', 2.5 - RELEASE_SECONDS, () => on(c));
  for (const limit of TORQUE_LIMITS) {
    add(`steps@${limit}`, 3, (t) =>
      on(c + amp * [1, -1, 0.5, -0.5][Math.min(3, Math.floor(t / 0.75))]!, limit),
    );
    // Chirp 0.3 -> 2.5 Hz: the armature shows at the high end, the friction at the turns.
    const T = 4;
    const f0 = 0.3;
    const f1 = 2.5;
    add(`chirp@${limit}`, T, (t) =>
      on(c + chirpAmp * Math.sin(2 * Math.PI * (f0 * t + ((f1 - f0) * t * t) / (2 * T))), limit),
    );
  }
  // The gearbox's band is symmetric about where the P law meets gravity: a slow ramp onto the same target from below
  // and from above stops at its two edges, and their midpoint is the target less gravity's sag (decision 0062).
  const reach = Math.min(APPROACH_REACH_DEG, amp / 2);
  for (const target of [c - amp / 2, c, c + amp / 2])
    for (const [side, sign] of [
      ['below', -1],
      ['above', 1],
    ] as const) {
      const from = target + sign * reach;
      add(`approach-${side}@${target.toFixed(1)}`, APPROACH_SECONDS, (t) =>
        on(t < 0.5 ? from : target + sign * reach * Math.max(0, 1 - (t - 0.5) / 1.5)),
      );
    }
  add('settle', 0.5, () => on(c));
  const duration = t0;
  return {
    duration,
    start: c,
    segments,
    at(t) {
      for (let i = programs.length - 1; i >= 0; i--) {
        const [from, f] = programs[i]!;
        if (t >= from) return f(t - from);
      }
      return programs[0]![1](0);
    },
  };
}

// Over 400 lines: one state machine per motor (its bands, hold windows and classification) shares its track.
/**
 * The divergence comparator: per motor, the real servo's readings against the twin's, within a band the servo model
 * explains (docs/reference/servo-models.md): a dead band (the encoder's count, the gearbox's stiction and the P
 * loop's droop under load), the lag of a joint behind a moving goal (the twin sees a command up to a cycle before the
 * servo does), and the noise of the load reading. A difference beyond the band for longer than HOLD_S raises a typed
 * event; back within it for CLEAR_HOLD_S, the event clears. Pure: time comes in with each update.
 */
import type { Calibration } from '../config/calibration.ts';

export type DivergenceKind = 'blocked' | 'pushed' | 'weak' | 'offset' | 'offline';

/**
 * One motor's state in the user's frame, as the REST motor routes give it: degrees (orientation and offset applied),
 * degrees per second, load in % of the torque available (signed).
 */
export interface Reading {
  readonly position: number;
  readonly speed: number;
  readonly load: number;
  /** The goal it was sent, degrees (the twin's: it tells a commanded move from a joint jostled while holding). */
  readonly goal?: number;
  /**
   * The twin's: where its gearbox can hold the joint still, degrees, low and high: about the point where the P loop
   * bears the weight of its links (restSpanDeg), and with an I term about the goal too. Without it: the goal +- the
   * rest band.
   */
  readonly settles?: readonly [number, number];
}

export interface ShadowEvent {
  readonly motor: string;
  readonly kind: DivergenceKind;
  /** When the event was raised (the onset of the divergence), seconds on the backend's clock. */
  readonly since: number;
  /** When it cleared; null while active. */
  until: number | null;
  /** The readings when it was raised (real is null when offline). */
  readonly real: Reading | null;
  readonly twin: Reading;
  /** The position band (degrees) at that moment. */
  readonly band: number;
}

/**
 * 'paused': the comparison is paused (a calibration run drives the servos, pause()). 'touching': beyond the band
 * where a contact holds the push, the twin's alone, the robot's where its twin's links come within a few millimetres
 * of touching, or both (touchingSide): the twin's geometry, not an event.
 */
export type MotorShadowState = 'agree' | 'diverging' | 'compliant' | 'paused' | 'touching' | DivergenceKind;

export interface MotorComparison {
  readonly motor: string;
  readonly real: Reading | null;
  readonly twin: Reading | null;
  /** real - twin position, degrees (null without both). */
  readonly error: number | null;
  readonly band: number;
  /** The band's dead band (degrees): DEAD_BAND_DEG, or the calibration's (calibratedDeadBands). */
  readonly deadBand: number;
  /** How far from its goal the servo's gearbox may hold a still joint with no load (degrees); 0: not given. */
  readonly restBand: number;
  readonly state: MotorShadowState;
}

/** A motor's comparison as the status shows it. */
export interface MotorStatus extends MotorComparison {
  /** Where two still joints agree however far apart (degrees, low and high: restingSettled); null: nowhere. */
  readonly restSpan: readonly [number, number] | null;
}

/**
 * The band's figures. DEAD_BAND_DEG: an XL-320 count is 0.29 degree, its stiction holds a joint a few counts off
 * where the twin's settles, and the P loop's droop under a changing load differs by as much again. LAG_S: a command
 * reaches the twin when it is queued and the servo at the next cycle (20 ms at 50 Hz), and a reading is taken up to a
 * cycle later again; with a margin for replies dropped on the bus, 3 cycles of the faster of the two joints' speeds.
 * The speed is held with a decay of SPEED_DECAY_S, since a joint stopping after a move settles for a while.
 */
export const BAND = {
  DEAD_BAND_DEG: 3,
  LAG_S: 0.06,
  SPEED_DECAY_S: 0.3,
  /** Load readings (%) within this of each other agree (the reading's noise and the twin's friction model). */
  LOAD_BAND: 15,
  /** Below this speed (deg/s) a joint is still. */
  STILL_DEG_S: 4,
  /** A difference must last this long to raise an event, and an absence of readings too (s). */
  HOLD_S: 0.3,
  /** Back within the band this long clears the event (s). */
  CLEAR_HOLD_S: 0.2,
  /** The twin counts as moving at an onset if it moved within this long before it (s). */
  MOVED_WITHIN_S: 0.5,
  /** A goal that changes by more than this between updates is a commanded move (degrees). */
  GOAL_STEP_DEG: 0.05,
  /** Loads and speeds alike over more than this share of a hold window: they agreed (a reading or two flicker). */
  ALIKE_SHARE: 0.5,
  /**
   * The real joint moving in more than this share of a hold window: it still moves. A joint at a stop shows a moving
   * reading or two at most, a weak one half of them or more (docs/decisions/0052-shadow-hold-window.md).
   */
  MOVING_SHARE: 0.25,
  /**
   * With a calibration, a motor's dead band is RESIDUAL_FACTOR x its fit's RMS residual, at least CALIBRATED_FLOOR_DEG
   * (five XL-320 counts: a count each side and the stiction's scatter); docs/decisions/0063-shadow-bands-from-fit.md.
   */
  RESIDUAL_FACTOR: 3,
  CALIBRATED_FLOOR_DEG: 1.5,
  /**
   * Links of the twin this close (mm) across a joint may touch in the robot: an offset the table cannot place (a turn
   * about the vertical) moves where links meet by millimetres (docs/decisions/0092-the-robot-touching-alone.md).
   */
  NEAR_GAP_MM: 10,
} as const;

/**
 * Each calibrated motor's dead band (degrees), by name; a motor without a residual keeps DEAD_BAND_DEG, and so does
 * one whose offset the calibration did not identify: the horn's offset moves where links meet and hold a joint, and
 * with the touched offsets (a degree or so off) given the calibrated floor the Torso's held soak raised 5 false
 * events in 10 minutes, its arms pressing their sides (decisions 0063, 0068, 0088).
 */
export function calibratedDeadBands(cal: Calibration): Map<string, number> {
  const bands = new Map<string, number>();
  for (const [name, m] of Object.entries(cal.motors)) {
    if (m.residualRmsDeg === null) continue;
    const floor = m.notIdentifiable.includes('offset') ? BAND.DEAD_BAND_DEG : BAND.CALIBRATED_FLOOR_DEG;
    bands.set(name, Math.max(floor, BAND.RESIDUAL_FACTOR * m.residualRmsDeg));
  }
  return bands;
}

/**
 * Who holds a contact's push at a joint whose twin's links press across it or come near: where links touch, offsets
 * within their calibration's uncertainty put one a degree or two into the other, and the contact holds the joints
 * degrees apart; the twin's geometry, not an event.
 * - 'twin': a contact of the twin presses across the joint (`pressed`) and its load is beyond the real servo's by more
 *   than the load band, the real one's counted the way the twin's push goes (none where it pulls back, within the
 *   band: decision 0095): the robot's links do not meet there (decision 0086).
 * - 'robot' (`nearPush`): the real servo holds a push beyond its twin's by more than the load band where the twin's
 *   links come within NEAR_GAP_MM of touching (`near`, or pressed), or came so since that push began: a push that
 *   began where the twin's links passed by stays the contact's while it lasts (decisions 0092, 0094).
 * - 'both': the twin's contact presses across the joint and both servos hold a push beyond the load band: the same
 *   contact, met a few millimetres apart (decision 0094).
 * A real joint that meets something where its twin's links are not near is still judged.
 */
function touchingSide(
  real: Reading,
  twin: Reading,
  contact: TwinContact,
  nearPush: boolean,
): TouchingSide | undefined {
  const [r, w] = [Math.abs(real.load), Math.abs(twin.load)];
  // The real servo's push the way the twin's presses: one pulling back within the band presses nothing there.
  const along = real.load * Math.sign(twin.load);
  if (contact === 'pressed' && along >= -BAND.LOAD_BAND && w > Math.max(along, 0) + BAND.LOAD_BAND)
    return 'twin';
  if (nearPush) return 'robot';
  if (contact === 'pressed' && r > BAND.LOAD_BAND && w > BAND.LOAD_BAND) return 'both';
  return undefined;
}

/** The real servo holds a push its twin does not: its load beyond the twin's by more than `by` (the load band). */
function realPushes(real: Reading, twin: Reading, by: number = BAND.LOAD_BAND): boolean {
  return Math.abs(real.load) > Math.abs(twin.load) + by;
}

/** Who holds a contact's push where a motor is `touching` (touchingSide). */
export type TouchingSide = 'twin' | 'robot' | 'both';

/** What the twin's contacts do at a joint: a pressing contact acts across it, or its links across it nearly touch. */
export type TwinContact = 'pressed' | 'near' | undefined;

/**
 * Both joints still, the real one where the twin's gearbox can hold it (Reading.settles, else within `restBand` of the
 * goal): where a stiff servo's gearbox holds a joint after a move depends on the side and speed it came from (decision
 * 0071), about the point where its P loop bears the links' weight (decision 0088). Where in that span the twin itself
 * stopped is its own history (a goal moved less than the span moves neither), not a prediction of the robot's. A
 * joint pushed, blocked or slipped beyond it is still compared.
 */
function restingSettled(real: Reading, twin: Reading, restBand: number): boolean {
  const span = restSpanOf(twin, restBand);
  if (!span) return false;
  const still = (r: Reading) => Math.abs(r.speed) <= BAND.STILL_DEG_S;
  return still(real) && still(twin) && real.position >= span[0] && real.position <= span[1];
}

/** Where the twin's gearbox can hold the joint still: Reading.settles, else the goal +- `restBand`; null: no goal. */
function restSpanOf(twin: Reading, restBand: number): readonly [number, number] | null {
  const goal = twin.goal;
  if (restBand <= 0 || goal === undefined) return null;
  return twin.settles ?? [goal - restBand, goal + restBand];
}

/**
 * What the readings said over a divergence's hold window, from its onset to the raise, counted per comparison with a
 * real reading: a single reading's speed or load flickers (a late cycle, a jostle from the other joints).
 */
export interface HoldWindow {
  readonly samples: number;
  /** Readings whose loads agreed (within LOAD_BAND) and whose speeds were together (within STILL_DEG_S). */
  readonly alike: number;
  /** Readings where the real joint moved (faster than STILL_DEG_S). */
  readonly realMoving: number;
}

interface MotorTrack {
  readonly deadBand: number;
  speedEnvelope: number;
  lastT: number;
  /** When the twin last moved (s). */
  twinMovedAt: number;
  /** The twin's goal at the last update (degrees). */
  lastGoal: number | undefined;
  /** Both positions when the twin last started moving (a weak joint travels part of the way, a blocked one not). */
  moveStart: { real: number; twin: number } | undefined;
  /** When the difference went beyond the band (s), and whether the twin was moving then. */
  overSince: number | undefined;
  twinMovingAtOnset: boolean;
  /** The counts since overSince. */
  window: { samples: number; alike: number; realMoving: number };
  /**
   * The last update at which the real servo pushed beyond its twin in a push that had the twin's links near as it
   * began (touchingSide's `nearPush`): it goes on through a pause of up to HOLD_S, and while it holds half the band.
   */
  nearPushAt: number | undefined;
  inBandSince: number | undefined;
  offlineSince: number | undefined;
  event: ShadowEvent | undefined;
  last: MotorComparison;
}

export interface ComparatorOptions {
  readonly motors: readonly string[];
  /** Bounded history: the oldest events are dropped beyond this many. */
  readonly historySize?: number;
  /** Dead bands (degrees) by motor name (calibratedDeadBands); a motor not in it: DEAD_BAND_DEG. */
  readonly deadBands?: ReadonlyMap<string, number>;
  /** Called once per event raised (with what its hold window said) and once per event cleared. */
  readonly onEvent?: (event: ShadowEvent, change: 'raised' | 'cleared', held?: HoldWindow) => void;
  /**
   * Called as a motor becomes `touching`, once until it is something else: `side` is who holds the push, the twin
   * alone, the robot alone or both (touchingSide).
   */
  readonly onTouching?: (motor: string, real: Reading, twin: Reading, side: TouchingSide) => void;
}

export class Comparator {
  readonly #tracks = new Map<string, MotorTrack>();
  readonly #history: ShadowEvent[] = [];
  readonly #historySize: number;
  #paused = false;

  constructor(private readonly opts: ComparatorOptions) {
    this.#historySize = opts.historySize ?? 500;
    for (const motor of opts.motors) {
      const deadBand = opts.deadBands?.get(motor) ?? BAND.DEAD_BAND_DEG;
      this.#tracks.set(motor, {
        deadBand,
        speedEnvelope: 0,
        lastT: NaN,
        twinMovedAt: -Infinity,
        lastGoal: undefined,
        moveStart: undefined,
        overSince: undefined,
        twinMovingAtOnset: false,
        window: { samples: 0, alike: 0, realMoving: 0 },
        nearPushAt: undefined,
        inBandSince: undefined,
        offlineSince: undefined,
        event: undefined,
        last: {
          motor,
          real: null,
          twin: null,
          error: null,
          band: deadBand,
          deadBand,
          restBand: 0,
          state: 'agree',
        },
      });
    }
  }

  /**
   * One comparison at time `t` (s): `real` undefined when the motor gave no reading this cycle, `online` false when
   * the bus counts it lost; `compliant`: the twin's joint follows the real one, nothing to compare. `restBand`
   * (degrees): how far from its goal the servo's gearbox may hold it at rest with no load (restBandDeg); two still
   * joints agree when the real one stands where the twin's gearbox can hold it (Reading.settles, else the goal +-
   * restBand), whichever side each stopped on. `contact`: what the twin's contacts do at this joint
   * (touchingSide).
   */
  update(
    t: number,
    motor: string,
    real: Reading | undefined,
    online: boolean,
    twin: Reading,
    compliant: boolean,
    restBand = 0,
    contact: TwinContact = undefined,
  ): MotorComparison {
    const k = this.#tracks.get(motor)!;
    if (this.#paused) {
      const error = real ? real.position - twin.position : null;
      k.lastT = t;
      return (k.last = {
        motor,
        real: real ?? null,
        twin,
        error,
        band: k.deadBand,
        deadBand: k.deadBand,
        restBand,
        state: 'paused',
      });
    }
    const dt = Number.isNaN(k.lastT) ? 0 : Math.max(0, t - k.lastT);
    k.lastT = t;
    const speed = Math.max(Math.abs(twin.speed), Math.abs(real?.speed ?? 0));
    k.speedEnvelope = Math.max(speed, k.speedEnvelope * Math.exp(-dt / BAND.SPEED_DECAY_S));
    if (twinMoves(twin, k.lastGoal)) {
      if (t - k.twinMovedAt > BAND.MOVED_WITHIN_S && real)
        k.moveStart = { real: real.position, twin: twin.position };
      k.twinMovedAt = t;
    }
    k.lastGoal = twin.goal;
    const band = k.deadBand + BAND.LAG_S * k.speedEnvelope;
    const deadBand = k.deadBand;
    if (!online) {
      k.overSince = undefined;
      k.offlineSince ??= t;
      if (k.event && k.event.kind !== 'offline') this.#clear(k, t);
      if (!k.event && t - k.offlineSince >= BAND.HOLD_S)
        this.#raise(k, {
          motor,
          kind: 'offline',
          since: k.offlineSince,
          until: null,
          real: null,
          twin,
          band,
        });
      return (k.last = {
        motor,
        real: null,
        twin,
        error: null,
        band,
        deadBand,
        restBand,
        state: k.event ? k.event.kind : 'diverging',
      });
    }
    k.offlineSince = undefined;
    if (k.event?.kind === 'offline') this.#clear(k, t);
    if (!real) return (k.last = { ...k.last, twin, band, restBand });
    const error = real.position - twin.position;
    if (compliant) {
      k.overSince = undefined;
      k.nearPushAt = undefined;
      if (k.event) this.#clear(k, t);
      return (k.last = { motor, real, twin, error, band, deadBand, restBand, state: 'compliant' });
    }
    // A push the twin's links were near as it began goes on while it holds half the load band (a reading hovering
    // about the band does not end it), and through a pause of up to a hold window.
    const goesOn = k.nearPushAt !== undefined && t - k.nearPushAt <= BAND.HOLD_S;
    const pushes = realPushes(real, twin, goesOn ? BAND.LOAD_BAND / 2 : BAND.LOAD_BAND);
    const nearPush = pushes && (contact !== undefined || goesOn);
    if (nearPush) k.nearPushAt = t;
    const beyond = Math.abs(error) > band && !restingSettled(real, twin, restBand);
    const side = beyond ? touchingSide(real, twin, contact, nearPush) : undefined;
    if (side) {
      // Neither raised nor cleared: a divergence under way starts afresh once the contact ends.
      k.overSince = undefined;
      k.inBandSince = undefined;
      if (!k.event && k.last.state !== 'touching') this.opts.onTouching?.(motor, real, twin, side);
      return (k.last = {
        motor,
        real,
        twin,
        error,
        band,
        deadBand,
        restBand,
        state: k.event?.kind ?? 'touching',
      });
    }
    if (beyond) {
      k.inBandSince = undefined;
      if (k.overSince === undefined) {
        k.overSince = t;
        k.twinMovingAtOnset = t - k.twinMovedAt <= BAND.MOVED_WITHIN_S;
        k.window = { samples: 0, alike: 0, realMoving: 0 };
      }
      if (!k.event) {
        k.window.samples++;
        if (alike(real, twin)) k.window.alike++;
        if (Math.abs(real.speed) > BAND.STILL_DEG_S) k.window.realMoving++;
      }
      if (!k.event && t - k.overSince >= BAND.HOLD_S) {
        const kind = classify(k.window, real, twin, k.twinMovingAtOnset, k.moveStart);
        this.#raise(k, { motor, kind, since: k.overSince, until: null, real, twin, band }, { ...k.window });
      }
    } else {
      k.overSince = undefined;
      k.inBandSince ??= t;
      if (k.event && t - k.inBandSince >= BAND.CLEAR_HOLD_S) this.#clear(k, t);
    }
    const state: MotorShadowState = k.event
      ? k.event.kind
      : k.overSince !== undefined
        ? 'diverging'
        : 'agree';
    return (k.last = { motor, real, twin, error, band, deadBand, restBand, state });
  }

  /**
   * No judgement until resume(): the readings are still shown (state 'paused'), nothing is raised or cleared. For a
   * calibration run, whose excitations the uncalibrated twin is not meant to match (docs/decisions/0067-calibration-route.md).
   */
  pause(): void {
    this.#paused = true;
  }

  /** Judging again from scratch: no divergence, move or lag carried over the pause; an event active before stays. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    for (const k of this.#tracks.values()) {
      k.speedEnvelope = 0;
      k.lastT = NaN;
      k.twinMovedAt = -Infinity;
      k.lastGoal = undefined;
      k.moveStart = undefined;
      k.overSince = undefined;
      k.inBandSince = undefined;
      k.offlineSince = undefined;
      k.nearPushAt = undefined;
    }
  }

  /**
   * Whether `motor`'s next comparison needs to know if its twin's links come near touching (TwinContact's `near`): it
   * was beyond its band at the latest, or its real servo pushed beyond its twin's (a push the robot's links may meet
   * where the twin's only pass by: the gap is taken as it begins, not once the joints are apart).
   */
  wantsNear(motor: string): boolean {
    const last = this.#tracks.get(motor)?.last;
    if (!last) return false;
    if (last.state === 'diverging' || last.state === 'touching') return true;
    return !!last.real && !!last.twin && last.state !== 'compliant' && realPushes(last.real, last.twin);
  }

  /** `motor`'s state at its latest comparison (undefined: no such motor). */
  stateOf(motor: string): MotorShadowState | undefined {
    return this.#tracks.get(motor)?.last.state;
  }

  /** The latest comparison of every motor. */
  status(): MotorStatus[] {
    return [...this.#tracks.values()].map((k) => ({
      ...k.last,
      restSpan: k.last.twin && restSpanOf(k.last.twin, k.last.restBand),
    }));
  }

  active(): ShadowEvent[] {
    return [...this.#tracks.values()].flatMap((k) => (k.event ? [k.event] : []));
  }

  /** Events raised or cleared after `since` (s), oldest first. */
  events(since = -Infinity): ShadowEvent[] {
    return this.#history.filter((e) => e.since > since || (e.until !== null && e.until > since));
  }

  #raise(k: MotorTrack, event: ShadowEvent, held?: HoldWindow): void {
    k.event = event;
    this.#history.push(event);
    if (this.#history.length > this.#historySize) this.#history.shift();
    this.opts.onEvent?.(event, 'raised', held);
  }

  #clear(k: MotorTrack, t: number): void {
    const event = k.event!;
    event.until = t;
    k.event = undefined;
    k.inBandSince = undefined;
    this.opts.onEvent?.(event, 'cleared');
  }
}

/**
 * Whether the twin is making a commanded move: its goal changing, or it travelling to a goal beyond twice the dead
 * band. A joint holding its goal while the others move is jostled by them (its speed flickers over STILL_DEG_S): that
 * is not a move, so a push on it reads as pushed. Without a goal, its speed alone says.
 */
function twinMoves(twin: Reading, lastGoal: number | undefined): boolean {
  if (twin.goal === undefined) return Math.abs(twin.speed) > BAND.STILL_DEG_S;
  if (lastGoal !== undefined && Math.abs(twin.goal - lastGoal) > BAND.GOAL_STEP_DEG) return true;
  return (
    Math.abs(twin.speed) > BAND.STILL_DEG_S && Math.abs(twin.goal - twin.position) > 2 * BAND.DEAD_BAND_DEG
  );
}

/** One comparison's loads agreeing and speeds together: what an offset shows (the same motion, shifted). */
function alike(real: Reading, twin: Reading): boolean {
  return (
    Math.abs(real.load - twin.load) <= BAND.LOAD_BAND && Math.abs(real.speed - twin.speed) <= BAND.STILL_DEG_S
  );
}

/**
 * What a lasting difference is: the real joint following the twin at a steady shift with the same load is an offset
 * (calibration, a slipped horn); one that diverged while the twin moved is weak if it still moves, or if it came at
 * least half the twin's way since the move began (too slow, or sagging short of the goal), and blocked if it stands
 * where something stopped it; one that diverged while the twin held still was pushed from outside.
 * "Same load" and "still moves" are what held over the hold window (ALIKE_SHARE, MOVING_SHARE), not at its last
 * reading: one late or jostled reading must not turn an offset into a push, nor a stop into a weakness. Positions
 * (the travel) are the last reading's: a position does not flicker, and it is what stayed beyond the band.
 */
export function classify(
  held: HoldWindow,
  real: Reading,
  twin: Reading,
  twinMovingAtOnset: boolean,
  moveStart?: { readonly real: number; readonly twin: number },
): DivergenceKind {
  if (held.alike > BAND.ALIKE_SHARE * held.samples) return 'offset';
  if (!twinMovingAtOnset) return 'pushed';
  if (held.realMoving > BAND.MOVING_SHARE * held.samples) return 'weak';
  const twinTravel = moveStart ? Math.abs(twin.position - moveStart.twin) : 0;
  const realTravel = moveStart ? Math.abs(real.position - moveStart.real) : 0;
  return twinTravel > 0 && realTravel >= 0.5 * twinTravel ? 'weak' : 'blocked';
}

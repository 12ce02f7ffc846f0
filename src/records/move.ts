/**
 * A recorded move in memory, and the pypot move file format:
 * `{"framerate": 50, "positions": {"<t>": {"<motor>": [position deg, speed deg/s]}}}`
 * where `<t>` is elapsed seconds as decimal text (pypot writes Python float repr: "0.0", "0.0200212001800537",
 * "4.0531158447265625e-06"). See docs/reference/contract.md 4 and docs/reference/pypot.md 4.7.
 */
import { RobotError, badRequest } from '../core/errors.ts';

/** [position in degrees, speed in degrees per second], user frame. */
export type MotorSample = readonly [position: number, speed: number];

export interface MoveFrame {
  /** Seconds since the start of the recording, finite, >= 0. */
  readonly t: number;
  /** Motor name -> sample. A Map, so motor names such as "__proto__" are plain data. */
  readonly positions: ReadonlyMap<string, MotorSample>;
}

export interface Move {
  /** Samples per second the move was recorded at (pypot: 50). */
  readonly framerate: number;
  /** The motors of the move, in the order of the first frame; every frame has exactly these. */
  readonly motors: readonly string[];
  /** Sorted by strictly increasing t. */
  readonly frames: readonly MoveFrame[];
}

/** What a frame may be built from: a Map or a plain record of motor -> [pos, speed]. */
export interface MoveFrameInput {
  readonly t: number;
  readonly positions: ReadonlyMap<string, readonly number[]> | Readonly<Record<string, readonly number[]>>;
}

/** Move data that breaks the format. `source` names the file or caller, `reason` says what is wrong. */
export class MoveFormatError extends RobotError {
  readonly source: string;
  readonly reason: string;
  constructor(source: string, reason: string) {
    super(
      'bad_request',
      `${source}: ${reason}`,
      'A move is {"framerate": <Hz>, "positions": {"<seconds>": {"<motor>": [<position deg>, <speed deg/s>]}}}, ' +
        'with the same motors at every time.',
      reason,
    );
    this.name = 'MoveFormatError';
    this.source = source;
    this.reason = reason;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Names

const MOVE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** CONTRACT section 4: the regex alone decides; it admits no '/' and no leading '.', so no path escapes. */
export function validMoveName(name: unknown): name is string {
  return typeof name === 'string' && MOVE_NAME.test(name);
}

export function assertMoveName(name: unknown): asserts name is string {
  if (validMoveName(name)) return;
  throw badRequest(
    `Invalid move name ${quote(name)}`,
    'A move name is 1 to 64 characters among letters, digits, "_", "." and "-", and starts with a letter or digit.',
    `the name must match ${MOVE_NAME.source}`,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Building and checking

/** Decimal text of a time, as written in files and answered by value.json. Round-trips exactly via Number(). */
export function timeKey(t: number): string {
  return String(t);
}

/**
 * Builds a checked move: frames sorted by time, -0 normalised to 0, same motor set in every frame.
 * Throws MoveFormatError naming `source` and what is wrong.
 */
export function createMove(framerate: number, frames: Iterable<MoveFrameInput>, source = 'move'): Move {
  checkFramerate(framerate, source);
  const built: MoveFrame[] = [];
  for (const input of frames) {
    const t = input.t;
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) {
      throw new MoveFormatError(source, `frame time ${quote(t)} is not a finite number >= 0`);
    }
    const where = `frame at t=${timeKey(t + 0)}`;
    const entries =
      input.positions instanceof Map
        ? [...(input.positions as ReadonlyMap<string, unknown>).entries()]
        : Object.entries(input.positions as Record<string, unknown>);
    const positions = new Map<string, MotorSample>();
    for (const [motor, value] of entries) {
      if (typeof motor !== 'string' || motor === '')
        throw new MoveFormatError(source, `${where}: empty motor name`);
      positions.set(motor, checkSample(value, `${where}, motor ${quote(motor)}`, source));
    }
    built.push({ t: t + 0, positions });
  }
  return finish(framerate, built, source, (f) => `frame at t=${timeKey(f.t)}`);
}

/**
 * Checks a move built elsewhere (e.g. by the recorder) and returns it in canonical form (sorted frames and
 * motors). Throws MoveFormatError, also when `motors` does not name exactly the motors of the frames.
 */
export function checkMove(move: Move, source = 'move'): Move {
  const checked = createMove(move.framerate, move.frames, source);
  const given = [...move.motors].sort();
  if (given.length !== checked.motors.length || given.some((m, i) => m !== checked.motors[i])) {
    throw new MoveFormatError(
      source,
      `"motors" (${move.motors.join(', ')}) differs from the motors of the frames (${checked.motors.join(', ')})`,
    );
  }
  return checked;
}

function checkFramerate(framerate: unknown, source: string): asserts framerate is number {
  if (typeof framerate !== 'number' || !Number.isFinite(framerate) || framerate <= 0) {
    throw new MoveFormatError(source, `"framerate" must be a finite number > 0 (got ${quote(framerate)})`);
  }
}

function checkSample(value: unknown, where: string, source: string): MotorSample {
  if (!Array.isArray(value)) {
    // pypot (since it keyed frames by time) always writes [position, speed]; a bare number has no speed.
    throw new MoveFormatError(source, `${where}: expected [position, speed], got ${quote(value)}`);
  }
  const pair = value as unknown[];
  if (pair.length !== 2) {
    throw new MoveFormatError(
      source,
      `${where}: expected [position, speed] (2 numbers), got ${pair.length} item(s)`,
    );
  }
  const [pos, speed] = pair;
  if (typeof pos !== 'number' || !Number.isFinite(pos)) {
    throw new MoveFormatError(source, `${where}: position ${quote(pos)} is not a finite number`);
  }
  if (typeof speed !== 'number' || !Number.isFinite(speed)) {
    throw new MoveFormatError(source, `${where}: speed ${quote(speed)} is not a finite number`);
  }
  return [pos + 0, speed + 0];
}

/**
 * Sorts frames by time and motors by name (a canonical form, so parse(serialize(m)) equals m even for motor
 * names JSON.parse reorders, like "1"); rejects equal times and differing motor sets.
 */
function finish(
  framerate: number,
  frames: MoveFrame[],
  source: string,
  label: (f: MoveFrame) => string,
): Move {
  frames.sort((a, b) => a.t - b.t);
  const first = frames[0];
  const motors = first ? [...first.positions.keys()].sort() : [];
  for (let i = 0; i < frames.length; i++) {
    const frame = frames[i]!;
    const prev = frames[i - 1];
    if (prev && prev.t === frame.t) {
      throw new MoveFormatError(source, `${label(prev)} and ${label(frame)}: two frames at the same time`);
    }
    if (frame === first) continue;
    for (const motor of frame.positions.keys()) {
      if (!first!.positions.has(motor)) {
        throw new MoveFormatError(
          source,
          `${label(frame)}: motor ${quote(motor)} is not in the first frame (motors: ${motors.join(', ') || 'none'})`,
        );
      }
    }
    if (frame.positions.size !== motors.length) {
      const missing = motors.filter((m) => !frame.positions.has(m));
      throw new MoveFormatError(
        source,
        `${label(frame)}: motor(s) ${missing.map(quote).join(', ')} missing; every frame must have the same motors`,
      );
    }
  }
  const ordered = frames.map((f) => ({
    t: f.t,
    positions: new Map(motors.map((m) => [m, f.positions.get(m)!] as const)),
  }));
  return { framerate, motors, frames: ordered };
}

// ---------------------------------------------------------------------------------------------------------
// The file format

// Python float repr without sign: "0.0", "12", "0.02002", "4.05e-06", "1e+16". No "inf"/"nan", no hex, no spaces.
const TIME_KEY = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Parses a move file. Frames are sorted by numeric time. Throws MoveFormatError whose message starts with
 * `sourceName` and names the offending key, e.g. `walk.record: positions["0.04"].m3: speed "x" is not a finite number`.
 */
export function parseMoveFile(text: string, sourceName: string): Move {
  if (text.trim() === '') throw new MoveFormatError(sourceName, 'the file is empty');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new MoveFormatError(sourceName, `not valid JSON (${(err as Error).message})`);
  }
  if (!isPlainObject(doc)) throw new MoveFormatError(sourceName, `expected a JSON object, got ${kind(doc)}`);
  for (const key of Object.keys(doc)) {
    if (key !== 'framerate' && key !== 'positions') {
      throw new MoveFormatError(
        sourceName,
        `unexpected key ${quote(key)} (only "framerate" and "positions")`,
      );
    }
  }
  if (!('framerate' in doc)) throw new MoveFormatError(sourceName, 'missing "framerate"');
  if (!('positions' in doc)) throw new MoveFormatError(sourceName, 'missing "positions"');
  checkFramerate(doc.framerate, sourceName);
  const positions = doc.positions;
  if (Array.isArray(positions)) {
    // pypot before 2.x wrote a list of {motor: position}; it has neither times nor speeds.
    throw new MoveFormatError(
      sourceName,
      '"positions" is a list (old pypot format); expected an object keyed by time in seconds',
    );
  }
  if (!isPlainObject(positions)) {
    throw new MoveFormatError(
      sourceName,
      `"positions" must be an object keyed by time, got ${kind(positions)}`,
    );
  }

  const keyOf = new Map<MoveFrame, string>();
  const frames: MoveFrame[] = [];
  for (const [key, value] of Object.entries(positions)) {
    const where = `positions[${JSON.stringify(key)}]`;
    if (!TIME_KEY.test(key)) {
      throw new MoveFormatError(
        sourceName,
        `${where}: the time key is not a non-negative decimal number of seconds`,
      );
    }
    const t = Number(key) + 0;
    if (!Number.isFinite(t)) throw new MoveFormatError(sourceName, `${where}: the time is not finite`);
    if (!isPlainObject(value)) {
      throw new MoveFormatError(
        sourceName,
        `${where}: expected an object of motor -> [position, speed], got ${kind(value)}`,
      );
    }
    const samples = new Map<string, MotorSample>();
    for (const [motor, sample] of Object.entries(value)) {
      if (motor === '') throw new MoveFormatError(sourceName, `${where}: empty motor name`);
      samples.set(motor, checkSample(sample, `${where}.${motor}`, sourceName));
    }
    const frame: MoveFrame = { t, positions: samples };
    keyOf.set(frame, key);
    frames.push(frame);
  }
  return finish(doc.framerate, frames, sourceName, (f) => `positions[${JSON.stringify(keyOf.get(f))}]`);
}

/** The JSON shape of a move: null-prototype objects, keys as timeKey(t). value.json can answer `positions`. */
export function moveToJson(move: Move): {
  framerate: number;
  positions: Record<string, Record<string, [number, number]>>;
} {
  const positions: Record<string, Record<string, [number, number]>> = Object.create(null);
  for (const frame of move.frames) {
    const row: Record<string, [number, number]> = Object.create(null);
    for (const motor of move.motors) {
      const s = frame.positions.get(motor);
      if (s) row[motor] = [s[0], s[1]];
    }
    positions[timeKey(frame.t)] = row;
  }
  return { framerate: move.framerate, positions };
}

/**
 * Writes the pypot format, one line per frame. Checks the move first (throws MoveFormatError), so a file we
 * write always parses back to an equal move.
 */
export function serializeMove(input: Move): string {
  const move = checkMove(input);
  const lines: string[] = [];
  for (const frame of move.frames) {
    const cells = move.motors.map((m) => {
      const s = frame.positions.get(m)!;
      return `${JSON.stringify(m)}: [${JSON.stringify(s[0])}, ${JSON.stringify(s[1])}]`;
    });
    lines.push(`    ${JSON.stringify(timeKey(frame.t))}: {${cells.join(', ')}}`);
  }
  const body = lines.length ? `{\n${lines.join(',\n')}\n  }` : '{}';
  return `{\n  "framerate": ${JSON.stringify(move.framerate)},\n  "positions": ${body}\n}\n`;
}

// ---------------------------------------------------------------------------------------------------------
// Time

/** Seconds from t=0 to the last frame; 0 for an empty move. */
export function moveDuration(move: Move): number {
  const last = move.frames[move.frames.length - 1];
  return last ? last.t : 0;
}

/**
 * Positions and speeds at time `t` (seconds): linear interpolation between the two frames around t,
 * clamped to the first / last frame outside the recorded span. Empty move -> empty map.
 */
export function sampleMove(move: Move, t: number): Map<string, MotorSample> {
  if (Number.isNaN(t)) throw new RangeError('sampleMove: t is NaN');
  const frames = move.frames;
  const out = new Map<string, MotorSample>();
  const n = frames.length;
  if (n === 0) return out;
  const first = frames[0]!;
  const last = frames[n - 1]!;
  if (t <= first.t) return copy(first, move.motors, out);
  if (t >= last.t) return copy(last, move.motors, out);
  // Binary search: frames[lo].t <= t < frames[hi].t.
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (frames[mid]!.t <= t) lo = mid;
    else hi = mid;
  }
  const a = frames[lo]!;
  const b = frames[hi]!;
  const w = (t - a.t) / (b.t - a.t);
  for (const motor of move.motors) {
    const p = a.positions.get(motor)!;
    const q = b.positions.get(motor)!;
    out.set(motor, [p[0] + (q[0] - p[0]) * w, p[1] + (q[1] - p[1]) * w]);
  }
  return out;
}

function copy(
  frame: MoveFrame,
  motors: readonly string[],
  out: Map<string, MotorSample>,
): Map<string, MotorSample> {
  for (const m of motors) out.set(m, frame.positions.get(m)!);
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Helpers

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return `a ${typeof v}`;
}

/** Short printable form of any value for an error message. */
function quote(v: unknown): string {
  let s: string;
  try {
    s = typeof v === 'number' || v === undefined ? String(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

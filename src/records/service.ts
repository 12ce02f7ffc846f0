/**
 * Recorded moves (docs/reference/rest-api.md 4.4, docs/reference/contract.md 4): record, save, list, read, play, stop, delete.
 * Saved moves live in the RecordStore (the disk is the truth); recordings and replays in progress live here.
 * Operations on one move name run one at a time, so no request sees a half-done change of another.
 */
import { RobotError, badRequest, conflict, notFound, shuttingDown } from '../core/errors.ts';
import { describe } from '../core/values.ts';
import type { PrimitiveManager } from '../primitives/manager.ts';
import type { Motor } from '../robot/motor.ts';
import type { Robot } from '../robot/robot.ts';
import type { Logger } from '../core/logger.ts';
import { type Move, assertMoveName, moveToJson, parseMoveFile } from './move.ts';
import { PlayerPrimitive, ReplayPlan, replayPath } from './player.ts';
import type { MovePath } from '../robot/trajectory.ts';
import { RecorderPrimitive } from './recorder.ts';
import { CorruptMoveError, type MoveFileProblem, type RecordStore } from './store.ts';

export interface RecordsServiceOptions {
  readonly robot: Robot;
  /** Recorders and players are attached to it as `_<move>_recorder` and `_<move>_player`. */
  readonly manager: PrimitiveManager;
  readonly store: RecordStore;
  readonly logger: Logger;
}

/** The trajectory answer of value.json: `{<name>: {<t>: {<motor>: [pos, speed]}}, length}`. */
export type MoveValue = Record<string, unknown>;

interface Entry {
  recorder?: RecorderPrimitive;
  /**
   * The recorder holds a recording not saved yet: recording now, stopped through the primitives API, or its save
   * failed. save.json saves it; value.json and play.json use it rather than the file.
   */
  pending?: boolean;
  player?: PlayerPrimitive;
}

const MOTORS_TIP =
  'send {"motors": ["m1", "m2"]} or {"motors": "m1,m2"} (motor or alias names), or no body to record every motor';
const LIST_TIP = 'GET /records/list.json lists the saved moves';

export class RecordsService {
  readonly options: RecordsServiceOptions;
  readonly #robot: Robot;
  readonly #store: RecordStore;
  readonly #manager: PrimitiveManager;
  readonly #entries = new Map<string, Entry>();
  /** Per move name: tail of its queue of operations. */
  readonly #queues = new Map<string, Promise<unknown>>();
  #closed = false;

  constructor(options: RecordsServiceOptions) {
    this.options = options;
    this.#robot = options.robot;
    this.#store = options.store;
    this.#manager = options.manager;
  }

  /** Creates the records directory, removes temp files of interrupted saves, reports corrupt move files. */
  async open(): Promise<void> {
    await this.#store.open();
    const problems = await this.#store.problems();
    if (problems.length)
      this.options.logger.warn(
        `records: ${problems.length} move file(s) skipped (GET /records/problems.json): ${problems.map((p) => `move file ${p.file}: ${p.reason}`).join('; ')}`,
      );
  }

  /** Stops every recording (unsaved ones are lost, as on pypot) and replay; waits for saves in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#queues.values()].map((q) => q.catch(() => {})));
    for (const e of this.#entries.values()) {
      await e.player?.stop();
      await e.recorder?.stop();
    }
  }

  // --- queries -----------------------------------------------------------------------------------------

  /** Saved moves, sorted by name. Corrupt files are skipped (see problems()). */
  list(): Promise<string[]> {
    return this.#store.list();
  }

  /** Move files that cannot be used, with the reason. */
  problems(): Promise<MoveFileProblem[]> {
    return this.#store.problems();
  }

  /** The trajectory of a move being recorded (live) or saved. */
  async value(name: string): Promise<MoveValue> {
    assertMoveName(name);
    const move = this.#pending(name)?.move() ?? (await this.#load(name));
    const { positions } = moveToJson(move);
    const answer: MoveValue = { [name]: positions };
    // A move named "length" keeps its trajectory under its name; the count would overwrite it.
    if (name !== 'length') answer.length = move.frames.length;
    return answer;
  }

  isRecording(name: string): boolean {
    return this.#entries.get(name)?.recorder?.running ?? false;
  }

  isPlaying(name: string): boolean {
    return this.#entries.get(name)?.player?.running ?? false;
  }

  /** The player of a move, if it was ever played: its plan and timing (tests, scenario scripts). */
  replay(name: string): PlayerPrimitive | undefined {
    return this.#entries.get(name)?.player;
  }

  // --- commands ----------------------------------------------------------------------------------------

  /**
   * Starts recording `motors` (names or aliases; undefined = every motor) under `name`, replacing any recording
   * or saved move of that name once saved. 400 bad name or list, 404 unknown motor, 409 when the move plays.
   */
  async record(name: string, motors: unknown): Promise<void> {
    assertMoveName(name);
    const resolved = this.#resolveMotors(motors);
    await this.#exclusive(name, async () => {
      const e = this.#entry(name);
      if (e.player?.running)
        throw conflict(
          `The move "${name}" is playing`,
          `stop it first: POST /records/${name}/stop.json`,
          'a move cannot be recorded while it is replayed',
        );
      if (e.recorder) {
        await e.recorder.stop();
        e.recorder.motors = resolved;
      } else {
        // A recording started later through /primitives/_<move>_recorder/start.json is kept the same way.
        e.recorder = new RecorderPrimitive(this.#manager.context, name, resolved, () => {
          const entry = this.#entries.get(name);
          if (entry && entry.recorder === e.recorder) entry.pending = true;
        });
        this.#manager.attach(e.recorder);
      }
      e.pending = true;
      await e.recorder.start();
    });
  }

  /** Stops the recording and writes the move atomically. 404 unknown, 409 saved but not recording. */
  async save(name: string): Promise<void> {
    assertMoveName(name);
    await this.#exclusive(name, async () => {
      const recorder = this.#pending(name);
      if (recorder) {
        await recorder.stop();
        await this.#store.save(name, recorder.move()); // on failure the recording stays pending: retry
        this.#entries.get(name)!.pending = false;
        return;
      }
      if (await this.#store.exists(name))
        throw conflict(
          `The move "${name}" is not being recorded`,
          `start a recording first: POST /records/${name}/record.json`,
          'save.json stops a recording in progress and saves it; this move is saved already',
        );
      throw notFound(`The move "${name}" does not exist`, LIST_TIP, 'it is neither being recorded nor saved');
    });
  }

  /**
   * Replays the move at `speed` (negative: backwards), restarting a replay in progress; `guard` (the --guard's check
   * of its path) may refuse it before anything moves.
   */
  async play(name: string, speed: number, guard?: (path: MovePath) => Promise<void>): Promise<void> {
    assertMoveName(name);
    await this.#exclusive(name, async () => {
      const e = this.#entries.get(name);
      if (e?.recorder?.running)
        throw conflict(
          `The move "${name}" is being recorded`,
          `save it first: POST /records/${name}/save.json`,
          'a move cannot be replayed while it is recorded',
        );
      const move = this.#pending(name)?.move() ?? (await this.#load(name));
      const unknown = move.motors.filter((m) => !this.#robot.hasMotor(m));
      if (unknown.length)
        throw conflict(
          `The move "${name}" uses motors this robot does not have`,
          'GET /motors/list.json lists the motors of this robot; record the move again on it',
          `unknown motor(s): ${unknown.join(', ')}`,
        );
      const plan = new ReplayPlan(move, speed);
      const motors = move.motors.map((m) => this.#robot.motor(m));
      await guard?.(replayPath(plan, motors, name));
      const entry = this.#entry(name);
      if (entry.player) {
        await entry.player.stop();
        entry.player.load(plan, motors);
      } else {
        entry.player = new PlayerPrimitive(this.#manager.context, name, plan, motors);
        this.#manager.attach(entry.player);
      }
      await entry.player.start();
    });
  }

  /**
   * Installs a move sent as pypot move JSON (beyond v4: the deploy gate's upload), saved atomically like a recorded
   * one and replacing a saved move of that name. 400 bad name, bad data or motors this robot does not have; 409 when
   * the move is being recorded or replayed. Returns the number of frames saved.
   */
  async upload(name: string, data: unknown): Promise<number> {
    assertMoveName(name);
    const move = parseMoveFile(JSON.stringify(data ?? null), `uploaded move "${name}"`);
    const unknown = move.motors.filter((m) => !this.#robot.hasMotor(m));
    if (unknown.length)
      throw badRequest(
        `The move "${name}" uses motors this robot does not have`,
        'GET /motors/list.json lists the motors of this robot',
        `unknown motor(s): ${unknown.join(', ')}`,
      );
    await this.#exclusive(name, async () => {
      const e = this.#entries.get(name);
      if (e?.recorder?.running || e?.player?.running)
        throw conflict(
          `The move "${name}" is ${e.recorder?.running ? 'being recorded' : 'playing'}`,
          `stop it first: POST /records/${name}/${e.recorder?.running ? 'save' : 'stop'}.json`,
          'a move cannot be replaced while it is recorded or replayed',
        );
      await this.#store.save(name, move);
      if (e) e.pending = false; // a stopped, unsaved recording of that name is replaced by the upload
    });
    return move.frames.length;
  }

  /** Stops a replay; fine when nothing plays. 404 for an unknown move. */
  async stop(name: string): Promise<void> {
    assertMoveName(name);
    await this.#exclusive(name, async () => {
      const e = this.#entries.get(name);
      if (e?.player) return e.player.stop();
      if (e?.recorder || (await this.#store.exists(name))) return;
      throw notFound(`The move "${name}" does not exist`, LIST_TIP);
    });
  }

  /** Stops any replay or recording of the move and deletes it from disk and memory. 404 for an unknown move. */
  async delete(name: string): Promise<void> {
    assertMoveName(name);
    await this.#exclusive(name, async () => {
      const e = this.#entries.get(name);
      const inMemory = Boolean(e?.recorder || e?.player);
      if (e?.player) await this.#manager.detach(e.player.name);
      if (e?.recorder) await this.#manager.detach(e.recorder.name);
      this.#entries.delete(name);
      if (await this.#store.exists(name)) {
        try {
          await this.#store.delete(name);
        } catch (err) {
          if (!(err instanceof RobotError && err.code === 'not_found')) throw err;
        }
      } else if (!inMemory) {
        throw notFound(`The move "${name}" does not exist`, LIST_TIP);
      }
    });
  }

  // -------------------------------------------------------------------------------------------------------

  /** The recorder of `name` when it is recording or holds a recording not saved yet. */
  #pending(name: string): RecorderPrimitive | undefined {
    const e = this.#entries.get(name);
    return e?.recorder && (e.recorder.running || e.pending) ? e.recorder : undefined;
  }

  #entry(name: string): Entry {
    let e = this.#entries.get(name);
    if (!e) this.#entries.set(name, (e = {}));
    return e;
  }

  /** A saved move; a corrupt file is 409 naming the file and what is wrong with it. */
  async #load(name: string): Promise<Move> {
    try {
      return await this.#store.load(name);
    } catch (err) {
      if (err instanceof CorruptMoveError) throw conflict(err.message, err.tip, `${err.file}: ${err.reason}`);
      throw err;
    }
  }

  /** The `motors` field of record.json: an array or a comma-separated string of motor or alias names. */
  #resolveMotors(value: unknown): Motor[] {
    if (value === undefined) return [...this.#robot.motors];
    let names: string[];
    if (typeof value === 'string') {
      names = value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    } else if (Array.isArray(value)) {
      names = value.map((v, i) => {
        if (typeof v !== 'string' || v.trim() === '')
          throw badRequest(`motors[${i}] must be a motor or alias name`, MOTORS_TIP, `got ${describe(v)}`);
        return v.trim();
      });
    } else {
      throw badRequest(
        'motors must be a list of motor names or a comma-separated string',
        MOTORS_TIP,
        `got ${describe(value)}`,
      );
    }
    if (!names.length) throw badRequest('motors is empty: name at least one motor', MOTORS_TIP);
    return this.#robot.resolveMotors(names);
  }

  /** Runs `op` after every earlier operation on the same move name has settled. */
  #exclusive<T>(name: string, op: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(shuttingDown());
    const prev = this.#queues.get(name) ?? Promise.resolve();
    const run = prev.then(op, op);
    const tail = run.catch(() => {});
    this.#queues.set(name, tail);
    void tail.then(() => {
      if (this.#queues.get(name) === tail) this.#queues.delete(name);
    });
    return run;
  }
}

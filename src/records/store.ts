/**
 * Saved moves on disk: `<dir>/<name>.record`, pypot move format (see move.ts).
 * Writes are atomic and durable (temp file in the same directory, fsync, rename, fsync of the directory), so a
 * crash leaves either the old file or the new one, never a mix. Corrupt files are reported, not fatal.
 */
import { randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { RobotError, notFound } from '../core/errors.ts';
import { syncDir, writeFileAtomic } from '../core/atomic-file.ts';
import {
  type Move,
  MoveFormatError,
  assertMoveName,
  parseMoveFile,
  serializeMove,
  validMoveName,
} from './move.ts';

export interface RecordStoreLogger {
  warn(msg: string): void;
}

export interface MoveFileProblem {
  /** File name inside the records directory, e.g. "walk.record". */
  readonly file: string;
  readonly reason: string;
}

/** A saved move that exists but cannot be used (bad JSON, bad data, unreadable). */
export class CorruptMoveError extends RobotError {
  readonly file: string;
  readonly reason: string;
  constructor(file: string, reason: string) {
    super(
      'internal',
      `The move file "${file}" cannot be used: ${reason}`,
      'Fix the file in the records directory or delete the move; the other moves are not affected.',
      reason,
    );
    this.name = 'CorruptMoveError';
    this.file = file;
    this.reason = reason;
  }
}

const SUFFIX = '.record';
// Our temp files: ".<name>.record.<pid>.<hex>.tmp". The leading "." means no move name can ever match one.
const TEMP_FILE = /^\.([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\.record\.(\d{1,10})\.([0-9a-f]{8,32})\.tmp$/;
// A save never takes this long, so an older temp file is stale whatever its pid says (pids get reused).
const STALE_TEMP_MS = 60 * 60 * 1000;
// Larger files are refused rather than read (a 10 min, 25-motor recording is ~30 MB).
const MAX_FILE_BYTES = 256 * 1024 * 1024;

type Check = { readonly version: string; readonly result: Promise<string | null> };

export class RecordStore {
  readonly dir: string;
  private readonly logger: RecordStoreLogger;
  private opening: Promise<void> | undefined;
  /** Per file name: the last checked version (inode, size, mtime) and its problem, or null when valid. */
  private readonly checks = new Map<string, Check>();
  /** Per move name: tail of the queue of save/delete operations, so they apply in call order. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Temp files this instance is writing right now (never removed as stale). */
  private readonly writing = new Set<string>();

  constructor(dir: string, logger?: RecordStoreLogger) {
    this.dir = path.resolve(dir);
    this.logger = logger ?? { warn: () => {} };
  }

  /**
   * Creates the directory (recursively) and removes stale temp files left by a crash. Idempotent; every other
   * method calls it first, so calling it explicitly only moves the work (and its errors) to start-up.
   */
  open(): Promise<void> {
    this.opening ??= this.doOpen().catch((err: unknown) => {
      this.opening = undefined; // let a later call retry
      throw err;
    });
    return this.opening;
  }

  /** Names of the valid saved moves, sorted. Invalid or corrupt files are skipped (see problems()). */
  async list(): Promise<string[]> {
    const scan = await this.scan();
    return scan.valid;
  }

  /** Files named like moves that cannot be used, with the reason; sorted by file name. */
  async problems(): Promise<MoveFileProblem[]> {
    const scan = await this.scan();
    return scan.problems;
  }

  /** True when `<name>.record` exists, even if corrupt (so it can still be deleted or replaced). */
  async exists(name: string): Promise<boolean> {
    assertMoveName(name);
    await this.open();
    try {
      await fs.stat(this.fileOf(name));
      return true;
    } catch (err) {
      if (errCode(err) === 'ENOENT' || errCode(err) === 'ENOTDIR') return false;
      throw err;
    }
  }

  /** Throws badRequest for a bad name, notFound when absent, CorruptMoveError when unusable. */
  async load(name: string): Promise<Move> {
    assertMoveName(name);
    await this.open();
    const file = name + SUFFIX;
    let handle: FileHandle;
    try {
      handle = await fs.open(this.fileOf(name), 'r');
    } catch (err) {
      if (errCode(err) === 'ENOENT') throw missing(name);
      throw new CorruptMoveError(file, `cannot open it (${describe(err)})`);
    }
    try {
      const stat = await handle.stat({ bigint: true });
      const read = await readChecked(handle, stat, file);
      this.remember(file, versionOf(stat), read.problem);
      if (read.problem !== null) throw new CorruptMoveError(file, read.problem);
      return read.move!;
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /**
   * Writes the move atomically and durably, replacing any saved move of that name. Throws badRequest for a bad
   * name and MoveFormatError for bad move data, before touching the disk.
   */
  async save(name: string, move: Move): Promise<void> {
    assertMoveName(name);
    const text = serializeMove(move);
    await this.open();
    await this.queued(name, () => this.write(name, text));
  }

  /** Removes the saved move; notFound when absent. */
  async delete(name: string): Promise<void> {
    assertMoveName(name);
    await this.open();
    await this.queued(name, async () => {
      try {
        await fs.unlink(this.fileOf(name));
      } catch (err) {
        if (errCode(err) === 'ENOENT') throw missing(name);
        throw err;
      }
      this.checks.delete(name + SUFFIX);
      await syncDir(this.dir);
    });
  }

  // -------------------------------------------------------------------------------------------------------

  private fileOf(name: string): string {
    return path.join(this.dir, name + SUFFIX);
  }

  private async doOpen(): Promise<void> {
    try {
      await fs.mkdir(this.dir, { recursive: true });
    } catch (err) {
      throw new RobotError(
        'internal',
        `The records directory "${this.dir}" cannot be created`,
        '',
        describe(err),
      );
    }
    const now = Date.now();
    for (const entry of await fs.readdir(this.dir, { withFileTypes: true })) {
      const m = TEMP_FILE.exec(entry.name);
      if (!m || !entry.isFile() || this.writing.has(entry.name)) continue;
      const full = path.join(this.dir, entry.name);
      const pid = Number(m[2]);
      try {
        const age = now - (await fs.stat(full)).mtimeMs;
        // Another live server may be saving into the same directory right now: leave its young temp files.
        if (pid !== process.pid && processAlive(pid) && age < STALE_TEMP_MS) continue;
        await fs.unlink(full);
        this.logger.warn(`records: removed temporary file "${entry.name}" left by an interrupted save`);
      } catch (err) {
        if (errCode(err) !== 'ENOENT')
          this.logger.warn(`records: cannot remove "${entry.name}": ${describe(err)}`);
      }
    }
  }

  private async write(name: string, text: string): Promise<void> {
    const tmpName = `.${name}${SUFFIX}.${process.pid}.${randomBytes(8).toString('hex')}.tmp`;
    const tmp = path.join(this.dir, tmpName);
    this.writing.add(tmpName);
    try {
      await writeFileAtomic(this.fileOf(name), text, tmpName);
    } catch (err) {
      await fs.unlink(tmp).catch(() => {});
      throw new RobotError(
        'internal',
        `The move "${name}" could not be saved`,
        'Check the records directory.',
        describe(err),
      );
    } finally {
      this.writing.delete(tmpName);
    }
  }

  /** Runs `op` after every earlier save/delete of the same name has settled. */
  private queued<T>(name: string, op: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(name) ?? Promise.resolve();
    const run = prev.then(op, op);
    const tail = run.catch(() => {});
    this.queues.set(name, tail);
    void tail.then(() => {
      if (this.queues.get(name) === tail) this.queues.delete(name);
    });
    return run;
  }

  private async scan(): Promise<{ valid: string[]; problems: MoveFileProblem[] }> {
    await this.open();
    const entries = await fs.readdir(this.dir, { withFileTypes: true });
    const seen = new Set<string>();
    const results = await Promise.all(
      entries
        .filter((e) => e.name.endsWith(SUFFIX))
        .map(async (entry) => {
          seen.add(entry.name);
          return { file: entry.name, problem: await this.check(entry) };
        }),
    );
    for (const file of this.checks.keys()) if (!seen.has(file)) this.checks.delete(file);
    const valid: string[] = [];
    const problems: MoveFileProblem[] = [];
    for (const { file, problem } of results) {
      if (problem === undefined) continue; // vanished meanwhile
      if (problem === null) valid.push(file.slice(0, -SUFFIX.length));
      else problems.push({ file, reason: problem });
    }
    valid.sort(byCodeUnit);
    problems.sort((a, b) => byCodeUnit(a.file, b.file));
    return { valid, problems };
  }

  /** null: a valid move; string: why not; undefined: the file is gone. Parses each file version once. */
  private async check(entry: Dirent): Promise<string | null | undefined> {
    const file = entry.name;
    const name = file.slice(0, -SUFFIX.length);
    if (!validMoveName(name)) return `the name "${name}" is not a valid move name, so the file is ignored`;
    let handle: FileHandle;
    try {
      handle = await fs.open(path.join(this.dir, file), 'r');
    } catch (err) {
      if (errCode(err) === 'ENOENT') return undefined;
      return this.remember(file, `open-error:${errCode(err)}`, `cannot open it (${describe(err)})`).result;
    }
    try {
      const stat = await handle.stat({ bigint: true });
      const version = versionOf(stat);
      const cached = this.checks.get(file);
      if (cached && cached.version === version) return await cached.result;
      const result = readChecked(handle, stat, file).then((r) => r.problem);
      return await this.remember(file, version, result).result;
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /** Records a check result for a file version, warning once per new corrupt version. */
  private remember(file: string, version: string, result: string | null | Promise<string | null>): Check {
    const cached = this.checks.get(file);
    if (cached && cached.version === version) return cached;
    const check: Check = { version, result: Promise.resolve(result) };
    this.checks.set(file, check);
    void check.result.then((problem) => {
      if (problem !== null) this.logger.warn(`records: skipping move file "${file}": ${problem}`);
    });
    return check;
  }
}

// ---------------------------------------------------------------------------------------------------------

interface BigStat {
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  isFile(): boolean;
}

function versionOf(stat: BigStat): string {
  return `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
}

/** Reads and parses an open move file; never throws for file content or read errors. */
async function readChecked(
  handle: FileHandle,
  stat: BigStat,
  file: string,
): Promise<{ move: Move | null; problem: string | null }> {
  if (!stat.isFile()) return { move: null, problem: 'not a regular file' };
  if (stat.size > BigInt(MAX_FILE_BYTES)) {
    return { move: null, problem: `the file is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB` };
  }
  let text: string;
  try {
    text = await handle.readFile('utf8');
  } catch (err) {
    return { move: null, problem: `cannot read it (${describe(err)})` };
  }
  try {
    return { move: parseMoveFile(text, file), problem: null };
  } catch (err) {
    if (err instanceof MoveFormatError) return { move: null, problem: err.reason };
    throw err;
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0); // signal 0: existence check only
    return true;
  } catch (err) {
    return errCode(err) === 'EPERM';
  }
}

function missing(name: string): RobotError {
  return notFound(`The move "${name}" does not exist`, 'GET /records/list.json lists the saved moves.');
}

function errCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

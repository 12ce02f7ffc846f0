/** Moves for scenarios: from a .record file or by name from a records directory. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Move, parseMoveFile } from '../records/move.ts';
import { RecordStore } from '../records/store.ts';

export interface MoveRef {
  /** A pypot .record file (relative to the scenario file), or a move name in `recordsDir`. */
  readonly file?: string;
  readonly name?: string;
  readonly recordsDir?: string;
}

/** The label as a move name (the twin saves the move under it; on a server, the name it is installed as). */
export function moveNameOf(label: string): string {
  return (
    label
      .replace(/[^A-Za-z0-9_.-]+/g, '_')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 64) || 'move'
  );
}

/** A move from a .record file (relative to `dir`) or by name from a records directory (default ./records). */
export async function loadMove(ref: MoveRef, dir: string): Promise<Move> {
  if (ref.file) {
    const file = path.resolve(dir, ref.file);
    return parseMoveFile(await readFile(file, 'utf8'), path.basename(file));
  }
  if (!ref.name) throw new Error('a move reference needs a file or a name');
  return new RecordStore(path.resolve(ref.recordsDir ?? 'records')).load(ref.name);
}

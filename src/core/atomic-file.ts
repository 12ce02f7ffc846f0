/**
 * Atomic, durable file writes: a temp file in the same directory, fsync, rename, fsync of the directory, so a crash
 * or an interrupted run leaves either the old file or the new one, never a mix (saved moves, calibration files).
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** Writes `text` to `file` atomically; `tmpName` (in the same directory) defaults to a unique hidden name. */
export async function writeFileAtomic(file: string, text: string, tmpName?: string): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(
    dir,
    tmpName ?? `.${path.basename(file)}.${process.pid}.${randomBytes(8).toString('hex')}.tmp`,
  );
  try {
    const handle = await fs.open(tmp, 'wx', 0o644);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
    await syncDir(dir);
  } catch (err) {
    await fs.unlink(tmp).catch(() => {});
    throw err;
  }
}

/** Makes a rename or unlink in `dir` durable. Some platforms cannot fsync a directory; that is not an error. */
export async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'ENOTSUP') throw err;
  } finally {
    await handle?.close().catch(() => {});
  }
}

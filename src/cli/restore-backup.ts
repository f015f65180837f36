import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { x as extract } from 'tar';
import { fileProblem } from '../file-problem.ts';
import { lockDataDir } from '../storage/data-dir-lock.ts';

/**
 * Restores a backup of the embedded engine (`GET /admin/backup`, `npm run admin -- backup`)
 * into a new data directory, which Parley then starts on (`DATA_DIR=<dir> npm start`). Never
 * over existing data: the directory must be new or empty, and nothing may hold its lock.
 */
export async function restoreBackup(archive: string, dataDir: string): Promise<string> {
  if (!existsSync(archive)) throw new Error(`no backup at ${archive}`);
  // Named here: Node's own words were "EISDIR: illegal operation on a directory, read".
  if (statSync(archive).isDirectory()) {
    throw new Error(`${archive} is a directory: name the backup file in it (parley….tar.gz)`);
  }
  const root = resolve(dataDir);
  if (existsSync(root) && !statSync(root).isDirectory()) {
    throw new Error(`${root} is a file: restore into a new data directory`);
  }
  // A new volume's mount point holds its file system's empty lost+found: still new.
  const entries = existsSync(root) ? readdirSync(root).filter((name) => name !== 'lost+found') : [];
  if (entries.length > 0) {
    throw new Error(`${root} is not empty: restore into a new data directory`);
  }
  const created = !existsSync(root);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const lock = await lockDataDir(root);
  const target = join(root, 'pg');
  try {
    mkdirSync(target, { mode: 0o700 });
    const notABackup = `${archive} is not a backup of Parley's embedded database`;
    // The archive holds the engine's directory under one top-level name. A file that is no
    // gzipped tar, or one cut short, fails with tar's or zlib's code, which says nothing to act on.
    // A file tar cannot write (a full disk, a quota, `ulimit -f`) is only a warning to tar,
    // which goes on and resolves: the restore said "Restored" over a database cut short.
    let unwritten: { syscall?: string; code?: string } | undefined;
    await extract({
      file: archive,
      cwd: target,
      strip: 1,
      onwarn: (_code, _message, data) => {
        const error = data as { syscall?: string; code?: string };
        if (error.syscall) unwritten ??= error;
      },
    }).catch((error: unknown) => {
      if (!isUnreadableArchive(error)) throw error;
      throw new Error(`${notABackup} (not a gzipped tar, or one cut short)`);
    });
    if (unwritten) {
      throw new Error(
        `cannot restore into ${root}: ${fileProblem(unwritten)}; nothing of it was kept`,
      );
    }
    if (!existsSync(join(target, 'PG_VERSION'))) throw new Error(notABackup);
    return root;
  } catch (error) {
    // Nothing half-restored is left for a start to mistake for data.
    rmSync(created ? root : target, { recursive: true, force: true });
    throw error;
  } finally {
    await lock.release();
  }
}

/** tar's own codes (TAR_BAD_ARCHIVE…) and zlib's (Z_BUF_ERROR…): the file's content, not the disk. */
function isUnreadableArchive(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(TAR_|Z_)/.test(code);
}

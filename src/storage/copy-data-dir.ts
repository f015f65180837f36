import { constants, copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Copies a data directory to `to` (which must not exist yet), file by file on the same disk:
 * the kernel copies each file, or clones it where the file system can, so the process's memory
 * stays flat whatever the database's size. Synchronous on purpose: the caller holds the database
 * for the copy's duration, and a thousand small files copy several times faster without a trip
 * through the thread pool each. Links are followed, as PGlite's own dump followed them.
 */
export function copyDataDir(from: string, to: string): void {
  mkdirSync(to, { mode: 0o700 });
  for (const name of readdirSync(from).sort()) {
    const source = join(from, name);
    const target = join(to, name);
    const info = statSync(source);
    if (info.isDirectory()) copyDataDir(source, target);
    else if (info.isFile()) copyFileSync(source, target, constants.COPYFILE_FICLONE);
    // A socket or device among the database's files would be left out silently otherwise.
    else throw new Error(`${source} is neither a file nor a directory`);
  }
}

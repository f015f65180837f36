import { c as createTar, type Pack } from 'tar';

/** The directory of a backup's copy that holds the data directory, and the archive's top name. */
export const BACKUP_TOP = 'pg';

/**
 * A backup as a gzipped tar, made from its copy while it is sent: tar reads a file a chunk at
 * a time and waits while the client does, so memory does not grow with the database. Every
 * entry sits under one top-level name, which restore strips, as it strips the empty one
 * ("/PG_VERSION") of the archives PGlite built in memory before, which restore still reads.
 */
export function backupArchive(copyRoot: string): Pack {
  return createTar({ cwd: copyRoot, gzip: true, portable: true }, [BACKUP_TOP]);
}

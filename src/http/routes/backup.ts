import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { requireAdmin } from '../../accounts/principal.ts';
import { AppError } from '../../errors.ts';
import { BACKUP_TOP, backupArchive } from '../../storage/backup-archive.ts';
import type { App } from '../app-types.ts';
import { errorResponses } from '../error-responses.ts';

export interface Backups {
  /** Where a backup's copy is made before it is sent (the data directory's own disk). */
  dir: string;
  /**
   * Copies the database, consistent, to `path` (a new directory); resolves with how long the
   * database was held, in ms. Absent on a PostgreSQL server.
   */
  copy: ((path: string) => Promise<number>) | undefined;
}

/**
 * `GET /admin/backup`: a live backup of the embedded engine, while Parley serves, sent as a
 * gzipped tar of its data directory (restore it with `npm run admin -- restore`). The data
 * directory is copied on its own disk first, the database held only for that, and the tar is
 * made from the copy as it is sent, so memory does not grow with the database. A PostgreSQL
 * server is backed up with its own tools (pg_dump), which this route says.
 */
export function registerBackupRoute(app: App, backups: Backups): void {
  app.get(
    '/admin/backup',
    {
      // A HEAD would copy the whole database to send none of it, and its copy was removed
      // while Fastify still read the archive (an error logged each time): it is a 405.
      exposeHeadRoute: false,
      schema: {
        summary: 'A live backup of the embedded database (a gzipped tar), taken while serving',
        description:
          'Every transaction committed before the backup began is in it. On a PostgreSQL ' +
          'server: 409, use pg_dump. 500 when the copy could not be made (nothing is kept).',
        tags: ['admin'],
        response: {
          200: z.any().describe('application/gzip: the data directory as a tar'),
          ...errorResponses(401, 403, 409, 500, 503),
        },
      },
    },
    async (request, reply) => {
      requireAdmin(request.principal);
      if (!backups.copy) {
        throw new AppError(
          'backup_not_available',
          409,
          'This Parley keeps its data on a PostgreSQL server: back it up with pg_dump ' +
            '(see docs/operating.md, "Backups").',
        );
      }
      const copy = join(backups.dir, `.backup-${randomBytes(8).toString('hex')}`);
      const started = performance.now();
      try {
        await mkdir(backups.dir, { recursive: true, mode: 0o700 });
        await mkdir(copy, { mode: 0o700 });
        const pausedMs = await backups.copy(join(copy, BACKUP_TOP));
        request.log.info({ pausedMs, ms: Math.round(performance.now() - started) }, 'backup taken');
      } catch (error) {
        // Fails too when the copy was never begun (no directory to make it in): the cause to
        // report is the first failure.
        await rm(copy, { recursive: true, force: true }).catch((cleanup: unknown) =>
          request.log.warn({ err: cleanup }, 'a failed backup copy could not be removed'),
        );
        throw new AppError(
          'backup_failed',
          500,
          `The backup failed, and nothing of it was kept: ${(error as Error).message}`,
          { cause: error },
        );
      }
      const archive = backupArchive(copy);
      archive.once('error', (error) =>
        request.log.error({ err: error }, 'backup not sent whole: its copy could not be read'),
      );
      // The copy is as large as the database: removed once sent, or once the client has gone.
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished) {
          request.log.info({ ms: Math.round(performance.now() - started) }, 'backup sent');
        } else {
          request.log.warn('backup not sent whole: the client left');
        }
        // Unheard, a removal that failed (a disk turned read-only) would end the process. The
        // copy then stays until the next start removes it (clearUnsentBackups).
        rm(copy, { recursive: true, force: true }).catch((error: unknown) =>
          request.log.warn(
            { err: error, code: 'backup_copy_not_removed' },
            'the copy a backup was sent from could not be removed; the next start removes it',
          ),
        );
      });
      const stamp = new Date()
        .toISOString()
        .replaceAll(':', '-')
        .replace(/\.\d+Z$/, 'Z');
      return reply
        .header('content-type', 'application/gzip')
        .header('content-disposition', `attachment; filename="parley-backup-${stamp}.tar.gz"`)
        .send(archive);
    },
  );
}

/** A copy being sent, or (before backups were streamed) a whole archive waiting to be sent. */
const UNSENT = /^\.backup-[0-9a-f]{16}(\.tar\.gz)?$/;

/**
 * Removes the backups a previous run was still sending when it died (killed, or out of disk).
 * Each is as large as the database, and nothing else would ever remove them. Call it only while
 * holding the data directory, never beside its owner.
 */
export async function clearUnsentBackups(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const unsent = names.filter((name) => UNSENT.test(name));
  await Promise.all(unsent.map((name) => rm(join(dir, name), { recursive: true, force: true })));
  return unsent.length;
}

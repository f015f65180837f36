import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { requireAdmin } from '../../accounts/principal.ts';
import { AppError } from '../../errors.ts';
import type { App } from '../app-types.ts';
import { errorResponses } from '../error-responses.ts';

export interface Backups {
  /** Where a backup is written before it is sent (the data directory's own disk). */
  dir: string;
  /** Writes a consistent copy of the database to `path`; absent on a PostgreSQL server. */
  write: ((path: string) => Promise<number>) | undefined;
}

/**
 * `GET /admin/backup`: a live backup of the embedded engine, while Parley serves, sent as a
 * gzipped tar of its data directory (restore it with `npm run admin -- restore`). A PostgreSQL
 * server is backed up with its own tools (pg_dump), which this route says.
 */
export function registerBackupRoute(app: App, backups: Backups): void {
  app.get(
    '/admin/backup',
    {
      schema: {
        summary: 'A live backup of the embedded database (a gzipped tar), taken while serving',
        description:
          'Every transaction committed before the backup began is in it. On a PostgreSQL ' +
          'server: 409, use pg_dump.',
        tags: ['admin'],
        response: {
          200: z.any().describe('application/gzip: the data directory as a tar'),
          ...errorResponses(401, 403, 409, 503),
        },
      },
    },
    async (request, reply) => {
      requireAdmin(request.principal);
      if (!backups.write) {
        throw new AppError(
          'backup_not_available',
          409,
          'This Parley keeps its data on a PostgreSQL server: back it up with pg_dump ' +
            '(see docs/operating.md, "Backups").',
        );
      }
      await mkdir(backups.dir, { recursive: true, mode: 0o700 });
      const path = join(backups.dir, `.backup-${randomBytes(8).toString('hex')}.tar.gz`);
      const started = performance.now();
      try {
        const bytes = await backups.write(path);
        request.log.info({ bytes, ms: Math.round(performance.now() - started) }, 'backup taken');
      } catch (error) {
        await rm(path, { force: true });
        throw error;
      }
      const file = createReadStream(path);
      // Removed once sent, or once the client has gone: a backup is not kept on the server.
      file.once('close', () => void rm(path, { force: true }));
      const stamp = new Date()
        .toISOString()
        .replaceAll(':', '-')
        .replace(/\.\d+Z$/, 'Z');
      return reply
        .header('content-type', 'application/gzip')
        .header('content-disposition', `attachment; filename="parley-backup-${stamp}.tar.gz"`)
        .send(file);
    },
  );
}

const UNSENT = /^\.backup-[0-9a-f]{16}\.tar\.gz$/;

/**
 * Removes the backups a previous run was still sending when it died (killed, or out of memory:
 * a backup is built in memory). Each is as large as the database, and nothing else would ever
 * remove them. Call it only while holding the data directory, never beside its owner.
 */
export async function clearUnsentBackups(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const unsent = names.filter((name) => UNSENT.test(name));
  await Promise.all(unsent.map((name) => rm(join(dir, name), { force: true })));
  return unsent.length;
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { parseConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import { createTestDatabase } from '../../test/support/postgres-server.ts';

/**
 * A fresh, migrated database of either engine for a bench that drives Parley's repositories
 * directly: a new PostgreSQL database, or an embedded one in a new temporary directory.
 * `done` closes it and removes it.
 */
export async function openFreshDatabase(
  engine: string,
  logger: Logger,
): Promise<{ database: Database; done: () => Promise<void> }> {
  if (engine === 'server') {
    const server = await createTestDatabase();
    const database = await openDatabase(parseConfig({ DATABASE_URL: server.url }), logger);
    return {
      database,
      done: async () => {
        await database.close();
        await server.drop();
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-db-'));
  const database = await openDatabase(parseConfig({ DATA_DIR: dir }), logger);
  return {
    database,
    done: async () => {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

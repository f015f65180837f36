import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { pgliteOptions } from '../../src/storage/pglite-options.ts';
import type { Engine } from './engines.ts';

export interface OutsideStatement {
  text: string;
  values?: unknown[];
}

/**
 * Changes Parley's stored rows as something other than Parley would (an operator's psql, an
 * older or newer version), to make data the API refuses to make. A PostgreSQL server takes
 * the statements while Parley runs. The embedded database belongs to its one process: it is
 * changed while Parley is stopped, so `restart` stops Parley, runs the change it is given, and
 * starts Parley again on the same data directory.
 */
export async function changeFromOutside(
  engine: Engine,
  where: {
    env: Record<string, string | undefined>;
    dataDir: string;
    restart(whileStopped: () => Promise<void>): Promise<unknown>;
  },
  statements: OutsideStatement[],
): Promise<void> {
  if (engine === 'server') {
    const client = new pg.Client({ connectionString: where.env.DATABASE_URL });
    await client.connect();
    try {
      for (const { text, values } of statements) await client.query(text, values);
    } finally {
      await client.end();
    }
    return;
  }
  await where.restart(async () => {
    const db = await PGlite.create(join(where.dataDir, 'pg'), pgliteOptions('16MB'));
    try {
      for (const { text, values } of statements) await db.query(text, values);
    } finally {
      await db.close();
    }
  });
}

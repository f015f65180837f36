import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import { createTestDatabase, type TestDatabase } from './postgres-server.ts';

/**
 * The two storage engines every storage-touching test runs on: the embedded PGlite (no
 * DATABASE_URL) and the PostgreSQL server on this machine (a fresh database per suite).
 */
export const ENGINES = ['embedded', 'server'] as const;
export type Engine = (typeof ENGINES)[number];

export interface EngineEnv {
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

export async function engineEnv(engine: Engine): Promise<EngineEnv> {
  if (engine === 'embedded') return { env: {}, cleanup: async () => {} };
  const database: TestDatabase = await createTestDatabase();
  return { env: { DATABASE_URL: database.url }, cleanup: () => database.drop() };
}

/** A database opened the way Parley opens it (migrations run), on one engine, for a suite. */
export interface OpenTestDatabase {
  database: Database;
  close(): Promise<void>;
}

export async function openTestDatabase(engine: Engine): Promise<OpenTestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-db-'));
  const server = engine === 'server' ? await createTestDatabase() : undefined;
  const database = await openDatabase(
    { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: server?.url },
    pino({ level: 'silent' }),
  );
  return {
    database,
    async close() {
      await database.close();
      await server?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

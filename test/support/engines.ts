import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import {
  createTestDatabase,
  type TestDatabase,
  type TestDatabaseOptions,
} from './postgres-server.ts';

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

/**
 * Where vector search is tested: each engine with pgvector, and a PostgreSQL server without it
 * (lexical retrieval only), which is still a supported setup.
 */
export const VECTOR_SETUPS = [
  { name: 'the embedded engine', engine: 'embedded', pgvector: true },
  { name: 'the server engine', engine: 'server', pgvector: true },
  { name: 'a server without pgvector', engine: 'server', pgvector: false },
] as const satisfies readonly { name: string; engine: Engine; pgvector: boolean }[];
export type VectorSetup = (typeof VECTOR_SETUPS)[number];

export async function engineEnv(
  engine: Engine,
  options: TestDatabaseOptions = {},
): Promise<EngineEnv> {
  if (engine === 'embedded') {
    if (options.pgvector === false) throw new Error('the embedded engine always has pgvector');
    return { env: {}, cleanup: async () => {} };
  }
  const database: TestDatabase = await createTestDatabase(options);
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

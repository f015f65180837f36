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

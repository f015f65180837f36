import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Engine, engineEnv } from './engines.ts';
import {
  type FakeLlmServer,
  type FakeLlmServerOptions,
  startFakeLlmServer,
} from './fake-llm-server.ts';
import type { TestDatabaseOptions } from './postgres-server.ts';

export interface EngineSetup {
  llm: FakeLlmServer;
  dataDir: string;
  env: Record<string, string>;
  cleanup: () => Promise<void>;
}

/**
 * What outlives one Parley process in a test: a fake model, an engine's storage and a data
 * directory, with the environment to start each process with. Restart tests start several
 * processes on it; a suite of one process uses it the same way, so every suite gets its fake
 * model, storage and data directory alike. `cleanup` removes them (after the processes are
 * stopped). `storageOptions` choose the server engine's database (`pgvector: false`: a server
 * role that may not create it).
 */
export async function engineSetup(
  engine: Engine,
  env: Record<string, string> = {},
  llmOptions: FakeLlmServerOptions = {},
  storageOptions: TestDatabaseOptions = {},
): Promise<EngineSetup> {
  const llm = await startFakeLlmServer(llmOptions);
  const storage = await engineEnv(engine, storageOptions);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-restart-'));
  return {
    llm,
    dataDir,
    env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', ...env, ...storage.env },
    async cleanup() {
      await llm.close();
      await storage.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

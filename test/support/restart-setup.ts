import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Engine, engineEnv } from './engines.ts';
import {
  type FakeLlmServer,
  type FakeLlmServerOptions,
  startFakeLlmServer,
} from './fake-llm-server.ts';

/**
 * What outlives one Parley process in a restart test: a fake model, an engine's storage and a
 * data directory, with the environment to start each process with. `cleanup` removes them
 * (after the processes are stopped).
 */
export async function restartSetup(
  engine: Engine,
  env: Record<string, string> = {},
  llmOptions: FakeLlmServerOptions = {},
): Promise<{
  llm: FakeLlmServer;
  dataDir: string;
  env: Record<string, string>;
  cleanup: () => Promise<void>;
}> {
  const llm = await startFakeLlmServer(llmOptions);
  const storage = await engineEnv(engine);
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

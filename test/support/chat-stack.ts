import { type FakeLlmServer, startFakeLlmServer } from './fake-llm-server.ts';
import { createTestDatabase, type TestDatabase } from './postgres-server.ts';
import { type RunningParley, startParley } from './start-parley.ts';

/** Parley on a fresh database of the local PostgreSQL server, answering with a fake model. */
export interface ChatStack {
  llm: FakeLlmServer;
  database: TestDatabase;
  parley: RunningParley;
  /** Posts a chat request; the answer streams in the response. */
  chat(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response>;
  stop(): Promise<void>;
}

export async function startChatStack(
  env: Record<string, string | undefined> = {},
): Promise<ChatStack> {
  const llm = await startFakeLlmServer();
  const database = await createTestDatabase();
  const parley = await startParley({
    env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', DATABASE_URL: database.url, ...env },
  });
  return {
    llm,
    database,
    parley,
    chat: (body, signal) =>
      parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      }),
    async stop() {
      await parley.stop();
      await llm.close();
      await database.drop();
    },
  };
}

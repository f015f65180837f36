import { type ChatStream, readChat } from './chat-stream.ts';
import { type Engine, engineEnv } from './engines.ts';
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

/** Several Parley processes on one fresh database, answering with one shared fake model. */
export interface ReplicaStack {
  llm: FakeLlmServer;
  database: TestDatabase;
  replicas: RunningParley[];
  /** Posts a chat request to one replica; the answer streams in the response. */
  chat(
    replica: RunningParley,
    body: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts `count` replicas at the same moment, as an orchestrator does on a fresh database. */
export async function startReplicas(
  count: number,
  env: Record<string, string | undefined> = {},
): Promise<ReplicaStack> {
  const llm = await startFakeLlmServer();
  const database = await createTestDatabase();
  const started = await Promise.allSettled(
    Array.from({ length: count }, () =>
      startParley({
        env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', DATABASE_URL: database.url, ...env },
        startTimeoutMs: 180_000,
      }),
    ),
  );
  const replicas = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await llm.close();
    await database.drop();
  };
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    llm,
    database,
    replicas,
    chat: (replica, body, signal) =>
      replica.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      }),
    stop,
  };
}

/** Parley on one engine (`engines.ts`), answering with a fake model. */
export interface EngineStack {
  llm: FakeLlmServer;
  parley: RunningParley;
  /** Posts a chat for the user and reads the whole stream. */
  chat(userId: string, message: string): Promise<ChatStream>;
  /** Posts a JSON body (feedback, profile…) as the spec's client does. */
  post(path: string, body: unknown): Promise<Response>;
  stop(): Promise<void>;
}

export async function startEngineStack(
  engine: Engine,
  env: Record<string, string | undefined> = {},
): Promise<EngineStack> {
  const llm = await startFakeLlmServer();
  const storage = await engineEnv(engine);
  const parley = await startParley({
    env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', ...storage.env, ...env },
  });
  const post = (path: string, body: unknown) =>
    parley.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  return {
    llm,
    parley,
    post,
    chat: async (userId, message) => readChat(await post('/chat', { user_id: userId, message })),
    async stop() {
      await parley.stop();
      await llm.close();
      await storage.cleanup();
    },
  };
}

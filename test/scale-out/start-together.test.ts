import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import {
  type FakeLangSmithServer,
  startFakeLangSmithServer,
} from '../support/fake-langsmith-server.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import {
  type FakeTelegramServer,
  startFakeTelegramServer,
} from '../support/fake-telegram-server.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * What `docker compose up --scale parley=5` does on a first deploy: five replicas started at
 * the same moment on one new, empty database, with every kind of background work configured
 * (Telegram with reminders, LangSmith feedback), so that every schema any part of Parley or
 * its libraries creates at start-up is created by all five at once. Then the same on a
 * database that already has every schema, as a rolling restart sees it.
 */
const REPLICAS = 5;
const ROUNDS = 10;
const TOKEN = 'start-together-admin';

describe(`${REPLICAS} replicas started at the same moment on one PostgreSQL database`, () => {
  let llm: FakeLlmServer;
  let telegram: FakeTelegramServer;
  let langsmith: FakeLangSmithServer;
  /** Every database the tests made, dropped at the end, off the rounds' time. */
  const used: TestDatabase[] = [];

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    llm.respond(reply.text('ready'));
    telegram = await startFakeTelegramServer();
    langsmith = await startFakeLangSmithServer({ apiKey: 'ls-test-key' });
  });
  afterAll(async () => {
    await llm?.close();
    await telegram?.close();
    await langsmith?.close();
    await Promise.all(used.map((database) => database.drop()));
  });

  const env = (database: TestDatabase) => ({
    API_TOKEN: TOKEN,
    DATABASE_URL: database.url,
    LLM_BASE_URL: llm.url,
    LLM_MAX_RETRIES: '0',
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_BASE: telegram.url,
    TELEGRAM_POLLING: 'true',
    TELEGRAM_POLL_TIMEOUT_SECONDS: '1',
    REMINDER_INTERVAL_SECONDS: '1',
    LANGSMITH_API_KEY: 'ls-test-key',
    LANGSMITH_ENDPOINT: langsmith.url,
  });

  /** Starts every replica at once; all must come up (a replica that exits fails the test). */
  async function startAll(database: TestDatabase): Promise<RunningParley[]> {
    const started = await Promise.allSettled(
      Array.from({ length: REPLICAS }, () =>
        startParley({ env: env(database), startTimeoutMs: 180_000 }),
      ),
    );
    const replicas = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
      throw failed.reason;
    }
    return replicas;
  }

  /** Every replica is healthy and answers a chat (all asked at once: they are separate servers). */
  async function expectServing(replicas: RunningParley[]): Promise<void> {
    await Promise.all(
      replicas.map(async (replica, index) => {
        const health = await replica.fetch('/health');
        expect(health.status).toBe(200);
        const chat = await readChat(
          await replica.fetch('/chat', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ user_id: `replica-${index}`, message: 'are you up?' }),
          }),
        );
        expect(chat.error).toBeUndefined();
        expect(chat.text).toBe('ready');
        expect(chat.ended).toBe(true);
      }),
    );
  }

  async function stopAll(replicas: RunningParley[]): Promise<void> {
    const codes = await Promise.all(replicas.map((replica) => replica.stop()));
    expect(codes).toEqual(replicas.map(() => 0));
  }

  /**
   * The last round's database, which five replicas have started on and stopped: a database
   * with every schema, where the rolling restart below starts (one start of five fewer).
   */
  let everySchema: TestDatabase | undefined;
  it.each(Array.from({ length: ROUNDS }, (_, i) => i + 1))(
    'round %i: all come up on a new database and serve a chat',
    async (round) => {
      const database = await createTestDatabase();
      used.push(database);
      const replicas = await startAll(database);
      try {
        await expectServing(replicas);
      } finally {
        await stopAll(replicas);
      }
      if (round === ROUNDS) everySchema = database;
    },
  );

  it('all come up again at once on a database that has every schema (a rolling restart)', async () => {
    let database = everySchema;
    if (!database) {
      // Run on its own (`-t`): the rounds above left no database behind.
      database = await createTestDatabase();
      used.push(database);
      await stopAll(await startAll(database));
    }
    for (let round = 0; round < 2; round++) {
      const replicas = await startAll(database);
      try {
        await expectServing(replicas);
      } finally {
        await stopAll(replicas);
      }
    }
  });
});

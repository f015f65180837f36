import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
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
import { parseMetrics, type Sample, sampled } from '../support/prometheus.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'metrics-api-token';
const SCRAPER = 'metrics-scraper-token';

async function scrape(parley: RunningParley, token = TOKEN): Promise<Sample[]> {
  const response = await parley.fetch('/metrics', { token });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await response.text());
}

async function eventually<T>(probe: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.each(ENGINES)('GET /metrics on the %s engine', (engine) => {
  let storage: EngineEnv;
  let llm: FakeLlmServer;
  let langsmith: FakeLangSmithServer;
  let telegram: FakeTelegramServer;
  let parley: RunningParley;
  const started: RunningParley[] = [];
  const start = async (env: Record<string, string>) => {
    const running = await startParley({
      env: {
        API_TOKEN: TOKEN,
        LLM_BASE_URL: llm.url,
        LLM_MAX_RETRIES: '0',
        ...storage.env,
        EMBEDDINGS_PROVIDER: 'none',
        ...env,
      },
    });
    started.push(running);
    return running;
  };

  beforeAll(async () => {
    storage = await engineEnv(engine);
    llm = await startFakeLlmServer();
    // The memory decision (a structured-output call) when no chat turn is queued.
    llm.respond((body) =>
      body.response_format !== undefined
        ? reply.text(JSON.stringify({ remember: false, memory: '' }))
        : undefined,
    );
    langsmith = await startFakeLangSmithServer({ apiKey: 'ls-metrics-key' });
    telegram = await startFakeTelegramServer();
    parley = await start({
      METRICS_ENABLED: 'true',
      CONV_RAG_ENABLED: 'true',
      LANGSMITH_API_KEY: 'ls-metrics-key',
      LANGSMITH_ENDPOINT: langsmith.url,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_BASE: telegram.url,
      REMINDER_INTERVAL_SECONDS: '1',
    });
  }, 60_000);

  afterAll(async () => {
    for (const running of started) await running.stop();
    await llm?.close();
    await langsmith?.close();
    await telegram?.close();
    await storage?.cleanup();
  });

  it('counts a chat, its fragments, tokens and errors, and the background work after it', async () => {
    const before = await scrape(parley);
    expect(sampled(before, 'parley_chats_in_flight')).toBe(0);

    const chat = (message: string) =>
      parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: 'metrics-user-7f3a' }),
      });
    llm.enqueue(
      reply.text('one two three four', {
        chunks: 4,
        delayMs: 30,
        usage: { prompt: 41, completion: 9 },
      }),
    );
    const answered = await readChat(await chat('a private question about bananas'));
    // The memory decision runs after the answer: the next queued reply must wait for it.
    await eventually(
      () => scrape(parley),
      (s) => sampled(s, 'parley_jobs_total', { job: 'memory_decision' }) === 1,
    );
    llm.enqueue(reply.error(500, { message: 'upstream broke' }));
    expect(answered.text).toBe('one two three four');
    const failed = await readChat(await chat('a second question'));
    expect(failed.error?.code).toBe('model_error');
    const feedback = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: answered.runId, score: 1 }),
    });
    expect(feedback.status).toBe(200);

    // Memory decisions and feedback forwarding run in the background after the answer.
    const after = await eventually(
      () => scrape(parley),
      (s) => sampled(s, 'parley_jobs_total', { job: 'feedback_forward', outcome: 'done' }) === 1,
    );
    const count = (name: string, labels: Record<string, string> = {}) =>
      (sampled(after, name, labels) ?? 0) - (sampled(before, name, labels) ?? 0);

    expect(
      count('parley_http_requests_total', { route: '/chat', method: 'POST', status: '200' }),
    ).toBe(2);
    expect(count('parley_http_requests_total', { route: '/feedback', status: '200' })).toBe(1);
    expect(count('parley_chats_total', { outcome: 'completed' })).toBe(1);
    expect(count('parley_chats_total', { outcome: 'failed' })).toBe(1);
    expect(sampled(after, 'parley_chats_in_flight')).toBe(0);
    expect(count('parley_chat_fragments_total')).toBe(answered.fragments.length);
    expect(count('parley_chat_first_fragment_seconds_count')).toBe(1);
    expect(count('parley_chat_errors_total', { code: 'model_error' })).toBe(1);
    // The chat's own call; the memory decision is not a chat and is not counted here.
    expect(count('parley_model_tokens_total', { kind: 'input' })).toBe(41);
    expect(count('parley_model_tokens_total', { kind: 'output' })).toBe(9);
    expect(sampled(after, 'parley_jobs_total', { job: 'memory_decision', outcome: 'done' })).toBe(
      1,
    );
    expect(
      after.filter((s) => s.name === 'parley_jobs_total' && s.labels.outcome === 'failed'),
    ).toEqual([]);
    expect(sampled(after, 'parley_db_pool_waiting')).toBe(0);
    expect(sampled(after, 'parley_db_pool_connections', { state: 'idle' })).toBeGreaterThan(0);
    expect(sampled(after, 'parley_reminder_ticks_total', { outcome: 'ok' })).toBeGreaterThan(0);
    expect(sampled(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    // No label carries a user id, a message or a run id.
    const text = await (await parley.fetch('/metrics')).text();
    for (const secret of ['metrics-user-7f3a', 'bananas', answered.runId as string]) {
      expect(text).not.toContain(secret);
    }
    llm.assertNoUnexpected();
  });

  it('counts a chat the client left as abandoned, and no longer in flight', async () => {
    const before = await scrape(parley);
    llm.enqueue(reply.text('slow words that will not all be read', { delayMs: 150 }));
    const abort = new AbortController();
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'start, then I leave', user_id: 'leaver' }),
      signal: abort.signal,
    });
    const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    await reader.read();
    expect(sampled(await scrape(parley), 'parley_chats_in_flight')).toBe(1);
    abort.abort();
    await llm.waitForClientClose();
    const after = await eventually(
      () => scrape(parley),
      (s) => sampled(s, 'parley_chats_in_flight') === 0,
    );
    expect(sampled(after, 'parley_chats_in_flight')).toBe(0);
    const abandoned = (s: typeof before) =>
      sampled(s, 'parley_chats_total', { outcome: 'abandoned' }) ?? 0;
    expect(abandoned(after) - abandoned(before)).toBe(1);
  });

  it('labels requests with the route template, never the path a client sent', async () => {
    expect((await parley.fetch('/users/carol-5d1e/profile')).status).toBe(200);
    expect((await parley.fetch('/no/such/thing-9c2b')).status).toBe(404);
    const text = await (await parley.fetch('/metrics')).text();
    expect(text).toContain('route="/users/:user_id/profile",method="GET",status="200"');
    expect(text).toContain('route="unmatched",method="GET",status="404"');
    expect(text).not.toContain('carol-5d1e');
    expect(text).not.toContain('thing-9c2b');
  });

  it('needs the API token (401 without it)', async () => {
    const response = await parley.fetch('/metrics', { token: null });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ detail: 'Unauthorized' });
    expect((await parley.fetch('/metrics', { token: 'wrong' })).status).toBe(401);
  });

  it('takes METRICS_TOKEN instead of the API token when it is set', async () => {
    const scraped = await start({ METRICS_ENABLED: 'true', METRICS_TOKEN: SCRAPER });
    expect((await scraped.fetch('/metrics', { token: null })).status).toBe(401);
    expect((await scraped.fetch('/metrics', { token: TOKEN })).status).toBe(401);
    expect((await scraped.fetch('/metrics', { token: SCRAPER })).status).toBe(200);
    // The scraper's token opens /metrics only.
    expect((await scraped.fetch('/documents', { token: SCRAPER })).status).toBe(401);
    expect((await scraped.fetch('/documents', { token: TOKEN })).status).toBe(200);
  });

  it('is 404 unless METRICS_ENABLED', async () => {
    const plain = await start({});
    const response = await plain.fetch('/metrics');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: 'Not Found: GET /metrics' });
  });
});

// PARLEY_WORKERS needs DATABASE_URL: the workers share a PostgreSQL server.
describe('GET /metrics with PARLEY_WORKERS on the server engine', () => {
  let database: TestDatabase;
  let llm: FakeLlmServer;
  let cluster: RunningParley | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeLlmServer();
  });
  afterAll(async () => {
    await cluster?.stop();
    await llm?.close();
    await database?.drop();
  });

  it('sums every worker with PARLEY_WORKERS=2, whichever worker answers the scrape', async () => {
    cluster = await startParley({
      env: {
        API_TOKEN: TOKEN,
        LLM_BASE_URL: llm.url,
        LLM_MAX_RETRIES: '0',
        DATABASE_URL: database.url,
        EMBEDDINGS_PROVIDER: 'none',
        METRICS_ENABLED: 'true',
        PARLEY_WORKERS: '2',
      },
    });
    const running = cluster;
    const first = running.logs.find((line) => line.msg === 'Parley is listening')?.pid;
    await running.waitForLog((l) => l.msg === 'Parley is listening' && l.pid !== first, 60_000);
    for (let i = 0; i < 10; i++) {
      await running.fetch('/health', { headers: { 'x-request-id': `sum-${i}` } });
    }
    await running.settled();
    const answeredBy = new Set(
      running.logs
        .filter((l) => String(l.reqId).startsWith('sum-') && l.msg === 'request completed')
        .map((l) => l.pid),
    );
    expect(answeredBy.size).toBe(2);
    for (let i = 0; i < 4; i++) {
      const samples = await scrape(running);
      expect(sampled(samples, 'parley_http_requests_total', { route: '/health' })).toBe(10);
    }
  }, 90_000);
});

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzleNodePostgres } from 'drizzle-orm/node-postgres';
import { migrate as migrateNodePostgres } from 'drizzle-orm/node-postgres/migrator';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteOptions } from '../../src/storage/pglite-options.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES, type Engine } from '../support/engines.ts';
import {
  type ChatCompletionRequest,
  type FakeLlmServer,
  reply,
  startFakeLlmServer,
} from '../support/fake-llm-server.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/** The migrations of main before conversations (0000 … 0011), in a folder of their own. */
function migrationsBeforeConversations(): string {
  const folder = mkdtempSync(join(tmpdir(), 'parley-migrations-'));
  cpSync('src/storage/migrations', folder, { recursive: true });
  const journalFile = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as {
    entries: { idx: number; tag: string }[];
  };
  for (const entry of journal.entries.filter((e) => e.idx >= 12)) {
    rmSync(join(folder, `${entry.tag}.sql`));
  }
  journal.entries = journal.entries.filter((e) => e.idx < 12);
  writeFileSync(journalFile, JSON.stringify(journal));
  return folder;
}

const RUNS = {
  m1: '11111111-1111-4111-8111-000000000001',
  m2: '11111111-1111-4111-8111-000000000002',
  m3: '11111111-1111-4111-8111-000000000003',
  n1: '11111111-1111-4111-8111-000000000004',
};

/** A history as main stored it: one row per model message, in id order, per user. */
const HISTORY: [string, string, string, unknown, boolean][] = [
  ['mia', RUNS.m1, 'user', { role: 'user', content: '임대차 계약서를   어디에 두었지?' }, false],
  ['mia', RUNS.m1, 'assistant', { role: 'assistant', content: '서랍에 두셨어요.' }, false],
  ['noa', RUNS.n1, 'user', { role: 'user', content: 'Remind me about the lease' }, false],
  ['mia', RUNS.m2, 'user', { role: 'user', content: 'And the deposit?' }, false],
  [
    'mia',
    RUNS.m2,
    'assistant',
    { role: 'assistant', content: [{ type: 'text', text: 'It comes back in March.' }] },
    false,
  ],
  ['noa', RUNS.n1, 'assistant', { role: 'assistant', content: 'Sure, I will' }, true],
  ['mia', RUNS.m3, 'user', { role: 'user', content: 'Thanks' }, false],
  ['mia', RUNS.m3, 'assistant', { role: 'assistant', content: 'You are welcome.' }, false],
];

const INSERTS = [
  ...Object.entries(RUNS).map(([name, id]) => ({
    text: `INSERT INTO chat_runs (id, user_id, status, model) VALUES ($1, $2, 'completed', 'old')`,
    values: [id, name.startsWith('m') ? 'mia' : 'noa'],
  })),
  ...HISTORY.map(([user, run, role, content, interrupted]) => ({
    text: `INSERT INTO messages (user_id, run_id, role, content, interrupted) VALUES ($1, $2, $3, $4, $5)`,
    values: [user, run, role, JSON.stringify(content), interrupted],
  })),
  {
    text: `INSERT INTO feedback (id, run_id, key, score) VALUES ($1, $2, 'user_score', 1)`,
    values: ['22222222-2222-4222-8222-000000000001', RUNS.m2],
  },
];

/** A database as today's main leaves it, with histories in it; the env that opens it. */
async function databaseOfMain(
  engine: Engine,
  dataDir: string,
): Promise<{ env: Record<string, string>; server?: TestDatabase }> {
  const migrationsFolder = migrationsBeforeConversations();
  try {
    if (engine === 'embedded') {
      const db = await PGlite.create(join(dataDir, 'pg'), pgliteOptions('16MB'));
      await migratePglite(drizzlePglite({ client: db }), { migrationsFolder });
      for (const insert of INSERTS) await db.query(insert.text, insert.values);
      await db.close();
      return { env: {} };
    }
    const server = await createTestDatabase();
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      await migrateNodePostgres(drizzleNodePostgres({ client }), { migrationsFolder });
      for (const insert of INSERTS) await client.query(insert.text, insert.values);
    } finally {
      await client.end();
    }
    return { env: { DATABASE_URL: server.url }, server };
  } finally {
    rmSync(migrationsFolder, { recursive: true, force: true });
  }
}

describe.each(ENGINES)('upgrading a database of main on the %s engine', (engine) => {
  let parley: RunningParley;
  let llm: FakeLlmServer;
  let server: TestDatabase | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-upgrade-'));

  beforeAll(async () => {
    const made = await databaseOfMain(engine, dataDir);
    server = made.server;
    llm = await startFakeLlmServer();
    llm.respond(() => reply.text('noted'));
    parley = await startParley({
      dataDir,
      env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', ...made.env },
      startTimeoutMs: 120_000,
    });
  }, 180_000);
  afterAll(async () => {
    await parley?.stop();
    await llm?.close();
    await server?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  interface Listed {
    conversations: Array<{ id: string } & Record<string, unknown>>;
  }
  interface Turns {
    turns: Array<Record<string, unknown>>;
  }
  interface Hits {
    results: Array<{ run_id: string }>;
  }
  const get = async <T>(path: string) => (await (await parley.fetch(path)).json()) as T;

  it("turns each user's history into one current conversation, every turn in it", async () => {
    const { conversations } = await get<Listed>('/users/mia/conversations');
    expect(conversations).toHaveLength(1);
    expect(conversations[0]).toMatchObject({
      title: '임대차 계약서를 어디에 두었지?',
      title_source: 'question',
      current: true,
      pinned: false,
      leaf_run_id: RUNS.m3,
      preview: 'You are welcome.',
    });
    const read = await get<Turns>(`/users/mia/conversations/${conversations[0]?.id}`);
    expect(
      read.turns.map((t) => [t.run_id, t.parent_run_id, t.question, t.answer, t.version]),
    ).toEqual([
      [
        RUNS.m3,
        RUNS.m2,
        'Thanks',
        'You are welcome.',
        { index: 1, count: 1, previous: null, next: null },
      ],
      [RUNS.m2, RUNS.m1, 'And the deposit?', 'It comes back in March.', expect.any(Object)],
      [RUNS.m1, null, '임대차 계약서를   어디에 두었지?', '서랍에 두셨어요.', expect.any(Object)],
    ]);
    expect(read.turns[1]?.feedback).toEqual({ score: 1, comment: null });

    const noa = await get<Listed>('/users/noa/conversations');
    expect(noa.conversations).toHaveLength(1);
    const history = await get<Turns>('/users/noa/history');
    expect(history.turns).toEqual([
      expect.objectContaining({
        run_id: RUNS.n1,
        question: 'Remind me about the lease',
        answer: 'Sure, I will',
        interrupted: true,
      }),
    ]);
  });

  it('finds the old words, and a chat continues the old history', async () => {
    const hits = await get<Hits>(`/users/mia/conversations/search?q=${encodeURI('계약서')}`);
    expect(hits.results.map((r) => r.run_id)).toEqual([RUNS.m1]);
    const lease = await get<Hits>('/users/noa/conversations/search?q=lease');
    expect(lease.results.map((r) => r.run_id)).toEqual([RUNS.n1]);

    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'mia', message: 'One more thing' }),
    });
    const stream = await readChat(response);
    expect(stream.text).toBe('noted');
    const body = llm.chats.at(-1)?.body as ChatCompletionRequest;
    expect(
      body.messages.filter((m) => m.role !== 'system').map((m) => JSON.stringify(m.content)),
    ).toEqual([
      '"임대차 계약서를   어디에 두었지?"',
      '"서랍에 두셨어요."',
      '"And the deposit?"',
      expect.stringContaining('It comes back in March.'),
      '"Thanks"',
      '"You are welcome."',
      '"One more thing"',
    ]);
    const history = await get<Turns>('/users/mia/history?limit=1');
    expect(history.turns[0]).toMatchObject({ run_id: stream.runId, question: 'One more thing' });
  });
});

/**
 * Conversations at scale (issue 31, item 5): one user with 2,000 conversations and 100,000
 * turns (one conversation of 1,000 turns, the rest ~50 each), plus another user with 20,000
 * turns the searches must skip. Measured over HTTP against the real server, p50/p99 of:
 *
 * - listing the conversations (first page of 20, and a page further down by cursor): ≤ 20 ms
 * - searching them (English words of every frequency, and Korean words): ≤ 50 ms
 * - opening the 1,000-turn conversation (its first page of 20 turns): ≤ 20 ms
 *
 *   node bench/conversations.ts [embedded|server] [conversations=2000] [turns=100000] [requests=300]
 *
 * The turns are stored straight into the tables (as migration 0012 leaves them, the search
 * column computed by the database with that migration's function), not through the model:
 * the benchmark measures reading.
 * Questions and answers are SciFact sentences; one turn in ten is Korean, from the synthetic
 * encyclopedia set.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { seededRandom } from '../test/support/seeded-random.ts';
import { machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { line, summarize } from './support/stats.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';
const conversationCount = Number(process.argv[3] ?? 2_000);
const turnCount = Number(process.argv[4] ?? 100_000);
const requests = Number(process.argv[5] ?? 300);
const LONG_TURNS = 1_000;
const OTHER_TURNS = 20_000;
const TARGETS = { list: 20, search: 50, open: 20 };

const DATA = new URL('../../shared/data/scifact/', import.meta.url);
const sentences = readFileSync(new URL('corpus.jsonl', DATA), 'utf8')
  .split('\n')
  .filter(Boolean)
  .flatMap((line) => (JSON.parse(line) as { text: string }).text.split(/(?<=\.)\s+/))
  .filter((sentence) => sentence.length > 20);
const korean = readFileSync(new URL('./korean-set/encyclopedia.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter(Boolean)
  .flatMap((line) => {
    const item = JSON.parse(line) as Record<string, unknown>;
    return String(item.text ?? item.paragraph ?? '').split(/(?<=[.다])\s+/);
  })
  .filter((sentence) => sentence.length > 10);

const random = seededRandom(31);
const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
const text = (count: number, pool: readonly string[]) =>
  Array.from({ length: count }, () => pick(pool)).join(' ');

interface Row {
  user_id: string;
  conversation_id: string;
  run_id: string;
  parent_run_id: string | null;
  role: 'user' | 'assistant';
  content: unknown;
}

/** Stores `turns` linear turns into a new conversation, in batches of one statement each. */
async function storeConversation(
  query: (text: string, values: unknown[]) => Promise<unknown>,
  userId: string,
  turns: number,
  when: Date,
): Promise<void> {
  const id = randomUUID();
  const title = text(1, sentences).slice(0, 60);
  await query(
    `INSERT INTO conversations (id, user_id, title, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $4)`,
    [id, userId, title, when.toISOString()],
  );
  let parent: string | null = null;
  let batch: Row[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    await query(
      `INSERT INTO messages (user_id, conversation_id, run_id, parent_run_id, role, content, search)
       SELECT user_id, conversation_id, run_id, parent_run_id, role, content,
              parley_search_vector(role, content)
         FROM json_to_recordset($1::json) AS m(user_id text, conversation_id uuid, run_id uuid,
              parent_run_id uuid, role text, content jsonb)`,
      [JSON.stringify(batch)],
    );
    batch = [];
  };
  for (let turn = 0; turn < turns; turn++) {
    const runId = randomUUID();
    const pool = random() < 0.1 ? korean : sentences;
    batch.push(
      {
        user_id: userId,
        conversation_id: id,
        run_id: runId,
        parent_run_id: parent,
        role: 'user',
        content: { role: 'user', content: text(1, pool) },
      },
      {
        user_id: userId,
        conversation_id: id,
        run_id: runId,
        parent_run_id: parent,
        role: 'assistant',
        content: { role: 'assistant', content: text(3, pool) },
      },
    );
    parent = runId;
    if (batch.length >= 1_000) await flush();
  }
  await flush();
  await query('UPDATE conversations SET leaf_run_id = $2 WHERE id = $1', [id, parent]);
}

const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-conversations-'));
const server = engine === 'server' ? await createTestDatabase() : undefined;
try {
  const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: server?.url });
  const database = await openDatabase(config, pino({ level: 'warn' }));
  const query = (sql: string, values: unknown[]) => database.db.$client.query(sql, values);
  const started = performance.now();
  const start = Date.now() - 30 * 86_400_000;
  let longId: string | undefined;
  const rest = turnCount - LONG_TURNS;
  for (let i = 0; i < conversationCount; i++) {
    const turns =
      i === 0
        ? LONG_TURNS
        : Math.floor((rest * i) / (conversationCount - 1)) -
          Math.floor((rest * (i - 1)) / (conversationCount - 1));
    await storeConversation(query, 'bench', turns, new Date(start + i * 60_000));
    // The other user talks meanwhile: their rows lie between the bench user's, as in life.
    if (i % Math.ceil(conversationCount / (OTHER_TURNS / 100)) === 0) {
      await storeConversation(query, 'other', 100, new Date(start + i * 60_000));
    }
    if (i === 0) {
      const { rows } = await database.db.$client.query<{ id: string }>(
        `SELECT id FROM conversations WHERE user_id = 'bench'`,
      );
      longId = rows[0]?.id;
    }
    if (i % 200 === 0) {
      process.stderr.write(
        `${i} conversations, ${Math.round((performance.now() - started) / 1000)} s\n`,
      );
    }
  }
  await query(
    `INSERT INTO current_conversations (user_id, conversation_id)
     SELECT 'bench', id FROM conversations WHERE user_id = 'bench' LIMIT 1`,
    [],
  );
  // Pinned ones come first: a few, as people pin.
  await query(
    `UPDATE conversations SET pinned = true
      WHERE id IN (SELECT id FROM conversations WHERE user_id = 'bench' ORDER BY random() LIMIT 5)`,
    [],
  );
  await query('VACUUM ANALYZE', []);
  const storeSeconds = (performance.now() - started) / 1000;
  await database.close();

  const parley = await startServer({
    dataDir,
    env: { DATABASE_URL: server?.url, CONVERSATION_TITLES: 'question' },
  });
  const time = async (path: string) => {
    const begin = performance.now();
    const response = await fetch(`${parley.url}${path}`);
    const body = (await response.json()) as Record<string, unknown>;
    const elapsed = performance.now() - begin;
    if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
    return { elapsed, body };
  };
  const measure = async (paths: () => string) => {
    for (let i = 0; i < 20; i++) await time(paths()); // warm-up: caches and plans
    const times: number[] = [];
    const slowest: [number, string][] = [];
    let results = 0;
    for (let i = 0; i < requests; i++) {
      const path = paths();
      const { elapsed, body } = await time(path);
      times.push(elapsed);
      slowest.push([elapsed, path]);
      results += ((body.conversations ?? body.results ?? body.turns) as unknown[]).length;
    }
    // The slowest again: a request slow every time is the query's, once only the machine's.
    slowest.sort((a, b) => b[0] - a[0]);
    for (const [elapsed, path] of slowest.slice(0, 3)) {
      const again = [await time(path), await time(path)].map((r) => r.elapsed.toFixed(1));
      process.stderr.write(
        `slow ${elapsed.toFixed(1)} ms, again ${again.join(', ')}: ${decodeURIComponent(path)}\n`,
      );
    }
    return { summary: summarize(times), results: results / requests };
  };

  const first = await time('/users/bench/conversations?limit=20');
  // A cursor some 500 conversations down, as a long scroll reaches.
  let cursor = String((await time('/users/bench/conversations?limit=100')).body.next_cursor);
  for (let page = 1; page < 5; page++) {
    const next = (await time(`/users/bench/conversations?limit=100&cursor=${cursor}`)).body;
    if (typeof next.next_cursor !== 'string') break;
    cursor = next.next_cursor;
  }
  const englishWords = sentences
    .flatMap((sentence) => sentence.toLowerCase().match(/[a-z]{4,}/g) ?? [])
    .filter((_, i) => i % 7 === 0);
  const koreanWords = korean.flatMap((sentence) => sentence.match(/[가-힣]{2,}/g) ?? []);
  const rows = {
    list: await measure(() => '/users/bench/conversations?limit=20'),
    listDeep: await measure(() => `/users/bench/conversations?limit=20&cursor=${cursor}`),
    searchEnglish: await measure(
      () => `/users/bench/conversations/search?q=${encodeURIComponent(pick(englishWords))}`,
    ),
    searchTwo: await measure(
      () =>
        `/users/bench/conversations/search?q=${encodeURIComponent(`${pick(englishWords)} ${pick(englishWords)}`)}`,
    ),
    searchKorean: await measure(
      () => `/users/bench/conversations/search?q=${encodeURIComponent(pick(koreanWords))}`,
    ),
    searchCommon: await measure(() => '/users/bench/conversations/search?q=the'),
    open: await measure(() => `/users/bench/conversations/${longId}?limit=20`),
  };
  await parley.stop();

  const verdict = (p99: number, target: number) => (p99 <= target ? 'PASS' : 'FAIL');
  const out = [
    `## Conversations at scale (${engine} engine)`,
    '',
    machineReport(),
    '',
    `${conversationCount} conversations and ${turnCount} turns of one user (one of ${LONG_TURNS} turns), ` +
      `${OTHER_TURNS} turns of another; stored in ${storeSeconds.toFixed(0)} s. ` +
      `${requests} requests each, one at a time, over HTTP (first list page had ${(first.body.conversations as unknown[]).length}).`,
    '',
    '| request | latency | results a request | target (p99) |',
    '| --- | --- | --- | --- |',
    `| list, first page of 20 | ${line(rows.list.summary)} | ${rows.list.results} | ${TARGETS.list} ms ${verdict(rows.list.summary.p99, TARGETS.list)} |`,
    `| list, a page after 500 | ${line(rows.listDeep.summary)} | ${rows.listDeep.results} | ${TARGETS.list} ms ${verdict(rows.listDeep.summary.p99, TARGETS.list)} |`,
    `| search, one English word | ${line(rows.searchEnglish.summary)} | ${rows.searchEnglish.results.toFixed(1)} | ${TARGETS.search} ms ${verdict(rows.searchEnglish.summary.p99, TARGETS.search)} |`,
    `| search, two English words | ${line(rows.searchTwo.summary)} | ${rows.searchTwo.results.toFixed(1)} | ${TARGETS.search} ms ${verdict(rows.searchTwo.summary.p99, TARGETS.search)} |`,
    `| search, one Korean word | ${line(rows.searchKorean.summary)} | ${rows.searchKorean.results.toFixed(1)} | ${TARGETS.search} ms ${verdict(rows.searchKorean.summary.p99, TARGETS.search)} |`,
    `| search, "the" (in most turns) | ${line(rows.searchCommon.summary)} | ${rows.searchCommon.results.toFixed(1)} | ${TARGETS.search} ms ${verdict(rows.searchCommon.summary.p99, TARGETS.search)} |`,
    `| open the ${LONG_TURNS}-turn conversation, first 20 turns | ${line(rows.open.summary)} | ${rows.open.results} | ${TARGETS.open} ms ${verdict(rows.open.summary.p99, TARGETS.open)} |`,
  ];
  console.log(out.join('\n'));
} finally {
  // BENCH_KEEP=1 keeps the server's database, to read its plans with psql afterwards.
  if (process.env.BENCH_KEEP) console.error(`kept: ${server?.url}`);
  else await server?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}

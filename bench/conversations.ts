/**
 * Conversations at a daily user's scale (issue 31): one user with 2,000 conversations and about
 * 100,000 turns, one conversation of them 1,000 turns long. Measured through HTTP as the web
 * client asks: the list's first page, a search across every conversation (English and Korean
 * words, common and rare), and the first page of the 1,000-turn conversation.
 *
 *   node bench/conversations.ts [embedded|server] [conversations=2000] [turns=50] [requests=300]
 *
 * The turns are stored straight into the tables (200,000 messages through POST /chat would take
 * hours), shaped as Parley stores them: a user message and an answer per turn, each turn
 * following the one before (`parent_run_id`), all on the active path, with their runs. The
 * texts are SciFact sentences and sentences of the Korean encyclopedia set, so the words have
 * real frequencies. Targets: list p99 ≤ 20 ms, search p99 ≤ 50 ms, open p99 ≤ 20 ms.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { type Summary, seededRandom, summarize } from './support/stats.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';
const conversationCount = Number(process.argv[3] ?? 2_000);
const turnsEach = Number(process.argv[4] ?? 50);
const requests = Number(process.argv[5] ?? 300);
const LONG_TURNS = 1_000;
const USER = 'bench-user';
const TOKEN = 'bench-admin-token';
const TARGETS = { list: 20, search: 50, open: 20 };

const english = readFileSync(
  new URL('../../shared/data/scifact/corpus.jsonl', import.meta.url),
  'utf8',
)
  .split('\n')
  .filter(Boolean)
  .flatMap((line) => (JSON.parse(line) as { text: string }).text.split(/(?<=\.)\s+/))
  .filter((sentence) => sentence.length > 20);
const korean = readFileSync(new URL('./korean-set/encyclopedia.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter(Boolean)
  .flatMap((line) => (JSON.parse(line) as { text: string }).text.split(/(?<=다\.)\s+/))
  .filter((sentence) => sentence.length > 10);

/** Deterministic, so both engines store the same texts. */
const random = seededRandom(7);
const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
/** One in five conversations is in Korean. */
const sentences = (koreanText: boolean, n: number) =>
  Array.from({ length: n }, () => pick(koreanText ? korean : english)).join(' ');

const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-conv-'));
const server = engine === 'server' ? await createTestDatabase() : undefined;
const llm = await startFakeLlm({ tokens: 1, delayMs: 0 });
try {
  const seedStarted = performance.now();
  const long = await store();
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  process.stderr.write(`stored in ${seedSeconds.toFixed(0)} s\n`);

  const parley = await startServer({
    dataDir,
    env: {
      API_TOKEN: TOKEN,
      LLM_BASE_URL: llm.url,
      ...(server ? { DATABASE_URL: server.url } : {}),
    },
  });
  try {
    const get = async (path: string) => {
      const response = await fetch(`${parley.url}${path}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
      return response.json() as Promise<Record<string, unknown>>;
    };
    const base = `/users/${USER}/conversations`;
    const searchWords = [
      'protein',
      'cells',
      'mortality',
      'receptor',
      'vaccine',
      'the', // English, common to rare
      '인구',
      '조선',
      '산업',
      '해발',
      '시대에는',
      '태풍', // Korean, words and particles
    ];
    const timed = async (path: (i: number) => string): Promise<Summary> => {
      for (let i = 0; i < 20; i++) await get(path(i)); // warm-up
      const times: number[] = [];
      for (let i = 0; i < requests; i++) {
        const started = performance.now();
        await get(path(i));
        times.push(performance.now() - started);
      }
      return summarize(times);
    };
    const firstList = await get(base);
    const searched = await get(`${base}/search?q=${encodeURIComponent('조선')}`);
    const opened = await get(`${base}/${long}`);
    const results = {
      list: await timed(() => base),
      search: await timed(
        (i) =>
          `${base}/search?q=${encodeURIComponent(searchWords[i % searchWords.length] as string)}`,
      ),
      open: await timed(() => `${base}/${long}`),
    };
    const row = (name: keyof typeof results, what: string) => {
      const s = results[name];
      return `| ${what} | ${s.p50.toFixed(2)} | ${s.p90.toFixed(2)} | ${s.p99.toFixed(2)} | ${s.max.toFixed(2)} | ${TARGETS[name]} ms | ${s.p99 <= TARGETS[name] ? 'PASS' : 'FAIL'} |`;
    };
    const count = (body: Record<string, unknown>, key: string) =>
      Array.isArray(body[key]) ? (body[key] as unknown[]).length : 0;
    console.log(
      [
        `## Conversations: ${conversationCount.toLocaleString('en')} conversations, ${((conversationCount - 1) * turnsEach + LONG_TURNS).toLocaleString('en')} turns, ${engine} engine`,
        '',
        '```',
        machineReport(),
        `command: node bench/conversations.ts ${process.argv.slice(2).join(' ')}`,
        '```',
        '',
        `Stored in ${seedSeconds.toFixed(0)} s (straight into the tables). ${requests} requests of each kind, one at a time over HTTP with the admin token, after 20 warm-ups. First answers: the list's first page had ${count(firstList, 'conversations')} conversations, a search for 조선 ${count(searched, 'results')} hits, the long conversation's first page ${count(opened, 'turns')} turns.`,
        '',
        '| request | p50 ms | p90 ms | p99 ms | max ms | target p99 | |',
        '| --- | --- | --- | --- | --- | --- | --- |',
        row('list', `\`GET ${base}\` (first page)`),
        row('search', `\`GET ${base}/search?q=…\` (${searchWords.length} words, in turn)`),
        row('open', `\`GET ${base}/{id}\` (first page of ${LONG_TURNS} turns)`),
      ].join('\n'),
    );
  } finally {
    await parley.stop();
  }
} finally {
  await llm.close();
  await server?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}

/** Stores every conversation of the user; returns the id of the long one. */
async function store(): Promise<string> {
  const database = await openDatabase(
    { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: server?.url },
    pino({ level: 'warn' }),
  );
  const client = database.db.$client;
  try {
    const start = Date.now() - conversationCount * 3_600_000;
    let long = '';
    for (let c = 0; c < conversationCount; c++) {
      const id = randomUUID();
      const isLong = c === Math.floor(conversationCount / 2);
      if (isLong) long = id;
      const turns = isLong ? LONG_TURNS : turnsEach;
      const koreanText = c % 5 === 0;
      const runs: string[] = [];
      const rows = {
        runs: [] as string[],
        parents: [] as (string | null)[],
        roles: [] as string[],
        contents: [] as string[],
        times: [] as string[],
      };
      const began = start + c * 3_600_000;
      for (let t = 0; t < turns; t++) {
        const run = randomUUID();
        const at = new Date(began + t * 1_000).toISOString();
        const question = sentences(koreanText, 1);
        const answer = sentences(koreanText, 3);
        for (const [role, content] of [
          ['user', { role: 'user', content: question }],
          ['assistant', { role: 'assistant', content: [{ type: 'text', text: answer }] }],
        ] as const) {
          rows.runs.push(run);
          rows.parents.push(runs.at(-1) ?? null);
          rows.roles.push(role);
          rows.contents.push(JSON.stringify(content));
          rows.times.push(at);
        }
        runs.push(run);
      }
      const updated = rows.times.at(-1) as string;
      await client.query(
        `INSERT INTO conversations (id, user_id, title, created_at, updated_at, leaf_run_id)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [id, USER, `Conversation ${c}`, new Date(began).toISOString(), updated, runs.at(-1)],
      );
      await client.query(
        `INSERT INTO chat_runs (id, user_id, status, started_at, finished_at, conversation_id)
         SELECT run, $2, 'completed', at, at, $1 FROM unnest($3::uuid[], $4::timestamptz[]) AS r(run, at)`,
        [id, USER, runs, rows.times.filter((_, i) => i % 2 === 0)],
      );
      await client.query(
        `INSERT INTO messages (user_id, run_id, role, content, created_at, conversation_id, parent_run_id)
         SELECT $2, run, role, content, at, $1, parent
           FROM unnest($3::uuid[], $4::text[], $5::jsonb[], $6::timestamptz[], $7::uuid[])
             AS m(run, role, content, at, parent)`,
        [id, USER, rows.runs, rows.roles, rows.contents, rows.times, rows.parents],
      );
      if (c % 200 === 0) process.stderr.write(`${c} conversations stored\n`);
    }
    await client.query(
      'INSERT INTO current_conversations (user_id, conversation_id) VALUES ($1, $2)',
      [USER, long],
    );
    await client.query('VACUUM ANALYZE');
    return long;
  } finally {
    await database.close();
  }
}

/**
 * The statements one chat sends to the database, for two checkouts: each runs on PostgreSQL
 * with `log_statement = all` set on a bench database of its own, chats from users who chatted
 * before (their conversation exists), and the server's log lines for that database are
 * counted by statement. The same code sends the same statements to the embedded engine, where
 * every one of them is the server process's CPU.
 *
 *   node bench/chat-statements.ts <baselineDir> [chats=10] [log=/var/log/postgresql/postgresql-15-main.log]
 *
 * BENCH_ENV (JSON) adds settings to both, e.g. '{"CONVERSATION_TITLES":"question"}'.
 * BENCH_TIMES=1 logs every statement's duration instead (log_min_duration_statement = 0) and
 * prints the milliseconds a chat spends in each (parse, bind and execute apart), slowest first:
 * where the database's share of a chat's CPU goes. BENCH_EXPLAIN=1 with it also writes this
 * checkout's plans, with their timings, to /tmp/chat-statements-plans.log (auto_explain).
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { sleep } from './support/stats.ts';

const [baselineDir] = process.argv.slice(2);
const CHATS = Number(process.argv[3] ?? 10);
const LOG = process.argv[4] ?? '/var/log/postgresql/postgresql-15-main.log';
const TIMES = process.env.BENCH_TIMES === '1';
const EXPLAIN = TIMES && process.env.BENCH_EXPLAIN === '1';
if (!baselineDir) throw new Error('usage: chat-statements.ts <baselineDir> [chats] [log]');

const fake = await startFakeLlm({ tokens: 1, delayMs: 0 });
console.log(`# Statements a chat sends, ${baselineDir} and this checkout\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(
  `${TIMES ? 'log_min_duration_statement=0' : 'log_statement=all'} on a bench database of its own, 3 warm-up chats, then ${CHATS} chats of 1 token from users who chatted before (development mode), the log lines of that database read 1.5 s after the last.\n`,
);
for (const { name, root } of [
  { name: 'baseline', root: pathToFileURL(`${baselineDir.replace(/\/$/, '')}/`) },
  { name: 'this checkout', root: undefined },
]) {
  const database = await createTestDatabase();
  const dbName = new URL(database.url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  if (TIMES) {
    await admin.query(`ALTER DATABASE ${dbName} SET log_min_duration_statement = 0`);
  } else {
    await admin.query(`ALTER DATABASE ${dbName} SET log_statement = 'all'`);
  }
  if (EXPLAIN && name !== 'baseline') {
    await admin.query(`ALTER DATABASE ${dbName} SET session_preload_libraries = 'auto_explain'`);
    await admin.query(`ALTER DATABASE ${dbName} SET auto_explain.log_min_duration = 0`);
    await admin.query(`ALTER DATABASE ${dbName} SET auto_explain.log_analyze = on`);
    await admin.query(`ALTER DATABASE ${dbName} SET auto_explain.log_nested_statements = on`);
  }
  await admin.end();
  const server = await startServer({
    root,
    env: {
      LLM_BASE_URL: fake.url,
      DATABASE_URL: database.url,
      ...(JSON.parse(process.env.BENCH_ENV ?? '{}') as Record<string, string>),
    },
  });
  const users = ['st-1', 'st-2', 'st-3'];
  for (const user of users)
    if (!succeeded(await chat(server.url, user))) throw new Error('warm-up');
  await sleep(1_500);
  const from = statSync(LOG).size;
  for (let i = 0; i < CHATS; i++) {
    if (!succeeded(await chat(server.url, users[i % users.length] as string)))
      throw new Error('chat');
  }
  await sleep(1_500);
  const text = readFileSync(LOG).subarray(from).toString('utf8');
  if (EXPLAIN && name !== 'baseline') writeFileSync('/tmp/chat-statements-plans.log', text);
  if (TIMES) printTimes(name, text, dbName);
  else printCounts(name, text, dbName);
  await server.stop();
  await database.drop();
}
await fake.close();

/** The statements of the chats, by text, and how many of each. */
function printCounts(name: string, text: string, dbName: string): void {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = new RegExp(`@${dbName} LOG:  (?:statement|execute [^:]*): ?(.*)$`).exec(line);
    if (!match) continue;
    const key = line.replace(/^.*? LOG: {2}/, '').slice(0, 110);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${name}: ${total} statements for ${CHATS} chats (${(total / CHATS).toFixed(1)} a chat)`,
  );
  console.log('```');
  for (const [key, count] of [...counts].sort((a, b) => b[1] - a[1])) {
    console.log(`${String(count).padStart(4)}  ${key}`);
  }
  console.log('```\n');
}

/** The milliseconds a chat spends in each statement's parse, bind and execute. */
function printTimes(name: string, text: string, dbName: string): void {
  const times = new Map<string, { count: number; ms: number }>();
  const line = new RegExp(
    `@${dbName} LOG:  duration: ([0-9.]+) ms  ((?:statement|execute|bind|parse)[^:]*: ?.*)$`,
  );
  for (const row of text.split('\n')) {
    const match = line.exec(row);
    if (!match) continue;
    const key = (match[2] as string).slice(0, 100);
    const entry = times.get(key) ?? { count: 0, ms: 0 };
    entry.count += 1;
    entry.ms += Number(match[1]);
    times.set(key, entry);
  }
  const total = [...times.values()].reduce((sum, entry) => sum + entry.ms, 0);
  console.log(`${name}: ${(total / CHATS).toFixed(3)} ms of statements a chat`);
  console.log('```');
  for (const [key, { count, ms }] of [...times].sort((a, b) => b[1].ms - a[1].ms).slice(0, 15)) {
    console.log(`${String(count).padStart(4)} ${(ms / CHATS).toFixed(3).padStart(7)} ms  ${key}`);
  }
  console.log('```\n');
}

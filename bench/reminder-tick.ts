/**
 * One scheduler tick with many reminders: 100,000 stored, 1,000 due now (D-7 at 09:00 UTC).
 * The tick runs in this process against the real repository and a real Bot API client,
 * sending to the fake Telegram server of the tests (loopback, answers at once), so the
 * figures are Parley's share: the query, the claims, the sends, the records.
 *
 *   node bench/reminder-tick.ts [engine=embedded|server] [reminders=100000] [due=1000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createJobEngine } from '../src/background/job-engine.ts';
import { JobRunner } from '../src/background/job-runner.ts';
import { parseConfig } from '../src/config.ts';
import { NOTICE_POLICY, noticeJob } from '../src/reminders/notice-job.ts';
import { openDatabase } from '../src/storage/database.ts';
import { NoticeRepository } from '../src/storage/notice-repository.ts';
import { TelegramApi } from '../src/telegram/telegram-api.ts';
import { telegramNotices } from '../src/telegram/telegram-notices.ts';
import { startFakeTelegramServer } from '../test/support/fake-telegram-server.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { load, machineReport } from './support/machine.ts';
import { ms } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const TOTAL = Number(process.argv[3] ?? 100_000);
const DUE = Number(process.argv[4] ?? 1_000);
const NOW = new Date('2030-06-01T10:00:00Z');

console.log(`## reminder-tick (${ENGINE} engine, ${TOTAL} reminders, ${DUE} due)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-tick-'));
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const store = await openDatabase(
  { ...parseConfig({ DB_POOL_MAX: '10' }), DATA_DIR: dataDir, DATABASE_URL: database?.url },
  pino({ level: 'silent' }),
);
const telegram = await startFakeTelegramServer();
try {
  const sql = store.db.$client;
  // Users with a chat; due reminders 7 days ahead; the rest spread over the past year and the
  // next three, outside the tick's date window, plus 2,000 inside it whose notice went out.
  await sql.query(
    `INSERT INTO users (user_id, telegram_chat_id)
     SELECT 'user-' || g, (100000 + g)::text FROM generate_series(1, 5000) g`,
  );
  const insertStarted = performance.now();
  await sql.query(
    `INSERT INTO reminders (id, user_id, title, due_on, timezone, created_at)
     SELECT gen_random_uuid(), 'user-' || (1 + g % 5000), 'Reminder ' || g,
            CASE WHEN g <= $2 THEN DATE '2030-06-08'
                 WHEN g <= $2 + 2000 THEN DATE '2030-06-01' + (g % 7)
                 WHEN g % 4 = 0 THEN DATE '2030-05-30' - (g % 365)
                 ELSE DATE '2030-06-10' + (g % 1100) END,
            'UTC', TIMESTAMPTZ '2030-01-01T00:00:00Z'
       FROM generate_series(1, $1::int) g`,
    [TOTAL, DUE],
  );
  await sql.query(
    `INSERT INTO reminder_notices (reminder_id, days_before, status, sent_at)
     SELECT id, CASE WHEN due_on = DATE '2030-06-01' THEN 0
                     WHEN due_on = DATE '2030-06-02' THEN 1 ELSE 7 END, 'sent', now()
       FROM reminders WHERE due_on BETWEEN DATE '2030-06-01' AND DATE '2030-06-07'`,
  );
  await sql.query('ANALYZE');
  console.log(`seeded in ${ms(performance.now() - insertStarted)} ms; load ${load()}\n`);

  const silent = pino({ level: 'silent' });
  const boss = createJobEngine(store.db.$client, silent, {
    leaseSeconds: NOTICE_POLICY.leaseSeconds,
  });
  const scheduler = new JobRunner(boss, silent);
  const ticks: { due: number; queued: number }[] = [];
  scheduler.add(
    noticeJob({
      notices: new NoticeRepository(store.db),
      channel: telegramNotices(new TelegramApi({ token: telegram.token, baseUrl: telegram.url })),
      clock: { now: () => NOW },
      // Each tick's own count of what was due and what it queued, read from its log line.
      logger: pino(
        { level: 'debug' },
        {
          write: (line: string) => {
            if (line.includes('"msg":"reminder tick"')) ticks.push(JSON.parse(line));
          },
        },
      ),
      // Ticks at start and when timed below only.
      policy: { ...NOTICE_POLICY, intervalMs: 3_600_000 },
    }),
  );
  // pg-boss's start (schema, queue, worker), then its first tick begins at once: the first
  // row is that tick, awaited through a second sweep (idle, ~60 ms) queued behind it.
  const starting = performance.now();
  await scheduler.start();
  console.log(`job engine started in ${ms(performance.now() - starting)} ms\n`);
  console.log('| tick | due | queued | sent (total) | wall |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  const timed = async (name: string) => {
    const started = performance.now();
    const first = ticks.length;
    await scheduler.sweep('reminder_notice');
    const wall = performance.now() - started;
    const tick = ticks[first] ?? { due: 0, queued: 0 };
    console.log(
      `| ${name} | ${tick.due} | ${tick.queued} | ${telegram.sent.length} | ${ms(wall)} ms |`,
    );
    return wall;
  };
  await timed(`first (${DUE} due), then an idle one`);
  const idle: number[] = [];
  for (let i = 0; i < 5; i++) idle.push(await timed(`idle ${i + 1} (all sent)`));
  idle.sort((a, b) => a - b);
  const notices = new NoticeRepository(store.db);
  const queries: number[] = [];
  let rows = 0;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    rows = (await notices.candidates('2030-05-31', '2030-06-09')).length;
    queries.push(performance.now() - started);
  }
  queries.sort((a, b) => a - b);
  console.log(
    `\ncandidates query alone (${rows} rows in the date window), p50: ${ms(queries[2] as number)} ms`,
  );
  console.log(
    `\nidle tick p50: ${ms(idle[2] as number)} ms; Telegram accepted ${telegram.sent.length}`,
  );
  console.log(`load after: ${load()}`);
  await scheduler.stop();
} finally {
  await telegram.close();
  await store.close();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}

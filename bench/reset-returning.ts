/**
 * Supporting measurement for event-loop-delay: what `MessageRepository.deleteForUser` costs
 * the main thread. It deletes with `RETURNING id`, so every deleted row travels back and is
 * parsed on the event loop; the same DELETE without RETURNING is timed for comparison.
 *
 *   node bench/reset-returning.ts [engine=embedded|server] [rows=300000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { openDatabase } from '../src/storage/database.ts';
import { MessageRepository } from '../src/storage/message-repository.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { load, machineReport } from './support/machine.ts';
import { ms } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const ROWS = Number(process.argv[3] ?? 300_000);

console.log(`## reset-returning (${ENGINE} engine, ${ROWS} rows)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-reset-'));
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const store = await openDatabase(
  // parseConfig fills in every other setting with its default.
  { ...parseConfig({ DB_POOL_MAX: '2' }), DATA_DIR: dataDir, DATABASE_URL: database?.url },
  pino({ level: 'silent' }),
);
const variants: [string, () => Promise<unknown>][] = [
  [
    'deleteForUser (DELETE … RETURNING id)',
    () => new MessageRepository(store.db).deleteForUser('heavy'),
  ],
  [
    'DELETE without RETURNING',
    () => store.db.$client.query(`DELETE FROM messages WHERE user_id = 'heavy'`),
  ],
];
console.log('| variant | wall | main thread busy (ELU active) | max event-loop delay |');
console.log('| --- | ---: | ---: | ---: |');
for (const [name, remove] of variants) {
  await store.db.$client.query(
    `INSERT INTO messages (user_id, role, content)
     SELECT 'heavy', 'user', jsonb_build_object('role', 'user', 'content', 'Message number ' || g)
     FROM generate_series(1, $1::int) g`,
    [ROWS],
  );
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const elu = performance.eventLoopUtilization();
  const startedAt = performance.now();
  await remove();
  const wall = performance.now() - startedAt;
  const busy = performance.eventLoopUtilization(elu).active;
  delay.disable();
  console.log(`| ${name} | ${ms(wall)} ms | ${ms(busy)} ms | ${ms(delay.max / 1e6)} ms |`);
}
await store.close();
await database?.drop();
rmSync(dataDir, { recursive: true, force: true });
console.log(`\nuptime at end: ${load()}`);

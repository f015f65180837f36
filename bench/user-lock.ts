/**
 * What the cross-replica user lock costs per chat: acquire + release of the shared lock
 * (ticket, upsert, delete: three short statements) against the in-process lock alone, and
 * how long a turn takes to pass from one replica to another (polling) when both queue for
 * one user. Replicas are two lock instances with their own pools, as two processes have.
 *
 *   node bench/user-lock.ts [engine=server|embedded] [chats=2000] [handovers=100]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { SharedUserChatLock } from '../src/assistant/shared-user-chat-lock.ts';
import { LocalUserChatLock, type UserChatLock } from '../src/assistant/user-chat-lock.ts';
import { parseConfig } from '../src/config.ts';
import { ChatTurnRepository } from '../src/storage/chat-turn-repository.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { load, machineReport } from './support/machine.ts';
import { line, ms, sleep, summarize } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'server';
const CHATS = Number(process.argv[3] ?? 2_000);
const HANDOVERS = Number(process.argv[4] ?? 100);
/** How long each chat of the hand-over run holds the turn (a stand-in for the answer). */
const HOLD_MS = 20;
const TTL_MS = 20_000;

console.log(`## user-lock (${ENGINE} engine, ${CHATS} chats, ${HANDOVERS} hand-overs)\n`);
console.log(`\`\`\`\n${machineReport()}\nuptime at start: ${load()}\n\`\`\`\n`);
const logger = pino({ level: 'silent' });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const dirs: string[] = [];
const open = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-lock-'));
  dirs.push(dataDir);
  return openDatabase(
    { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: database?.url },
    logger,
  );
};
const stores = ENGINE === 'server' ? [await open(), await open()] : [await open()];
const shared = stores.map(
  (store) =>
    new SharedUserChatLock({ queue: new ChatTurnRepository(store.db), logger, ttlMs: TTL_MS }),
);
const signal = new AbortController().signal;

/** Acquire + release, one chat after another (no contention): wall and main-thread time. */
async function uncontended(lock: UserChatLock, users: number) {
  const walls: number[] = [];
  for (let i = 0; i < 100; i++) await (await lock.acquire(`warm-${i % users}`, signal)).release();
  const elu = performance.eventLoopUtilization();
  const startedAt = performance.now();
  for (let i = 0; i < CHATS; i++) {
    const t = performance.now();
    const { release } = await lock.acquire(`user-${i % users}`, signal);
    await release();
    walls.push(performance.now() - t);
  }
  const total = performance.now() - startedAt;
  const busy = performance.eventLoopUtilization(elu).active;
  return { walls: summarize(walls), busyPerChat: busy / CHATS, totalPerChat: total / CHATS };
}

console.log('### Per chat, uncontended (acquire + release, one chat at a time)\n');
console.log('| lock | wall per chat | main thread per chat |');
console.log('| --- | --- | ---: |');
for (const [name, lock, users] of [
  ['in-process (KeyedMutex)', new LocalUserChatLock(), 1],
  ['shared (chat_turns tickets), one user', shared[0], 1],
  ['shared (chat_turns tickets), 1,000 users in turn', shared[0], 1_000],
] as const) {
  if (!lock) continue;
  const result = await uncontended(lock, users);
  console.log(`| ${name} | ${line(result.walls)} | ${ms(result.busyPerChat * 1000)} µs |`);
}

if (shared.length === 2) {
  // Both "replicas" queue chats for one user at once; each holds the turn HOLD_MS.
  const [a, b] = shared as [SharedUserChatLock, SharedUserChatLock];
  const waits: number[] = [];
  let lastRelease = performance.now();
  const startedAt = performance.now();
  const run = async (lock: SharedUserChatLock) => {
    for (let i = 0; i < HANDOVERS / 2; i++) {
      const { release } = await lock.acquire('contended', signal);
      waits.push(performance.now() - lastRelease);
      await sleep(HOLD_MS);
      lastRelease = performance.now();
      await release();
    }
  };
  await Promise.all([run(a), run(b)]);
  const total = performance.now() - startedAt;
  const gaps = summarize(waits.slice(1));
  console.log('\n### Hand-over between two replicas, one user, chats queued on both\n');
  console.log(
    `${HANDOVERS} chats holding the turn ${HOLD_MS} ms each took ${ms(total)} ms: ` +
      `${ms(total / HANDOVERS - HOLD_MS)} ms per chat over the hold time.\n`,
  );
  console.log(`Gap from one release to the next acquire: ${line(gaps)}\n`);
}

for (const store of stores) await store.close();
await database?.drop();
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
console.log(`\nuptime at end: ${load()}`);

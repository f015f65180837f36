/**
 * What storing a chat's turn costs the database, by part (issue 31: conversations made the
 * turn's INSERT about twice as dear on the embedded engine, whose every statement is the
 * server process's CPU). Stores turns one at a time through the real RunRepository (a question
 * and a one-line answer in the user's current conversation, as a 1-token chat does), then takes
 * one part of the schema away at a time and stores as many again:
 *
 *   node bench/turn-write.ts [engine=embedded|server] [turns=400] [rounds=3]
 *
 * BENCH_BATCH=n: n turns end at once and are stored together (group commit), as in a burst;
 * BENCH_VARIANTS=0,5: only those variants. The figure is the caller's wall time per turn (the
 * statement, the socket and pg's own work), the embedded engine's CPU as much as its latency.
 *
 * Each round measures every variant in turn on a fresh database (the tables' sizes stay alike),
 * so a variant's figure is what the turn costs without that part. It reads like a profile, not
 * a verdict: the parts that cost most are the ones to look at.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { ConversationRepository } from '../src/storage/conversation-repository.ts';
import { RunRepository } from '../src/storage/run-repository.ts';
import { openFreshDatabase } from './support/fresh-database.ts';
import { machineReport } from './support/machine.ts';
import { summarize } from './support/stats.ts';

const [engine = 'embedded'] = process.argv.slice(2);
const TURNS = Number(process.argv[3] ?? 400);
const ROUNDS = Number(process.argv[4] ?? 3);
const USERS = 20;
/** BENCH_BATCH=n: n turns end at once (a burst's chats), stored together by group commit. */
const BATCH = Number(process.env.BENCH_BATCH ?? 1);
const logger = pino({ level: 'warn' });

/** Each variant: DDL run before its turns are stored (on a fresh database). */
const ALL_VARIANTS: { name: string; ddl: string[] }[] = [
  { name: 'as shipped', ddl: [] },
  { name: 'no GIN index on messages.search', ddl: ['DROP INDEX messages_search_idx'] },
  {
    name: 'no messages → conversations foreign key',
    ddl: ['ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_conversations_id_fk'],
  },
  {
    name: "no conversations' four btree indexes on messages",
    ddl: [
      'DROP INDEX messages_conversation_idx',
      'DROP INDEX messages_path_idx',
      'DROP INDEX messages_run_idx',
      'DROP INDEX messages_parent_idx',
    ],
  },
  {
    name: "no index on conversations' activity (updated_at)",
    ddl: ['DROP INDEX conversations_list_idx'],
  },
  {
    name: 'none of the above',
    ddl: [
      'DROP INDEX messages_search_idx',
      'ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_conversations_id_fk',
      'DROP INDEX messages_conversation_idx',
      'DROP INDEX messages_path_idx',
      'DROP INDEX messages_run_idx',
      'DROP INDEX messages_parent_idx',
      'DROP INDEX conversations_list_idx',
    ],
  },
];

/** BENCH_VARIANTS=0,5: only these (by position). */
const VARIANTS = process.env.BENCH_VARIANTS
  ? process.env.BENCH_VARIANTS.split(',').map(
      (i) => ALL_VARIANTS[Number(i)] as (typeof ALL_VARIANTS)[0],
    )
  : ALL_VARIANTS;

async function measure(ddl: readonly string[]): Promise<number[]> {
  const { database, done } = await openFreshDatabase(engine, logger);
  try {
    const { db } = database;
    for (const statement of ddl) await db.$client.query(statement);
    const conversations = new ConversationRepository(db);
    const runs = new RunRepository(db);
    const users = Array.from({ length: USERS }, (_, i) => `turn-write-${i}`);
    const places = new Map<string, string>();
    for (const user of users) places.set(user, await conversations.current(user));
    const store = (i: number) => {
      const userId = users[i % USERS] as string;
      return runs.record(
        {
          id: randomUUID(),
          userId,
          model: 'bench',
          startedAt: new Date(),
          turn: {
            conversationId: places.get(userId) as string,
            parentRunId: undefined,
            title: 'What is the lease',
          },
        },
        { status: 'completed', inputTokens: 12, outputTokens: 1, toolsUsed: [] },
        [
          { role: 'user', content: `What did it say about the lease, question ${i}?` },
          { role: 'assistant', content: [{ type: 'text', text: 'Hello' }] },
        ],
      );
    };
    for (let i = 0; i < 40; i++) await store(i); // warm: plans, caches
    const times: number[] = [];
    for (let i = 0; i < TURNS; i += BATCH) {
      const started = performance.now();
      await Promise.all(Array.from({ length: BATCH }, (_, k) => store(i + k)));
      times.push((performance.now() - started) / BATCH);
    }
    return times;
  } finally {
    await done();
  }
}

console.log(`## turn-write (${engine} engine)\n\n\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(`${ROUNDS} rounds; each variant on a fresh database, ${TURNS} turns one at a time\n`);
const results = new Map<string, number[]>(VARIANTS.map((variant) => [variant.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
    results.get(variant.name)?.push(...(await measure(variant.ddl)));
  }
}
console.log(
  '| variant | per turn: mean | p50 | p90 | p99 ms |\n| --- | ---: | ---: | ---: | ---: |',
);
for (const [name, times] of results) {
  const s = summarize(times);
  console.log(
    `| ${name} | ${s.mean.toFixed(3)} | ${s.p50.toFixed(3)} | ${s.p90.toFixed(3)} | ${s.p99.toFixed(3)} |`,
  );
}
process.exit(0);

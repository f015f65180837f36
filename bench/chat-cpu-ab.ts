/**
 * chat-cpu for two checkouts at once: server CPU per chat and per paced token of a baseline
 * checkout (another commit, e.g. `git archive <sha> | tar -x -C /tmp/base`, node_modules
 * linked) and of this one, measured in alternating rounds against one fake model.
 *
 * Why: this machine's speed drifts by 2× within minutes, more than most changes move the
 * figures, so runs of chat-cpu one after the other cannot tell two commits apart. Both
 * servers run side by side here and take turns round by round (each round: 20 chats of one
 * token, then 20 of `tokens`), so drift falls on both alike; the rounds each one wins are
 * printed as well as the totals.
 *
 *   node bench/chat-cpu-ab.ts <baselineDir> [engine=embedded|server] [rounds=10] [tokens=200] [parallel=20] [delayMs=5]
 *
 * With `resumable` for <baselineDir> both servers are this checkout, and the second one's
 * chats opt in to resumable answers (`"resumable": true`, issue 32): what storing and fanning
 * out the run events costs, against the same code answering plain chats. Each chat's events
 * are checked (ids on the resumable side, none on the plain side), so a request the server did
 * not take as resumable fails the run instead of measuring the plain path twice.
 * On the server engine it also reads the CPU of the PostgreSQL backends of each server's
 * database (their process titles), which the server's own process does not include.
 *
 * Besides the means it prints each checkout's per-round median and range, the per-round ratio
 * of the two (paired: both ran within seconds, so drift cancels) and the wall of the
 * many-token rounds (with delayMs 0, how fast the answers stream).
 */
import { pathToFileURL } from 'node:url';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { type BenchServer, startServer } from './support/parley.ts';
import { cpuMsOf, cpuMsOfPostgres, databaseOf, runMsOf } from './support/proc.ts';
import { chat, RESUMABLE_BY_DEFAULT, succeeded } from './support/sse-client.ts';
import { ms, sleep } from './support/stats.ts';

const [baselineDir, engine = 'embedded'] = process.argv.slice(2);
const ROUNDS = Number(process.argv[4] ?? 10);
const TOKENS = Number(process.argv[5] ?? 200);
const PARALLEL = Number(process.argv[6] ?? 20);
const DELAY_MS = Number(process.argv[7] ?? 5);
if (!baselineDir) throw new Error('usage: chat-cpu-ab.ts <baselineDir> [engine] [rounds] …');
/** Both servers this checkout, the second one's chats resumable (issue 32's cost). */
const RESUMABLE_AB = baselineDir === 'resumable';
/**
 * BENCH_SETTLE_MS: pause after a round's chats end before its CPU is read, so work done after
 * the client saw the end (a resumable run's last batch of events) counts in its round. Both
 * sides wait alike. Default 200 ms in the `resumable` mode, 0 otherwise (as before).
 */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? (RESUMABLE_AB ? 200 : 0));

const fake = await startFakeLlm({ tokens: 1, delayMs: DELAY_MS });
const contenders = await Promise.all(
  (RESUMABLE_AB
    ? [
        { name: 'plain', root: undefined, resumable: false },
        { name: 'resumable', root: undefined, resumable: true },
      ]
    : [
        {
          name: 'baseline',
          root: pathToFileURL(`${baselineDir.replace(/\/$/, '')}/`),
          resumable: RESUMABLE_BY_DEFAULT,
        },
        { name: 'this checkout', root: undefined, resumable: RESUMABLE_BY_DEFAULT },
      ]
  ).map(async ({ name, root, resumable }) => {
    const database = engine === 'server' ? await createTestDatabase() : undefined;
    const server = await startServer({
      root,
      // BENCH_ENV (JSON): settings for both, e.g. '{"CONVERSATION_TITLES":"question"}';
      // BENCH_BASELINE_ENV: for the baseline only (with this checkout as the baseline too,
      // what one setting costs).
      env: {
        LLM_BASE_URL: fake.url,
        DATABASE_URL: database?.url,
        ...(JSON.parse(process.env.BENCH_ENV ?? '{}') as Record<string, string>),
        ...(name === 'baseline'
          ? (JSON.parse(process.env.BENCH_BASELINE_ENV ?? '{}') as Record<string, string>)
          : {}),
      },
    });
    return {
      name,
      server,
      database,
      resumable,
      /** PostgreSQL backends' CPU per chat in the same rounds (server engine only). */
      oneDb: [] as number[],
      manyDb: [] as number[],
      one: [] as number[],
      many: [] as number[],
      /** The same rounds in the scheduler's nanoseconds (runMsOf), not 10 ms ticks. */
      onePrecise: [] as number[],
      manyPrecise: [] as number[],
      wall: [] as number[],
    };
  }),
);

let user = 0;
/** BENCH_USERS=n: chats cycle over n users (their conversations grow); default a new user each. */
const USERS = Number(process.env.BENCH_USERS ?? 0);
/** Server CPU per chat of one round of `PARALLEL` chats, and the round's wall time. */
async function round(
  {
    server,
    database,
    resumable,
  }: { server: BenchServer; database?: { url: string } | undefined; resumable: boolean },
  tokens: number,
): Promise<{ cpu: number; precise: number; wall: number; db: number }> {
  await fake.setReply({ tokens, delayMs: DELAY_MS });
  const dbName = database ? databaseOf(database.url) : undefined;
  const beforeDb = dbName ? cpuMsOfPostgres(dbName) : 0;
  const before = cpuMsOf(server.pid);
  const beforePrecise = runMsOf(server.pid);
  const startedAt = performance.now();
  const results = await Promise.all(
    Array.from({ length: PARALLEL }, () =>
      chat(server.url, `ab-${USERS > 0 ? ++user % USERS : ++user}`, undefined, { resumable }),
    ),
  );
  const wall = performance.now() - startedAt;
  // A resumable run's last batch is stored after its listeners got `__done`: wait for it.
  if (SETTLE_MS > 0) await sleep(SETTLE_MS);
  const cpu = (cpuMsOf(server.pid) - before) / PARALLEL;
  const precise = (runMsOf(server.pid) - beforePrecise) / PARALLEL;
  const db = dbName ? (cpuMsOfPostgres(dbName) - beforeDb) / PARALLEL : 0;
  if (!results.every(succeeded)) throw new Error('a chat failed');
  // Resumable answers number every event; plain ones none: the opt-in took effect, or not.
  if (!results.every((r) => (resumable ? r.numbered > 0 : r.numbered === 0))) {
    throw new Error(
      `${resumable ? 'a resumable' : 'a plain'} chat came back with the other framing`,
    );
  }
  return { cpu, precise, wall, db };
}

for (const c of contenders) await round(c, TOKENS); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  // Who goes first alternates too.
  const order = r % 2 === 0 ? contenders : [...contenders].reverse();
  for (const c of order) {
    const { cpu, precise, db } = await round(c, 1);
    c.one.push(cpu);
    c.onePrecise.push(precise);
    c.oneDb.push(db);
  }
  for (const c of order) {
    const { cpu, precise, wall, db } = await round(c, TOKENS);
    c.many.push(cpu);
    c.manyPrecise.push(precise);
    c.wall.push(wall);
    c.manyDb.push(db);
  }
}
for (const c of contenders) {
  await c.server.stop();
  await c.database?.drop();
}
await fake.close();

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const mean = (values: number[]) => sum(values) / values.length;
const perToken = (c: (typeof contenders)[number], i?: number) =>
  i === undefined
    ? ((mean(c.many) - mean(c.one)) / (TOKENS - 1)) * 1000
    : (((c.many[i] as number) - (c.one[i] as number)) / (TOKENS - 1)) * 1000;
const [base, ours] = contenders as [(typeof contenders)[0], (typeof contenders)[0]];
const wins = (values: (c: typeof base, i: number) => number) =>
  Array.from({ length: ROUNDS }, (_, i) => values(ours, i) < values(base, i)).filter(Boolean)
    .length;

console.log(`## chat-cpu-ab (${engine} engine)\n`);
console.log(
  `\`\`\`\n${machineReport()}\n${RESUMABLE_AB ? 'both this checkout; the second one\'s chats "resumable": true' : `baseline: ${baselineDir}`}\n\`\`\`\n`,
);
console.log(
  `${ROUNDS} alternating rounds of ${PARALLEL} chats each (1 token, then ${TOKENS} tokens, one every ${DELAY_MS} ms)${SETTLE_MS ? `; CPU read ${SETTLE_MS} ms after a round's last chat ended` : ''}.\n`,
);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return sorted.length % 2
    ? (sorted[Math.floor(middle)] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const rounds = (values: (c: typeof base, i: number) => number, c: typeof base) =>
  Array.from({ length: ROUNDS }, (_, i) => values(c, i));
/** `median (min–max)` of per-round figures, in the unit `format` gives. */
const spread = (values: number[], format: (value: number) => string) =>
  `${format(median(values))} (${format(Math.min(...values))}–${format(Math.max(...values))})`;
const oneOf = (c: typeof base, i: number) => c.one[i] as number;
const tokenOf = (c: typeof base, i: number) => perToken(c, i);
const µs = (value: number) => value.toFixed(0);
console.log(
  '| checkout | CPU per chat (1 token), mean | per round: median (min–max) | CPU per paced token, mean | per round: median (min–max) |',
);
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const c of contenders) {
  console.log(
    `| ${c.name} | ${ms(mean(c.one))} ms | ${spread(rounds(oneOf, c), ms)} ms | ${perToken(c).toFixed(0)} µs | ${spread(rounds(tokenOf, c), µs)} µs |`,
  );
}
console.log(
  `\n${ours.name} / ${base.name}: per chat ${(mean(ours.one) / mean(base.one)).toFixed(2)}, per token ${(perToken(ours) / perToken(base)).toFixed(2)}`,
);
// With delayMs 0 the wall of a round is how fast the answers stream (the 2 cores shared).
console.log(
  `wall of a round of ${PARALLEL} chats of ${TOKENS} tokens, median (min–max): ${contenders.map((c) => `${c.name} ${spread(c.wall, ms)} ms`).join(', ')}`,
);
// Paired by round: both ran within seconds of each other, so drift of the machine cancels.
const ratio = (values: (c: typeof base, i: number) => number) =>
  Array.from({ length: ROUNDS }, (_, i) => values(ours, i) / values(base, i));
console.log(
  `per-round ratio ${ours.name} / ${base.name}, median (min–max): per chat ${spread(ratio(oneOf), (v) => v.toFixed(2))}, per token ${spread(ratio(tokenOf), (v) => v.toFixed(2))}`,
);
console.log(
  `rounds ${ours.name} used less CPU: per chat ${wins((c, i) => c.one[i] as number)}/${ROUNDS}, per token ${wins(perToken)}/${ROUNDS}`,
);
// The same rounds from the scheduler's own clock (ns per thread), free of 10 ms ticks.
const preciseOne = (c: typeof base, i: number) => c.onePrecise[i] as number;
const preciseToken = (c: typeof base, i: number) =>
  (((c.manyPrecise[i] as number) - (c.onePrecise[i] as number)) / (TOKENS - 1)) * 1000;
console.log('\nScheduler run time (/proc/<pid>/task/<tid>/schedstat), same rounds:\n');
console.log(
  '| checkout | per chat (1 token), mean | per round: median (min–max) | per paced token: median (min–max) |',
);
console.log('| --- | ---: | ---: | ---: |');
for (const c of contenders) {
  console.log(
    `| ${c.name} | ${ms(mean(c.onePrecise))} ms | ${spread(rounds(preciseOne, c), (v) => v.toFixed(2))} ms | ${spread(rounds(preciseToken, c), µs)} µs |`,
  );
}
console.log(
  `\nper-round ratio (scheduler time) ${ours.name} / ${base.name}, median (min–max): per chat ${spread(ratio(preciseOne), (v) => v.toFixed(2))}, per token ${spread(ratio(preciseToken), (v) => v.toFixed(2))}`,
);
console.log(
  `rounds ${ours.name} used less (scheduler time): per chat ${wins(preciseOne)}/${ROUNDS}, per token ${wins(preciseToken)}/${ROUNDS}`,
);
if (engine === 'server') {
  // The server engine's statements run in PostgreSQL's backends, outside the server's process.
  const dbToken = (c: typeof base, i: number) =>
    (((c.manyDb[i] as number) - (c.oneDb[i] as number)) / (TOKENS - 1)) * 1000;
  const bothToken = (c: typeof base, i: number) => tokenOf(c, i) + dbToken(c, i);
  const bothOne = (c: typeof base, i: number) => oneOf(c, i) + (c.oneDb[i] as number);
  console.log(
    "\nPostgreSQL backends of each server's database (/proc/<pid>/stat, 10 ms ticks), same rounds:\n",
  );
  console.log(
    '| checkout | PostgreSQL per chat (1 token), mean | PostgreSQL per paced token, mean | server + PostgreSQL per chat, mean | server + PostgreSQL per paced token: mean, median (min–max) |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const c of contenders) {
    const all = rounds(bothToken, c);
    console.log(
      `| ${c.name} | ${ms(mean(c.oneDb))} ms | ${µs(mean(rounds(dbToken, c)))} µs | ${ms(mean(rounds(bothOne, c)))} ms | ${µs(mean(all))} µs, ${spread(all, µs)} µs |`,
    );
  }
  console.log(
    `\nserver + PostgreSQL, ${ours.name} / ${base.name}: per chat ${(mean(rounds(bothOne, ours)) / mean(rounds(bothOne, base))).toFixed(2)}, per token ${(mean(rounds(bothToken, ours)) / mean(rounds(bothToken, base))).toFixed(2)}; per-round ratio per token, median (min–max): ${spread(ratio(bothToken), (v) => v.toFixed(2))}`,
  );
}
console.log(`\nuptime at end: ${load()}`);

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
 * Besides the means it prints each checkout's per-round median and range, the per-round ratio
 * of the two (paired: both ran within seconds, so drift cancels) and the wall of the
 * many-token rounds (with delayMs 0, how fast the answers stream).
 */
import { pathToFileURL } from 'node:url';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { type BenchServer, startServer } from './support/parley.ts';
import { cpuMsOf, runMsOf } from './support/proc.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { ms } from './support/stats.ts';

const [baselineDir, engine = 'embedded'] = process.argv.slice(2);
const ROUNDS = Number(process.argv[4] ?? 10);
const TOKENS = Number(process.argv[5] ?? 200);
const PARALLEL = Number(process.argv[6] ?? 20);
const DELAY_MS = Number(process.argv[7] ?? 5);
if (!baselineDir) throw new Error('usage: chat-cpu-ab.ts <baselineDir> [engine] [rounds] …');

const fake = await startFakeLlm({ tokens: 1, delayMs: DELAY_MS });
const contenders = await Promise.all(
  [
    { name: 'baseline', root: pathToFileURL(`${baselineDir.replace(/\/$/, '')}/`) },
    { name: 'this checkout', root: undefined },
  ].map(async ({ name, root }) => {
    const database = engine === 'server' ? await createTestDatabase() : undefined;
    const server = await startServer({
      root,
      // BENCH_ENV (JSON): settings for both, e.g. '{"CONVERSATION_TITLES":"question"}'.
      env: {
        LLM_BASE_URL: fake.url,
        DATABASE_URL: database?.url,
        ...(JSON.parse(process.env.BENCH_ENV ?? '{}') as Record<string, string>),
      },
    });
    return {
      name,
      server,
      database,
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
  server: BenchServer,
  tokens: number,
): Promise<{ cpu: number; precise: number; wall: number }> {
  await fake.setReply({ tokens, delayMs: DELAY_MS });
  const before = cpuMsOf(server.pid);
  const beforePrecise = runMsOf(server.pid);
  const startedAt = performance.now();
  const results = await Promise.all(
    Array.from({ length: PARALLEL }, () =>
      chat(server.url, `ab-${USERS > 0 ? ++user % USERS : ++user}`),
    ),
  );
  const wall = performance.now() - startedAt;
  if (!results.every(succeeded)) throw new Error('a chat failed');
  return {
    cpu: (cpuMsOf(server.pid) - before) / PARALLEL,
    precise: (runMsOf(server.pid) - beforePrecise) / PARALLEL,
    wall,
  };
}

for (const c of contenders) await round(c.server, TOKENS); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  // Who goes first alternates too.
  const order = r % 2 === 0 ? contenders : [...contenders].reverse();
  for (const c of order) {
    const { cpu, precise } = await round(c.server, 1);
    c.one.push(cpu);
    c.onePrecise.push(precise);
  }
  for (const c of order) {
    const { cpu, precise, wall } = await round(c.server, TOKENS);
    c.many.push(cpu);
    c.manyPrecise.push(precise);
    c.wall.push(wall);
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
console.log(`\`\`\`\n${machineReport()}\nbaseline: ${baselineDir}\n\`\`\`\n`);
console.log(
  `${ROUNDS} alternating rounds of ${PARALLEL} chats each (1 token, then ${TOKENS} tokens, one every ${DELAY_MS} ms).\n`,
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
  `\nthis checkout / baseline: per chat ${(mean(ours.one) / mean(base.one)).toFixed(2)}, per token ${(perToken(ours) / perToken(base)).toFixed(2)}`,
);
// With delayMs 0 the wall of a round is how fast the answers stream (the 2 cores shared).
console.log(
  `wall of a round of ${PARALLEL} chats of ${TOKENS} tokens, median (min–max): ${contenders.map((c) => `${c.name} ${spread(c.wall, ms)} ms`).join(', ')}`,
);
// Paired by round: both ran within seconds of each other, so drift of the machine cancels.
const ratio = (values: (c: typeof base, i: number) => number) =>
  Array.from({ length: ROUNDS }, (_, i) => values(ours, i) / values(base, i));
console.log(
  `per-round ratio this checkout / baseline, median (min–max): per chat ${spread(ratio(oneOf), (v) => v.toFixed(2))}, per token ${spread(ratio(tokenOf), (v) => v.toFixed(2))}`,
);
console.log(
  `rounds this checkout used less CPU: per chat ${wins((c, i) => c.one[i] as number)}/${ROUNDS}, per token ${wins(perToken)}/${ROUNDS}`,
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
  `\nper-round ratio (scheduler time) this checkout / baseline, median (min–max): per chat ${spread(ratio(preciseOne), (v) => v.toFixed(2))}, per token ${spread(ratio(preciseToken), (v) => v.toFixed(2))}`,
);
console.log(
  `rounds this checkout used less (scheduler time): per chat ${wins(preciseOne)}/${ROUNDS}, per token ${wins(preciseToken)}/${ROUNDS}`,
);
console.log(`\nuptime at end: ${load()}`);

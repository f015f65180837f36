/**
 * What Parley adds to a streamed answer: a 1,000-token answer from the fake model, streamed as
 * fast as it can (one chunk per token, no delay), read through Parley's `POST /chat` and read
 * straight from the fake's `/v1/chat/completions`. Runs alternate between the two paths.
 *
 *   node bench/chat-overhead.ts [runs=30] [engine=embedded|server] [tokens=1000]
 */
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { cpuMsOf } from './support/proc.ts';
import { chat, postSse, succeeded } from './support/sse-client.ts';
import { ms, summarize } from './support/stats.ts';

const RUNS = Number(process.argv[2] ?? 30);
const ENGINE = process.argv[3] ?? 'embedded';
const TOKENS = Number(process.argv[4] ?? 1_000);
const WARMUP = 5;
/** The fake's answer: "t1 t2 … tN", one chunk a token. */
const ANSWER = Array.from({ length: TOKENS }, (_, i) => `t${i + 1}`).join(' ');

const fake = await startFakeLlm({ tokens: TOKENS, delayMs: 0 });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const server = await startServer({
  env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url, LLM_MAX_RETRIES: '0' },
});

const body = {
  model: 'fake-chat',
  messages: [{ role: 'user', content: 'Hello there' }],
  stream: true,
  stream_options: { include_usage: true },
};
async function direct() {
  const result = await postSse(`${fake.url}/chat/completions`, body);
  const events = result.events;
  if (result.status !== 200 || events.at(-1)?.data !== '[DONE]') throw new Error('direct failed');
  const firstContent = events.find((e) => e.data.includes('"content":"t1"'));
  return {
    total: result.endedAt - result.startedAt,
    ttfb: (events[0]?.at ?? Number.NaN) - result.startedAt,
    ttfc: (firstContent?.at ?? Number.NaN) - result.startedAt,
  };
}
let user = 0;
async function parley() {
  const result = await chat(server.url, `overhead-${++user}`);
  if (!succeeded(result) || result.text !== ANSWER) {
    throw new Error(`parley failed: ${result.error} (${result.tokenTimes.length} tokens)`);
  }
  const arrival = (await fake.arrivals()).at(-1); // direct runs are logged too: ours is the last
  /** From the client's request to the model request reaching the fake (history, runs…). */
  const beforeModel = (arrival ?? Number.NaN) - (performance.timeOrigin + result.startedAt);
  /** When the n-th token arrived, counted from the model request reaching the fake. */
  const afterModel = (n: number) =>
    (result.tokenTimes[n - 1] as number) - result.startedAt - beforeModel;
  return {
    total: result.endedAt - result.startedAt,
    ttfb: (result.fragmentTimes[0] as number) - result.startedAt,
    beforeModel,
    fragment1: afterModel(1),
    fragment10: afterModel(10),
    fragment100: afterModel(100),
    fragments: result.fragmentTimes.length,
  };
}

for (let i = 0; i < WARMUP; i++) {
  await direct();
  await parley();
}
const directRuns: Awaited<ReturnType<typeof direct>>[] = [];
const parleyRuns: Awaited<ReturnType<typeof parley>>[] = [];
const cpuBefore = cpuMsOf(server.pid);
let parleyWall = 0;
for (let i = 0; i < RUNS; i++) {
  directRuns.push(await direct());
  const run = await parley();
  parleyRuns.push(run);
  parleyWall += run.total;
}
const cpuPerChat = (cpuMsOf(server.pid) - cpuBefore) / RUNS;
await server.stop();
await fake.close();
await database?.drop();

const d = {
  total: summarize(directRuns.map((r) => r.total)),
  ttfb: summarize(directRuns.map((r) => r.ttfb)),
  ttfc: summarize(directRuns.map((r) => r.ttfc)),
};
const p = {
  total: summarize(parleyRuns.map((r) => r.total)),
  ttfb: summarize(parleyRuns.map((r) => r.ttfb)),
  beforeModel: summarize(parleyRuns.map((r) => r.beforeModel)),
  fragment1: summarize(parleyRuns.map((r) => r.fragment1)),
  fragment10: summarize(parleyRuns.map((r) => r.fragment10)),
  fragment100: summarize(parleyRuns.map((r) => r.fragment100)),
  fragments: summarize(parleyRuns.map((r) => r.fragments)),
};
const addedTotal = (p.total.p50 / d.total.p50 - 1) * 100;
const addedTtfb = p.ttfb.p50 - d.ttfb.p50;
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

console.log(`## chat-overhead (${ENGINE} engine, ${RUNS} runs each after ${WARMUP} warm-up)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log('| path | total p50 | total p90 | TTFB p50 | TTFB p90 |');
console.log('| --- | ---: | ---: | ---: | ---: |');
console.log(
  `| fake LLM direct | ${ms(d.total.p50)} | ${ms(d.total.p90)} | ${ms(d.ttfb.p50)} | ${ms(d.ttfb.p90)} |`,
);
console.log(
  `| through Parley | ${ms(p.total.p50)} | ${ms(p.total.p90)} | ${ms(p.ttfb.p50)} | ${ms(p.ttfb.p90)} |`,
);
console.log(
  `\ndirect, time to the first content token ("t1"): p50 ${ms(d.ttfc.p50)} / p90 ${ms(d.ttfc.p90)} ms`,
);
console.log(
  `Parley, time from the request to the model request reaching the fake: p50 ${ms(p.beforeModel.p50)} / p90 ${ms(p.beforeModel.p90)} ms`,
);
console.log(
  `Parley, tokens 1 / 10 / 100 after the model request reached the fake: p50 ${ms(p.fragment1.p50)} / ${ms(p.fragment10.p50)} / ${ms(p.fragment100.p50)} ms, p90 ${ms(p.fragment1.p90)} / ${ms(p.fragment10.p90)} / ${ms(p.fragment100.p90)} ms`,
);
console.log(
  `Parley, fragments per answer of ${TOKENS} tokens (tokens that reach Parley together are merged): p50 ${p.fragments.p50}, p90 ${p.fragments.p90}, max ${p.fragments.max}`,
);
console.log(`Parley server CPU per chat: ${ms(cpuPerChat)} ms (user+sys, /proc/<pid>/stat)`);
console.log(`Parley wall time per chat (mean): ${ms(parleyWall / RUNS)} ms`);
console.log(
  `\nadded total time (p50): ${addedTotal.toFixed(1)} % (target ≤ 5 %): ${verdict(addedTotal <= 5)}`,
);
console.log(`added TTFB (p50): ${ms(addedTtfb)} ms (target ≤ 5 ms): ${verdict(addedTtfb <= 5)}`);
console.log(`\nuptime at end: ${load()}`);

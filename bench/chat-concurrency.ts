/**
 * 1,000 concurrent `/chat` streams, one per user, with the fake model pacing 20 tokens/s
 * (40 tokens, one every 50 ms: about 2 s an answer). Every stream must end with `__done` and
 * `[DONE]`; the gaps between fragments at the client are compared with the 50 ms pacing.
 * The fake model runs in its own process (bench/support/fake-llm-child.ts).
 *
 *   node bench/chat-concurrency.ts [engine=embedded|server] [streams=1000]
 */
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { cpuMsOf, memoryOf, sampleRss } from './support/proc.ts';
import { chat, gaps, succeeded } from './support/sse-client.ts';
import { line, mib, ms, summarize } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const STREAMS = Number(process.argv[3] ?? 1_000);
const TOKENS = 40;
const PACE_MS = 50;

console.log(`## chat-concurrency (${ENGINE} engine, ${STREAMS} streams)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

const fake = await startFakeLlm({ tokens: TOKENS, delayMs: PACE_MS });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const server = await startServer({
  // DB_POOL_MAX from the environment, to test whether the pool is the limit (default 10).
  env: {
    LLM_BASE_URL: fake.url,
    DATABASE_URL: database?.url,
    DB_POOL_MAX: process.env.DB_POOL_MAX,
  },
});

// Warm-up: compile the code paths with a few chats.
await Promise.all(Array.from({ length: 10 }, (_, i) => chat(server.url, `warm-${i}`)));
await fake.arrivals();

const before = memoryOf(server.pid);
const rss = sampleRss(server.pid, 100);
const cpu = { server: cpuMsOf(server.pid), fake: cpuMsOf(fake.pid), client: process.cpuUsage() };
const startedAt = performance.now();
const results = await Promise.all(
  Array.from({ length: STREAMS }, (_, i) => chat(server.url, `concurrent-${i}`)),
);
const wall = performance.now() - startedAt;
const clientCpu = process.cpuUsage(cpu.client);
const used = {
  server: cpuMsOf(server.pid) - cpu.server,
  fake: cpuMsOf(fake.pid) - cpu.fake,
  client: (clientCpu.user + clientCpu.system) / 1000,
};
const { peak, samples } = rss.stop();
// When the model requests reached the fake, relative to the start: Parley's work before the model call.
const arrivals = summarize(
  (await fake.arrivals()).map((at) => at - (performance.timeOrigin + startedAt)),
);
const memory = memoryOf(server.pid);
await server.stop();
await fake.close();
await database?.drop();

const failed = results.filter((r) => !succeeded(r));
const ok = results.filter(succeeded);
const incomplete = ok.filter((r) => r.tokenTimes.length !== TOKENS);
const gapSummary = summarize(results.flatMap(gaps));
// Timings of the streams that succeeded (a failed one has no fragments to time).
const ttfb = summarize(ok.map((r) => (r.tokenTimes[0] as number) - r.startedAt));
const duration = summarize(ok.map((r) => r.endedAt - r.startedAt));
const endWait = summarize(ok.map((r) => r.endedAt - (r.tokenTimes.at(-1) as number)));
const failedAfter = summarize(failed.map((r) => r.endedAt - r.startedAt));
// The most streams that were between their first fragment and their end at the same moment.
const edges = ok.flatMap((r) => [
  [r.tokenTimes[0] as number, 1],
  [r.endedAt, -1],
]);
let streaming = 0;
let peakStreaming = 0;
for (const [, step] of edges.sort((a, b) => (a[0] as number) - (b[0] as number))) {
  streaming += step as number;
  peakStreaming = Math.max(peakStreaming, streaming);
}
const addedP99 = gapSummary.p99 - PACE_MS;
const errors = new Map<string, number>();
for (const r of failed) {
  const key = r.error ?? (r.done ? 'no [DONE]' : 'no __done');
  errors.set(key, (errors.get(key) ?? 0) + 1);
}

console.log('| measure | value |');
console.log('| --- | --- |');
console.log(`| failed streams (no __done/[DONE], or __error) | ${failed.length} of ${STREAMS} |`);
console.log(`| successful streams without all ${TOKENS} tokens | ${incomplete.length} |`);
console.log(
  `| fragments per stream (tokens that reach Parley together are merged) | ${line(summarize(ok.map((r) => r.fragmentTimes.length)), '')} |`,
);
if (failed.length) console.log(`| failed streams ended after | ${line(failedAfter)} |`);
console.log(`| gap between tokens, all streams (pacing ${PACE_MS} ms) | ${line(gapSummary)} |`);
console.log(
  `| added p99 gap (target ≤ 50 ms) | ${ms(addedP99)} ms: ${addedP99 <= 50 ? 'PASS' : 'FAIL'} |`,
);
console.log(`| most streams receiving fragments at the same time | ${peakStreaming} |`);
console.log(`| model request reached the fake, after the start | ${line(arrivals)} |`);
console.log(`| TTFB, successful streams | ${line(ttfb)} |`);
console.log(`| last fragment → end of stream, successful streams | ${line(endWait)} |`);
console.log(
  `| stream duration, successful streams (ideal ≈ ${(TOKENS + 3) * PACE_MS} ms) | ${line(duration)} |`,
);
console.log(`| wall time, all ${STREAMS} streams | ${ms(wall)} ms |`);
console.log(
  `| server VmHWM before the run (start-up, warm-up) → at the end | ${mib(before.hwm)} → ${mib(memory.hwm)} MiB |`,
);
console.log(
  `| server VmRSS before the run → at the end | ${mib(before.rss)} → ${mib(memory.rss)} MiB |`,
);
console.log(`| server peak VmRSS (sampled every 100 ms, ${samples} samples) | ${mib(peak)} MiB |`);
console.log(
  `| CPU used during the run (share of one core) | server ${((used.server / wall) * 100).toFixed(0)} %, fake LLM ${((used.fake / wall) * 100).toFixed(0)} %, client ${((used.client / wall) * 100).toFixed(0)} % |`,
);
if (errors.size) {
  console.log('\nerrors:');
  for (const [error, count] of errors) console.log(`- ${count} × ${error}`);
}
if (server.logs.length) {
  const first = server.logs.slice(0, 3).map((entry) => entry.slice(0, 600));
  console.log(
    `\nserver warnings/errors (first 3 of ${server.logs.length}, cut):\n${first.join('\n')}`,
  );
}
console.log(`\nuptime at end: ${load()}`);

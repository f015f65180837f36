/**
 * Benchmark 5 of issue 9: do other users' streams stay smooth while a big PDF is ingested?
 * 50 clients chat continuously (the fake model streams 50 tokens, one every 20 ms) while an
 * unknown path (a 404: pure event-loop latency) is polled every 20 ms. Two phases: no other
 * load; `rfc2616.pdf` (176 pages) uploaded to /ingest again and again.
 *
 *   node bench/ingest-streams.ts [engine=embedded|server] [windowMs=15000]
 */
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { chatLoop, type Probe, pollEvery } from './support/load.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { type ChatResult, gaps, succeeded } from './support/sse-client.ts';
import { line, ms, sleep, summarize } from './support/stats.ts';
import { timedIngest } from './support/upload.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const WINDOW_MS = Number(process.argv[3] ?? 15_000);
const STREAMS = 50;
const PACE_MS = 20;
const STAGGER_MS = 22; // 50 clients spread over one 1.1 s answer
const PDF = '../shared/data/pdfs/rfc2616.pdf';

console.log(`## ingest-streams (${ENGINE} engine, ${STREAMS} streams, window ${WINDOW_MS} ms)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const fake = await startFakeLlm({ tokens: 50, delayMs: PACE_MS });
const server = await startServer({ env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url } });

interface Window {
  from: number;
  to: number;
}
const inWindow = (at: number, w: Window) => at >= w.from && at <= w.to;
const summary: Record<string, { gapP99: number; probeP99: number }> = {};

function report(name: string, chats: ChatResult[], probe: Probe[], w: Window) {
  const tokenGaps = chats.flatMap((c) =>
    gaps(c).filter((_, i) => inWindow(c.tokenTimes[i + 1] as number, w)),
  );
  const failed = chats.filter((c) => !succeeded(c));
  const p = probe.filter((x) => inWindow(x.at, w)).map((x) => x.ms);
  summary[name] = { gapP99: summarize(tokenGaps).p99, probeP99: summarize(p).p99 };
  console.log(`### ${name}\n`);
  console.log(`- gaps between tokens (pacing ${PACE_MS} ms): ${line(summarize(tokenGaps))}`);
  console.log(`- failed chats: ${failed.length} of ${chats.length}`);
  console.log(
    `- GET /no-such-path every 20 ms (event-loop delay as a client sees it): ${line(summarize(p))}\n`,
  );
}

async function phase(name: string, during: () => Promise<Window | undefined>) {
  const chats = chatLoop(server.url, STREAMS, 'ingest-bench', STAGGER_MS);
  const probe = pollEvery(`${server.url}/no-such-path`, 20);
  const window = await during();
  await chats.stop();
  await probe.stop();
  if (window) report(name, chats.results, probe.probes, window);
}

await phase('warm-up', async () => {
  await sleep(3_000);
  return undefined;
});

await phase('(a) 50 streams, no ingestion', async () => {
  await sleep(1_500);
  const from = performance.now();
  await sleep(WINDOW_MS);
  return { from, to: performance.now() };
});

const ingestions: number[] = [];
await phase('(b) 50 streams while rfc2616.pdf is ingested', async () => {
  await sleep(1_500);
  const from = performance.now();
  while (performance.now() - from < WINDOW_MS) {
    const answer = await timedIngest(server.url, PDF);
    if (answer.status !== 200) throw new Error(`ingest failed: ${JSON.stringify(answer.body)}`);
    ingestions.push(answer.ms);
  }
  return { from, to: performance.now() };
});

await server.stop();
await fake.close();
await database?.drop();
const a = summary['(a) 50 streams, no ingestion'];
const b = summary['(b) 50 streams while rfc2616.pdf is ingested'];
console.log(
  `ingestions in phase (b): ${ingestions.length}, each ${ingestions.map(ms).join(', ')} ms`,
);
console.log(
  `\np99 token gap ${ms(a?.gapP99 ?? Number.NaN)} → ${ms(b?.gapP99 ?? Number.NaN)} ms; p99 event-loop probe ${ms(a?.probeP99 ?? Number.NaN)} → ${ms(b?.probeP99 ?? Number.NaN)} ms`,
);
console.log(`uptime at end: ${load()}`);

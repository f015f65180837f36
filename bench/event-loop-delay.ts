/**
 * Does database work stall other users' streams? 20 clients chat continuously (the fake model
 * streams 50 tokens, one every 20 ms) while /health and an unknown path (a 404 that touches
 * neither the database nor a route handler: pure event-loop latency) are polled every 20 ms.
 * Three phases: no other load; a `POST /reset` deleting a 300k-message history; `GET
 * /documents` (2,000 sources) in a tight loop.
 *
 *   node bench/event-loop-delay.ts [engine=embedded|server] [heavyRows=300000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { chatLoop, type Probe, pollEvery } from './support/load.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { type ChatResult, gaps, succeeded, timedGet, timedPost } from './support/sse-client.ts';
import { line, ms, sleep, summarize } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const HEAVY_ROWS = Number(process.argv[3] ?? 300_000);
const DOCUMENTS = 2_000;
const STREAMS = 20;
const PACE_MS = 20;
/** 50 tokens at 20 ms: a chat lasts about 1.1 s; the clients are spread over that. */
const STAGGER_MS = 55;

console.log(`## event-loop-delay (${ENGINE} engine)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

// The store, seeded through the real storage layer while no server runs.
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-eld-'));
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const seedStarted = performance.now();
const store = await openDatabase(
  // parseConfig fills in every other setting with its default.
  { ...parseConfig({ DB_POOL_MAX: '2' }), DATA_DIR: dataDir, DATABASE_URL: database?.url },
  pino({ level: 'silent' }),
);
await store.db.$client.query(
  `INSERT INTO messages (user_id, role, content)
   SELECT 'heavy', r, jsonb_build_object('role', r, 'content', 'Message number ' || g || ', long enough to look like a real sentence someone typed.')
   FROM generate_series(1, $1::int) g, LATERAL (SELECT CASE WHEN g % 2 = 0 THEN 'assistant' ELSE 'user' END AS r) roles`,
  [HEAVY_ROWS],
);
await store.db.$client.query(
  `INSERT INTO documents (source, kind, chunk_count)
   SELECT 'library/document-' || g || '.pdf', 'document', 0 FROM generate_series(1, $1::int) g`,
  [DOCUMENTS],
);
await store.close();
console.log(
  `seeded ${HEAVY_ROWS} messages for user 'heavy' and ${DOCUMENTS} documents in ${ms(performance.now() - seedStarted)} ms\n`,
);

const fake = await startFakeLlm({ tokens: 50, delayMs: PACE_MS });
const server = await startServer({
  dataDir,
  env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url },
});

interface Window {
  from: number;
  to: number;
}
const inWindow = (at: number, w: Window) => at >= w.from && at <= w.to;

function report(name: string, chats: ChatResult[], health: Probe[], probe: Probe[], w: Window) {
  const fragmentGaps = chats.flatMap((c) =>
    gaps(c).filter((_, i) => inWindow(c.tokenTimes[i + 1] as number, w)),
  );
  const started = chats.filter((c) => inWindow(c.startedAt, w));
  const ttfb = started.map((c) => (c.tokenTimes[0] ?? c.endedAt) - c.startedAt);
  // Chats whose last fragment came in the window: their end waits for the turn to be stored.
  const ended = chats.filter((c) => inWindow(c.tokenTimes.at(-1) ?? c.endedAt, w));
  const endWait = ended.map((c) => c.endedAt - (c.tokenTimes.at(-1) ?? c.startedAt));
  const failed = chats.filter((c) => !succeeded(c));
  const h = health.filter((p) => inWindow(p.at, w));
  const p = probe.filter((x) => inWindow(x.at, w));
  console.log(`### ${name} (window ${ms(w.to - w.from)} ms, ${STREAMS} clients)\n`);
  console.log(`- fragment gaps (pacing ${PACE_MS} ms): ${line(summarize(fragmentGaps))}`);
  console.log(`- TTFB of chats started in the window: ${line(summarize(ttfb))}`);
  console.log(`- last fragment → end of stream (stores the turn): ${line(summarize(endWait))}`);
  console.log(
    `- failed chats: ${failed.length} of ${chats.length}${failed.length ? ` (${[...new Set(failed.map((c) => c.error))].join('; ')})` : ''}`,
  );
  console.log(
    `- GET /health every 20 ms: ${line(summarize(h.map((x) => x.ms)))}, non-200: ${h.filter((x) => x.status !== 200).length}`,
  );
  console.log(
    `- GET /no-such-path (404, event loop only) every 20 ms: ${line(summarize(p.map((x) => x.ms)))}\n`,
  );
}

async function phase(name: string, during: () => Promise<Window | undefined>) {
  const chats = chatLoop(server.url, STREAMS, 'eld', STAGGER_MS);
  const health = pollEvery(`${server.url}/health`, 20);
  const probe = pollEvery(`${server.url}/no-such-path`, 20);
  const window = await during();
  await chats.stop();
  await health.stop();
  await probe.stop();
  if (window) report(name, chats.results, health.probes, probe.probes, window);
}

// Warm up (not reported): every client's user exists, the code paths are compiled.
await phase('warm-up', async () => {
  await sleep(3_000);
  return undefined;
});

await phase('(a) no other load', async () => {
  await sleep(1_500);
  const from = performance.now();
  await sleep(4_000);
  return { from, to: performance.now() };
});

let resetMs = 0;
await phase(`(b) during POST /reset?user_id=heavy (${HEAVY_ROWS} messages)`, async () => {
  await sleep(1_500); // all clients are chatting
  const from = performance.now();
  const reset = await timedPost(`${server.url}/reset?user_id=heavy`);
  const to = performance.now();
  resetMs = reset.ms;
  console.log(`POST /reset?user_id=heavy: HTTP ${reset.status} in ${ms(reset.ms)} ms\n`);
  await sleep(1_500);
  return { from, to };
});

await phase('(c) during GET /documents in a tight loop', async () => {
  await sleep(1_500);
  const from = performance.now();
  const latencies: number[] = [];
  let bad = 0;
  while (performance.now() - from < 4_000) {
    const { status, ms: took } = await timedGet(`${server.url}/documents`);
    latencies.push(took);
    if (status !== 200) bad++;
  }
  console.log(
    `GET /documents (${DOCUMENTS} sources): ${line(summarize(latencies))}, non-200: ${bad}\n`,
  );
  return { from, to: performance.now() };
});

if (server.logs.length)
  console.log(`server warnings/errors:\n${server.logs.slice(0, 5).join('\n')}\n`);
await server.stop();
await fake.close();
await database?.drop();
rmSync(dataDir, { recursive: true, force: true });
console.log(`reset took ${ms(resetMs)} ms\nuptime at end: ${load()}`);

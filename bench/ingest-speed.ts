/**
 * Benchmark 3 of issue 9: `rfc2616.pdf` (176 pages) from upload to stored, against only
 * extracting its text with unpdf in this process, in the same run. Target: ≤ 1.5×.
 * Also splits the server's time from its own log lines: extraction (the child process, from
 * fork to its text back), chunking (chunks, hashes and lexical terms) and storing (one
 * transaction: chunks, postings, statistics); the rest is the upload and type detection.
 * The first upload after the start (a new extraction process, PDF.js not yet compiled) is
 * shown on its own row and left out of the p50: later uploads find a warm process
 * (INGEST_PROCESS_IDLE_MS), as the in-process figure finds PDF.js compiled.
 *
 *   node bench/ingest-speed.ts [engine=embedded|server] [runs=5]
 */
import { readFileSync } from 'node:fs';
import { extractText, getDocumentProxy } from 'unpdf';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { ms, summarize } from './support/stats.ts';
import { timedIngest } from './support/upload.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const RUNS = Number(process.argv[3] ?? 5);
const PDF = '../shared/data/pdfs/rfc2616.pdf';

console.log(`## ingest-speed (${ENGINE} engine, ${RUNS} runs)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

async function extractOnly(): Promise<number> {
  const startedAt = performance.now();
  const pdf = await getDocumentProxy(new Uint8Array(readFileSync(PDF)));
  const { totalPages } = await extractText(pdf, { mergePages: false });
  if (totalPages !== 176) throw new Error(`expected 176 pages, got ${totalPages}`);
  return performance.now() - startedAt;
}

const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const logged: Record<string, unknown>[] = [];
const server = await startServer({
  env: { DATABASE_URL: database?.url, LOG_LEVEL: 'info' },
  onLogLine: (text) => {
    if (text.includes('"document stored"') || text.includes('"document ingested"')) {
      logged.push(JSON.parse(text) as Record<string, unknown>);
    }
  },
});
const extract: number[] = [];
const parts: Record<string, number>[] = [];

/** The server's split of the last ingestion, from its two log lines (they may trail the answer). */
async function serverSplit(totalMs: number): Promise<Record<string, number>> {
  const deadline = performance.now() + 5_000;
  while (logged.filter((line) => line.msg === 'document ingested').length < 1) {
    if (performance.now() > deadline) throw new Error('no "document ingested" log line');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const stored = logged.find((line) => line.msg === 'document stored') ?? {};
  const ingested = logged.find((line) => line.msg === 'document ingested') ?? {};
  logged.length = 0;
  const extraction = Number(ingested.extractedMs);
  return {
    extraction,
    chunking: Number(stored.chunkingMs),
    storing: Number(stored.storingMs),
    rest: totalMs - Number(ingested.totalMs),
  };
}
const ingest: number[] = [];
await extractOnly(); // warm-up: PDF.js compiled in this process
const first = await timedIngest(server.url, PDF, 'warm-up.pdf');
if (first.status !== 200) throw new Error(`ingest failed: ${JSON.stringify(first.body)}`);
await serverSplit(first.ms);
// Interleaved, so that the machine's load (shared, busy) weighs on both alike.
for (let run = 0; run < RUNS; run++) {
  extract.push(await extractOnly());
  const answer = await timedIngest(server.url, PDF, 'rfc2616.pdf');
  if (answer.status !== 200) throw new Error(`ingest failed: ${JSON.stringify(answer.body)}`);
  ingest.push(answer.ms);
  parts.push(await serverSplit(answer.ms));
}
await server.stop();
await database?.drop();

const e = summarize(extract);
const i = summarize(ingest);
const ratio = i.p50 / e.p50;
console.log('| measure | p50 ms | min ms | max ms |');
console.log('| --- | --- | --- | --- |');
console.log(
  `| unpdf text extraction only, in process | ${ms(e.p50)} | ${ms(Math.min(...extract))} | ${ms(e.max)} |`,
);
console.log(
  `| POST /ingest, first after start (new extraction process) | ${ms(first.ms)} | – | – |`,
);
console.log(
  `| POST /ingest, upload → 200 (stored) | ${ms(i.p50)} | ${ms(Math.min(...ingest))} | ${ms(i.max)} |`,
);
for (const part of ['extraction', 'chunking', 'storing', 'rest']) {
  const values = parts.map((split) => split[part] as number);
  console.log(
    `| – of which ${part} (server log) | ${ms(summarize(values).p50)} | ${ms(Math.min(...values))} | ${ms(Math.max(...values))} |`,
  );
}
console.log(
  `\nratio (p50): ${ratio.toFixed(2)}× — target ≤ 1.5×: ${ratio <= 1.5 ? 'PASS' : 'FAIL'}`,
);
console.log(`uptime at end: ${load()}`);

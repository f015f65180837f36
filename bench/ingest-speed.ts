/**
 * Benchmark 3 of issue 9: `rfc2616.pdf` (176 pages) from upload to stored, against only
 * extracting its text with unpdf in this process, in the same run. Target: ≤ 1.5×.
 * Until the retrieval branch lands, "stored" is the ingest branch's placeholder store (one
 * chunk per page, no chunking or embeddings): rerun after the merge.
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
const server = await startServer({ env: { DATABASE_URL: database?.url } });
const extract: number[] = [];
const ingest: number[] = [];
await extractOnly(); // warm-up: PDF.js compiled in this process
const first = await timedIngest(server.url, PDF, 'warm-up.pdf');
if (first.status !== 200) throw new Error(`ingest failed: ${JSON.stringify(first.body)}`);
// Interleaved, so that the machine's load (shared, busy) weighs on both alike.
for (let run = 0; run < RUNS; run++) {
  extract.push(await extractOnly());
  const answer = await timedIngest(server.url, PDF, 'rfc2616.pdf');
  if (answer.status !== 200) throw new Error(`ingest failed: ${JSON.stringify(answer.body)}`);
  ingest.push(answer.ms);
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
  `| POST /ingest, upload → 200 (stored) | ${ms(i.p50)} | ${ms(Math.min(...ingest))} | ${ms(i.max)} |`,
);
console.log(
  `\nratio (p50): ${ratio.toFixed(2)}× — target ≤ 1.5×: ${ratio <= 1.5 ? 'PASS' : 'FAIL'}`,
);
console.log(`uptime at end: ${load()}`);

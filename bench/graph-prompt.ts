/**
 * Supporting measurement for the knowledge graph: what the graph summary costs each model
 * call. Before every call the user's graph is validated against the table (one indexed
 * `count(*), max(id)` query) and, when unchanged, served from the cache; the summary is then
 * ranked against the message. Timed here against reading the whole graph every time.
 *
 *   node bench/graph-prompt.ts [engine=embedded|server] [triples=1000] [runs=200]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { GraphService } from '../src/graph/graph-service.ts';
import { summarizeGraph } from '../src/graph/graph-summary.ts';
import { openDatabase } from '../src/storage/database.ts';
import { GraphRepository } from '../src/storage/graph-repository.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { machineReport } from './support/machine.ts';
import { summarize } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const TRIPLES = Number(process.argv[3] ?? 1_000);
const RUNS = Number(process.argv[4] ?? 200);

console.log(`## graph-prompt (${ENGINE} engine, ${TRIPLES} triples, ${RUNS} runs)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-graph-'));
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const store = await openDatabase(
  { ...parseConfig({ DB_POOL_MAX: '2' }), DATA_DIR: dataDir, DATABASE_URL: database?.url },
  pino({ level: 'silent' }),
);
try {
  const repository = new GraphRepository(store.db);
  const graph = new GraphService(repository, { maxTriples: TRIPLES + 1, cacheUsers: 10 });
  for (let i = 0; i < TRIPLES; i++) {
    await graph.add('bench', { subject: `사람${i}`, relation: '친구', object: `Person ${i}` });
  }
  const message = '사람17이랑 Person 512 은 어떻게 알아?';
  const time = async (work: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      await work();
      samples.push(performance.now() - started);
    }
    return summarize(samples);
  };
  await graph.list('bench'); // fills the cache
  const rows = [
    ['validated cache hit (GraphService.list)', await time(() => graph.list('bench'))],
    ['whole graph read (GraphRepository.list)', await time(() => repository.list('bench'))],
    [
      'cache hit + summary (what each model call pays)',
      await time(async () => summarizeGraph(await graph.list('bench'), message, 2_000)),
    ],
  ] as const;
  console.log('| step | p50 | p90 |\n| --- | --- | --- |');
  for (const [name, stats] of rows)
    console.log(`| ${name} | ${stats.p50.toFixed(2)} ms | ${stats.p90.toFixed(2)} ms |`);
} finally {
  await store.close();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}

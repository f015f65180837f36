/**
 * Benchmark 1: retrieval quality on SciFact (train split, 809 queries), through the real code
 * path (DocumentService.ingest, then DocumentService.search), next to a plain BM25 written
 * here as the baseline (k1 0.9, b 0.4, lower-cased word tokens, English stop-words).
 *
 *   node bench/retrieval-quality.ts [embedded|server] [chunkings=256/32] [hybrid]
 *
 * `chunkings` is a comma-separated list of maxTokens/overlapTokens to compare, e.g.
 * `128/16,256/32,512/64`; `hybrid` stores each with the fake bag-of-words embedder too (or,
 * with `BENCH_EMBEDDER=use`, a real sentence encoder: see support/sentence-encoder.ts) and
 * scores the lexical ranking and the hybrid one at each `BENCH_VECTOR_WEIGHTS` (default
 * `1,0.5,0.3,0.2,0.1`: HYBRID_VECTOR_WEIGHT, the vector scores' share of the fused score)
 * from the same store. `BENCH_CAPS=2000,500` scores the lexical runs with other caps on
 * postings read per query term (POSTINGS_PER_TERM; the first is the default); the hybrid
 * runs read Parley's default cap.
 */
import { STOP_WORDS } from '../src/documents/lexical-terms.ts';
import {
  type Engine,
  embedAllChunks,
  fakeEmbedder,
  openBenchStore,
} from './support/document-store.ts';
import { machineReport } from './support/machine.ts';
import { loadSciFact, scoreAt10, storeCorpus, topDocuments } from './support/scifact.ts';
import { sentenceEncoder } from './support/sentence-encoder.ts';

const engine = (process.argv[2] ?? 'embedded') as Engine;
const chunkings = (process.argv[3] ?? '256/32').split(',').map((pair) => {
  const [maxTokens, overlapTokens] = pair.split('/').map(Number);
  return { maxTokens: maxTokens as number, overlapTokens: overlapTokens as number };
});
const withHybrid = process.argv.includes('hybrid');
const caps = (process.env.BENCH_CAPS ?? '2000').split(',').map(Number);
// BENCH_EMBEDDER=use: a real sentence encoder instead of the fake bag of words (hybrid only).
const realEmbedder = process.env.BENCH_EMBEDDER === 'use';
const embedder = withHybrid ? await (realEmbedder ? sentenceEncoder() : fakeEmbedder()) : undefined;
const embedderName = realEmbedder ? 'Universal Sentence Encoder' : 'fake embedder';
const weights = (process.env.BENCH_VECTOR_WEIGHTS ?? '1,0.5,0.3,0.2,0.1').split(',').map(Number);

const { corpus: fullCorpus, judged, qrels } = loadSciFact();
// BENCH_DOCS=n: every judged document plus the first others up to n in all (a smaller store;
// its figures compare with each other, not with the full corpus's).
const relevant = new Set([...qrels.values()].flatMap((docs) => [...docs]));
const limitDocs = Number(process.env.BENCH_DOCS ?? Number.POSITIVE_INFINITY);
const corpus = fullCorpus.filter(
  (doc, i) => relevant.has(doc._id) || i < limitDocs - relevant.size,
);

const evaluate = (rankings: Map<string, string[]>) => scoreAt10(rankings, judged, qrels);

/** The baseline: textbook BM25 over whole documents (title + abstract), in memory. */
function baseline(): Map<string, string[]> {
  const k1 = 0.9;
  const b = 0.4;
  const tokens = (text: string) =>
    (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((word) => !STOP_WORDS.has(word));
  const postings = new Map<string, Map<string, number>>();
  const lengths = new Map<string, number>();
  for (const doc of corpus) {
    const words = tokens(`${doc.title} ${doc.text}`);
    lengths.set(doc._id, words.length);
    for (const word of words) {
      const list = postings.get(word) ?? new Map<string, number>();
      postings.set(word, list);
      list.set(doc._id, (list.get(doc._id) ?? 0) + 1);
    }
  }
  const n = corpus.length;
  const avgdl = [...lengths.values()].reduce((a, c) => a + c, 0) / n;
  const rankings = new Map<string, string[]>();
  for (const query of judged) {
    const scores = new Map<string, number>();
    for (const word of new Set(tokens(query.text))) {
      const list = postings.get(word);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.size + 0.5) / (list.size + 0.5));
      for (const [doc, tf] of list) {
        const norm = tf + k1 * (1 - b + (b * (lengths.get(doc) as number)) / avgdl);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (k1 + 1)) / norm);
      }
    }
    rankings.set(
      query._id,
      [...scores]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 10)
        .map(([doc]) => doc),
    );
  }
  return rankings;
}

async function parley(maxTokens: number, overlapTokens: number, hybrid: boolean) {
  const store = await openBenchStore(
    engine,
    { maxTokens, overlapTokens },
    hybrid ? embedder : undefined,
  );
  try {
    const started = performance.now();
    // Stored without the embedding indexer, then embedded all at once (embedAllChunks): the
    // vectors are the same, stored by the same VectorStore.
    const chunks = await storeCorpus(store.withPostingsPerTerm(caps[0] as number), corpus);
    process.stderr.write(
      `stored ${chunks} chunks in ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
    );
    if (hybrid && embedder) await embedAllChunks(store, embedder);
    const ingestSeconds = (performance.now() - started) / 1000;
    const runs = [
      ...caps.map((cap) => ({ cap, weight: 0, service: store.withPostingsPerTerm(cap) })),
      ...(hybrid
        ? weights.map((weight) => ({ cap: 0, weight, service: store.withVectorWeight(weight) }))
        : []),
    ];
    const results = [];
    for (const { cap, weight, service } of runs) {
      const rankings = new Map<string, string[]>();
      let retrieval = '';
      for (const query of judged) {
        // Documents are ranked by their best chunk: ask for enough chunks to fill ten.
        const result = await service.search(query.text, { limit: 40 });
        retrieval = result.retrieval;
        rankings.set(query._id, topDocuments(result.hits));
      }
      results.push({ ...evaluate(rankings), chunks, ingestSeconds, retrieval, cap, weight });
      process.stderr.write(
        `${retrieval} cap ${cap} weight ${weight}: ${JSON.stringify(results.at(-1))}\n`,
      );
    }
    return results;
  } finally {
    await store.close();
  }
}

const lines = [
  `## Retrieval quality: SciFact train (${judged.length} judged queries, ${corpus.length} documents), ${engine} engine`,
  '',
  '```',
  machineReport(),
  `command: node bench/retrieval-quality.ts ${process.argv.slice(2).join(' ')}`,
  '```',
  '',
  '| retrieval | chunking (max/overlap tokens) | chunks | nDCG@10 | Recall@10 | ingest s |',
  '| --- | --- | --- | --- | --- | --- |',
];
const base = evaluate(baseline());
lines.push(
  `| baseline BM25 (whole documents, in memory) | – | ${corpus.length} | ${base.ndcg.toFixed(3)} | ${base.recall.toFixed(3)} | – |`,
);
for (const { maxTokens, overlapTokens } of chunkings) {
  for (const result of await parley(maxTokens, overlapTokens, withHybrid)) {
    const name =
      result.retrieval === 'hybrid'
        ? `Parley hybrid (${embedderName}), vector weight ${result.weight}`
        : `Parley ${withHybrid ? 'lexical' : 'default'} (${result.retrieval})${caps.length > 1 || withHybrid ? `, ${result.cap} postings/term` : ''}`;
    lines.push(
      `| ${name} | ${maxTokens}/${overlapTokens} | ${result.chunks} | ${result.ndcg.toFixed(3)} | ${result.recall.toFixed(3)} | ${result.ingestSeconds.toFixed(1)} |`,
    );
    process.stderr.write(`${lines.at(-1)}\n`);
  }
}
console.log(lines.join('\n'));

/**
 * Benchmark 2: Korean retrieval, through the real DocumentService (chunking, postings, BM25
 * in the database), each paragraph stored as its own TXT source as `POST /ingest` stores it.
 *
 * - `encyclopedia`: 460 synthetic encyclopedia paragraphs (168–579 characters) with one
 *   question each, written against that paragraph in other words (bench/korean-set/).
 *   Baseline: plain BM25 over the Hangul character bigrams of whole paragraphs, no chunking.
 * - `particles`: 20 short passages whose key words carry other particles in the question
 *   (`서울에서` / `서울의`). Baseline: BM25 over whitespace tokens.
 *
 * Measured: the question's paragraph first, among the 5 chunks `search_documents` returns
 * by default (SEARCH_TOP_K), and among the first 5 distinct sources of 20 chunks.
 *
 *   BENCH_CHUNKS=256/32,512/64 BENCH_CAPS=500,5000 node bench/korean-retrieval.ts [embedded|server]
 */
import { readFileSync } from 'node:fs';
import { HANGUL_PER_TOKEN } from '../src/documents/chunker.ts';
import { lexicalTerms } from '../src/documents/lexical-terms.ts';
import { BM25 } from '../src/storage/lexical-index.ts';
import { openBenchStore } from './support/document-store.ts';
import { machineReport } from './support/machine.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';
/** `max/overlap[/Hangul syllables per token]`, as ChunkingOptions. */
const chunkings = (process.env.BENCH_CHUNKS ?? '256/32').split(',').map((spec) => {
  const [maxTokens, overlapTokens, hangulPerToken] = spec.split('/').map(Number) as number[];
  return { maxTokens: maxTokens as number, overlapTokens: overlapTokens as number, hangulPerToken };
});
const caps = (process.env.BENCH_CAPS ?? '500').split(',').map(Number);

interface Case {
  text: string;
  question: string;
}
const data = (name: string) => readFileSync(new URL(`korean-set/${name}`, import.meta.url), 'utf8');
const SETS: {
  name: string;
  cases: Case[];
  baseline: string;
  tokens: (text: string) => string[];
}[] = [
  {
    name: 'encyclopedia',
    cases: data('encyclopedia.jsonl')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Case),
    baseline: 'BM25 over character bigrams of whole paragraphs',
    tokens: lexicalTerms,
  },
  {
    name: 'particles',
    cases: (JSON.parse(data('particles.json')) as { passage: string; question: string }[]).map(
      (c) => ({ text: c.passage, question: c.question }),
    ),
    baseline: 'BM25 over whitespace tokens',
    tokens: (text) =>
      text
        .toLowerCase()
        .split(/[\s.,?!]+/)
        .filter(Boolean),
  },
];

/** Plain BM25 (Parley's k1 and b) over whole passages: the share whose passage is in the top k. */
function baselineRecall(cases: Case[], tokens: (text: string) => string[], k: number): number {
  return baselineRanks(cases, tokens).filter((rank) => rank < k).length / cases.length;
}

/** Where plain BM25 ranks each question's passage (0 = first; Infinity = not matched). */
function baselineRanks(cases: Case[], tokens: (text: string) => string[]): number[] {
  const docs = cases.map((c) => tokens(c.text));
  const avgdl = docs.reduce((sum, doc) => sum + doc.length, 0) / docs.length;
  const df = new Map<string, number>();
  for (const doc of docs) for (const term of new Set(doc)) df.set(term, (df.get(term) ?? 0) + 1);
  return cases.map((c, expected) => {
    const query = tokens(c.question);
    const scores = docs.map((doc) => {
      let score = 0;
      for (const term of query) {
        const tf = doc.filter((t) => t === term).length;
        if (!tf) continue;
        const n = df.get(term) ?? 0;
        const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
        score +=
          (idf * tf * (BM25.k1 + 1)) /
          (tf + BM25.k1 * (1 - BM25.b + (BM25.b * doc.length) / avgdl));
      }
      return score;
    });
    const rank = scores
      .map((score, i) => ({ score, i }))
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .findIndex((x) => x.i === expected);
    return rank < 0 ? Number.POSITIVE_INFINITY : rank;
  });
}

const rows: string[] = [];
for (const set of SETS) {
  const n = set.cases.length;
  rows.push(
    `| ${set.name} (${n}) | ${set.baseline} (baseline) | – | ${baselineRecall(set.cases, set.tokens, 1).toFixed(3)} | ${baselineRecall(set.cases, set.tokens, 5).toFixed(3)} | – |`,
  );
  for (const chunking of chunkings) {
    const store = await openBenchStore(engine, chunking);
    try {
      let chunks = 0;
      for (const [i, c] of set.cases.entries()) {
        chunks += (
          await store.service.ingest({
            source: `ko/${i}.txt`,
            filename: `${i}.txt`,
            contentType: 'text/plain',
            bytes: Buffer.byteLength(c.text),
            document: { kind: 'text', pages: [{ page: null, text: c.text }], ocrPages: [] },
          })
        ).chunks;
      }
      for (const cap of caps) {
        const service = store.withPostingsPerTerm(cap);
        let first = 0;
        let inTop5 = 0;
        let inFirst5Sources = 0;
        for (const [i, c] of set.cases.entries()) {
          const { hits } = await service.search(c.question, { limit: 20 });
          const source = `ko/${i}.txt`;
          if (hits[0]?.source === source) first++;
          if (hits.slice(0, 5).some((hit) => hit.source === source)) inTop5++;
          if ([...new Set(hits.map((hit) => hit.source))].slice(0, 5).includes(source)) {
            inFirst5Sources++;
          }
        }
        const label = `Parley, ${chunking.maxTokens}/${chunking.overlapTokens}, ${chunking.hangulPerToken ?? HANGUL_PER_TOKEN} Hangul/token, ${cap} postings/term`;
        rows.push(
          `| ${set.name} (${n}) | ${label} | ${(chunks / n).toFixed(2)} | ${(first / n).toFixed(3)} | ${(inTop5 / n).toFixed(3)} | ${(inFirst5Sources / n).toFixed(3)} |`,
        );
      }
    } finally {
      await store.close();
    }
  }
}

console.log(
  [
    `## Korean retrieval, ${engine} engine`,
    '',
    '```',
    machineReport(),
    `command: BENCH_CHUNKS=${process.env.BENCH_CHUNKS ?? ''} BENCH_CAPS=${process.env.BENCH_CAPS ?? ''} node bench/korean-retrieval.ts ${process.argv.slice(2).join(' ')}`,
    '```',
    '',
    '| set | retrieval | chunks per paragraph | first (Recall@1) | in the 5 chunks returned (Recall@5) | in the first 5 sources of 20 chunks |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n'),
);

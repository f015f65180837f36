/**
 * Supporting (issue 9): how hybrid fusion behaves over its whole range, on SciFact (train,
 * 809 queries). Stores the corpus through the real DocumentService, embeds every chunk with
 * the fake bag of words or (`use`) the Universal Sentence Encoder into the real VectorStore,
 * then keeps, per query, the two lists Parley's search fuses: BM25's and the vectors' top 50
 * (the real repository and vector store). Those lists are scored with Parley's fusion
 * (`fuseByScore`) at every vector share, and, for comparison, with weighted reciprocal rank
 * fusion (k = 60) written here, which Parley used before.
 *
 *   node bench/fusion-grid.ts [fake|use] [lists.json]
 *
 * Storing and embedding take ~10 min (fake) to ~40 min (use); with `lists.json` the lists
 * are kept there, and a later run that finds the file only scores them again.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { lexicalTerms, termFrequencies } from '../src/documents/lexical-terms.ts';
import { fuseByScore } from '../src/documents/score-fusion.ts';
import type { ChunkHit } from '../src/storage/chunk-hit.ts';
import { DocumentRepository, SHARED } from '../src/storage/document-repository.ts';
import { VectorStore } from '../src/storage/vector-store.ts';
import { embedAllChunks, fakeEmbedder, openBenchStore } from './support/document-store.ts';
import { machineReport } from './support/machine.ts';
import { loadSciFact, scoreAt10, storeCorpus, topDocuments } from './support/scifact.ts';
import { sentenceEncoder } from './support/sentence-encoder.ts';

const which = process.argv[2] === 'use' ? 'use' : 'fake';
const listsFile = process.argv[3];
const DEPTH = 50; // FUSION_DEPTH in document-service.ts

/** One hit as kept: chunk id, source (the SciFact document), score. */
type Kept = [number, string, number];
interface QueryLists {
  relevant: string[];
  lexical: Kept[];
  vector: Kept[];
}

async function collectLists(): Promise<QueryLists[]> {
  const { corpus, judged, qrels } = loadSciFact();
  const embedder = which === 'use' ? await sentenceEncoder() : fakeEmbedder();
  const store = await openBenchStore('embedded', { maxTokens: 256, overlapTokens: 32 }, embedder);
  try {
    await storeCorpus(store.service, corpus);
    await embedAllChunks(store, embedder);
    const vectors = new VectorStore(store.database.db);
    const repository = new DocumentRepository(store.database.db);
    const keep = (hit: ChunkHit): Kept => [hit.chunkId, hit.source, hit.score];
    const lists: QueryLists[] = [];
    for (const query of judged) {
      const relevant = [...(qrels.get(query._id) ?? [])];
      const terms = termFrequencies(lexicalTerms(query.text));
      const vector = await embedder.embedQuery(query.text);
      lists.push({
        relevant,
        lexical: (await repository.searchLexical(terms, [SHARED], DEPTH)).map(keep),
        vector: (await vectors.search(embedder.id, vector, [SHARED], DEPTH)).map(keep),
      });
    }
    return lists;
  } finally {
    await store.close();
  }
}

const lists =
  listsFile && existsSync(listsFile)
    ? (JSON.parse(readFileSync(listsFile, 'utf8')) as QueryLists[])
    : await collectLists();
if (listsFile && !existsSync(listsFile)) writeFileSync(listsFile, JSON.stringify(lists));

const asHits = (kept: Kept[]): ChunkHit[] =>
  kept.map(([chunkId, source, score]) => ({
    chunkId,
    source,
    score,
    chunkIndex: 0,
    page: null,
    content: '',
    metadata: {},
  }));

/** nDCG@10 and Recall@10 of documents ranked by their best chunk, as retrieval-quality. */
function evaluate(rank: (lexical: ChunkHit[], vector: ChunkHit[]) => ChunkHit[]) {
  const rankings = new Map<string, string[]>();
  const qrels = new Map<string, Set<string>>();
  lists.forEach((query, i) => {
    rankings.set(String(i), topDocuments(rank(asHits(query.lexical), asHits(query.vector))));
    qrels.set(String(i), new Set(query.relevant));
  });
  const { ndcg, recall } = scoreAt10(
    rankings,
    [...qrels.keys()].map((_id) => ({ _id })),
    qrels,
  );
  return `${ndcg.toFixed(3)} | ${recall.toFixed(3)}`;
}

/** Weighted reciprocal rank fusion (k = 60): what Parley did before `fuseByScore`. */
const reciprocalRank =
  (weight: number) =>
  (lexical: ChunkHit[], vector: ChunkHit[]): ChunkHit[] => {
    const fused = new Map<number, ChunkHit>();
    for (const [hits, w] of [
      [lexical, 1],
      [vector, weight],
    ] as const) {
      hits.forEach((hit, rank) => {
        const seen = fused.get(hit.chunkId);
        fused.set(hit.chunkId, { ...(seen ?? hit), score: (seen?.score ?? 0) + w / (61 + rank) });
      });
    }
    return [...fused.values()].sort((a, b) => b.score - a.score || a.chunkId - b.chunkId);
  };

const name = which === 'use' ? 'Universal Sentence Encoder' : 'fake bag-of-words embedder';
const out = [
  `## fusion-grid: SciFact train (${lists.length} judged queries), ${name}, embedded engine`,
  '',
  '```',
  machineReport(),
  `command: node bench/fusion-grid.ts ${process.argv.slice(2).join(' ')}`,
  '```',
  '',
  '| ranking | nDCG@10 | Recall@10 |',
  '| --- | ---: | ---: |',
  `| BM25 alone (Parley lexical) | ${evaluate((lexical) => lexical)} |`,
  `| vectors alone | ${evaluate((_, vector) => vector)} |`,
];
for (const share of [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) {
  const fuse = (lexical: ChunkHit[], vector: ChunkHit[]) =>
    fuseByScore(
      [
        // As DocumentService: BM25 is complete when it found fewer chunks than asked for.
        { hits: lexical, weight: 1 - share, floor: 0, complete: lexical.length < DEPTH },
        { hits: vector, weight: share, floor: -1, complete: false },
      ],
      40,
    );
  out.push(`| Parley's fusion by scores, vector share ${share} | ${evaluate(fuse)} |`);
}
for (const weight of [1, 0.5, 0.3, 0.1]) {
  out.push(
    `| reciprocal rank fusion, vector weight ${weight} | ${evaluate(reciprocalRank(weight))} |`,
  );
}
console.log(out.join('\n'));

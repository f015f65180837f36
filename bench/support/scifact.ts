import { readFileSync } from 'node:fs';
import type { DocumentService } from '../../src/documents/document-service.ts';
import type { ChunkHit } from '../../src/storage/chunk-hit.ts';

/** SciFact (BEIR), train split, from ../shared/data/scifact (see its SOURCES.md). */
const DATA = new URL('../../../shared/data/scifact/', import.meta.url);

export interface SciFactDoc {
  _id: string;
  title: string;
  text: string;
}
export interface SciFactQuery {
  _id: string;
  text: string;
}

export interface SciFact {
  corpus: SciFactDoc[];
  /** The queries that have judged documents (809 of the train split). */
  judged: SciFactQuery[];
  /** Query id → its relevant document ids. */
  qrels: Map<string, Set<string>>;
}

export function loadSciFact(): SciFact {
  const qrels = new Map<string, Set<string>>();
  for (const line of readFileSync(new URL('qrels-train.tsv', DATA), 'utf8').split('\n').slice(1)) {
    const [query, doc] = line.split('\t');
    if (!query || !doc) continue;
    if (!qrels.has(query)) qrels.set(query, new Set());
    qrels.get(query)?.add(doc);
  }
  const queries = readJsonl<SciFactQuery>('queries-train.jsonl');
  return {
    corpus: readJsonl<SciFactDoc>('corpus.jsonl'),
    judged: queries.filter((query) => qrels.has(query._id)),
    qrels,
  };
}

function readJsonl<T>(name: string): T[] {
  return readFileSync(new URL(name, DATA), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

/** Stores each document as its own source (title as a heading); returns the chunk count. */
export async function storeCorpus(
  service: DocumentService,
  corpus: readonly SciFactDoc[],
): Promise<number> {
  let chunks = 0;
  for (const doc of corpus) {
    const text = `# ${doc.title}\n\n${doc.text}`;
    const result = await service.ingest({
      source: doc._id,
      filename: `${doc._id}.txt`,
      contentType: 'text/plain',
      bytes: Buffer.byteLength(text),
      document: { kind: 'markdown', pages: [{ page: null, text }], ocrPages: [] },
    });
    chunks += result.chunks;
  }
  return chunks;
}

/** Documents ranked by their best chunk, first ten. */
export function topDocuments(hits: readonly ChunkHit[]): string[] {
  const docs: string[] = [];
  for (const hit of hits) if (!docs.includes(hit.source)) docs.push(hit.source);
  return docs.slice(0, 10);
}

/** nDCG@10 and Recall@10 of ranked document ids (query id → ids), averaged over `queries`. */
export function scoreAt10(
  rankings: ReadonlyMap<string, readonly string[]>,
  queries: readonly { _id: string }[],
  qrels: ReadonlyMap<string, ReadonlySet<string>>,
): { ndcg: number; recall: number } {
  let ndcg = 0;
  let recall = 0;
  for (const query of queries) {
    const relevant = qrels.get(query._id) ?? new Set<string>();
    const ranked = (rankings.get(query._id) ?? []).slice(0, 10);
    let dcg = 0;
    ranked.forEach((doc, i) => {
      if (relevant.has(doc)) dcg += 1 / Math.log2(i + 2);
    });
    let ideal = 0;
    for (let i = 0; i < Math.min(relevant.size, 10); i++) ideal += 1 / Math.log2(i + 2);
    ndcg += dcg / ideal;
    recall += ranked.filter((doc) => relevant.has(doc)).length / relevant.size;
  }
  return { ndcg: ndcg / queries.length, recall: recall / queries.length };
}

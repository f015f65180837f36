import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentService } from '../../src/documents/document-service.ts';
import type { Database } from '../../src/storage/database.ts';
import { BM25 } from '../../src/storage/lexical-index.ts';
import { openDocumentService, textDocument } from '../support/document-store.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';

/**
 * BM25 as the database computes it, against the formula worked out by hand on a corpus small
 * enough to count: a query term given twice counts twice, a term's document frequency and the
 * corpus's size and average length add up over the owners searched (the shared documents and
 * the user's own), and a user's private document is not counted in another user's search.
 * Words are ones the stemmer leaves as they are and no stop-word, so a chunk's terms are its
 * words.
 */
const SHARED_DOCS = ['zebra zebra kiwi', 'kiwi lemon mango tiger', 'lemon lemon lemon'];
const PRIVATE_DOC = 'zebra lemon';

interface Doc {
  words: string[];
}

/** BM25 of `doc` for the query's terms, over `corpus` (k1 and b as shipped). */
function bm25(query: string[], doc: Doc, corpus: Doc[]): number {
  const { k1, b } = BM25;
  const n = corpus.length;
  const avgdl = corpus.reduce((sum, d) => sum + d.words.length, 0) / n;
  let score = 0;
  for (const term of new Set(query)) {
    const qtf = query.filter((q) => q === term).length;
    const df = corpus.filter((d) => d.words.includes(term)).length;
    const tf = doc.words.filter((w) => w === term).length;
    if (df === 0 || tf === 0) continue;
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
    score += (qtf * idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * doc.words.length) / avgdl));
  }
  return score;
}

const docs = (texts: string[]): Doc[] => texts.map((text) => ({ words: text.split(' ') }));

describe.each(ENGINES)('BM25 scores on the %s engine', (engine) => {
  let storage: EngineEnv;
  let dataDir: string;
  let service: DocumentService;
  let database: Database;

  beforeAll(async () => {
    storage = await engineEnv(engine);
    dataDir = mkdtempSync(join(tmpdir(), 'parley-bm25-'));
    ({ service, database } = await openDocumentService({
      dataDir,
      databaseUrl: storage.env.DATABASE_URL,
    }));
    for (const [i, text] of SHARED_DOCS.entries()) {
      await service.ingest(textDocument(`shared-${i}.txt`, [text]));
    }
    await service.ingest(textDocument('private.txt', [PRIVATE_DOC]), undefined, 'uma');
  }, 120_000);
  afterAll(async () => {
    await database?.close();
    await storage?.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const scores = async (query: string, userId?: string) => {
    const { retrieval, hits } = await service.search(query, { limit: 10, userId });
    expect(retrieval).toBe('lexical');
    return new Map(hits.map((hit) => [hit.content, hit.score]));
  };

  it('scores the shared documents as the formula does, a repeated query term counting twice', async () => {
    const query = ['zebra', 'zebra', 'lemon'];
    const found = await scores(query.join(' '));
    const corpus = docs(SHARED_DOCS);
    // Every document with a query term, and only those.
    expect([...found.keys()].sort()).toEqual(
      ['zebra zebra kiwi', 'kiwi lemon mango tiger', 'lemon lemon lemon'].sort(),
    );
    for (const [i, text] of SHARED_DOCS.entries()) {
      expect(found.get(text), text).toBeCloseTo(bm25(query, corpus[i] as Doc, corpus), 9);
    }
  });

  it("counts the user's own document into the statistics of that user's search only", async () => {
    const query = ['zebra', 'lemon'];
    const corpus = docs([...SHARED_DOCS, PRIVATE_DOC]);
    const own = await scores(query.join(' '), 'uma');
    expect(own.get(PRIVATE_DOC)).toBeCloseTo(bm25(query, corpus[3] as Doc, corpus), 9);
    expect(own.get('zebra zebra kiwi')).toBeCloseTo(bm25(query, corpus[0] as Doc, corpus), 9);

    const other = await scores(query.join(' '), 'someone-else');
    const shared = docs(SHARED_DOCS);
    expect(other.has(PRIVATE_DOC)).toBe(false);
    expect(other.get('zebra zebra kiwi')).toBeCloseTo(bm25(query, shared[0] as Doc, shared), 9);
  });

  it('finds nothing for a query none of whose terms is in the corpus', async () => {
    expect((await scores('quokka')).size).toBe(0);
  });
});

import pino from 'pino';
import { parseConfig } from '../../src/config.ts';
import { DocumentService } from '../../src/documents/document-service.ts';
import type { IngestInput } from '../../src/documents/extracted-document.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import { DocumentRepository } from '../../src/storage/document-repository.ts';
import { HIDDEN } from '../../src/storage/hidden-documents.ts';
import { POSTINGS_PER_TERM } from '../../src/storage/lexical-index.ts';

/**
 * The real DocumentService on a real database, in the test's process: the seam before
 * POST /ingest exists on this branch (ingestion is built on another one).
 */
export async function openDocumentService(target: {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** Chunks a transaction for large documents (the repository's own default otherwise). */
  batchChunks?: number | undefined;
}): Promise<{ service: DocumentService; database: Database }> {
  const database = await openDatabase(
    parseConfig({ DATA_DIR: target.dataDir, DATABASE_URL: target.databaseUrl, DB_POOL_MAX: '4' }),
    pino({ level: 'silent' }),
  );
  const service = new DocumentService({
    documents:
      target.batchChunks === undefined
        ? new DocumentRepository(database.db)
        : new DocumentRepository(database.db, POSTINGS_PER_TERM, target.batchChunks),
    chunking: { maxTokens: 64, overlapTokens: 0 },
    logger: pino({ level: 'silent' }),
    verbose: false,
  });
  return { service, database };
}

/** A text document of `paragraphs` paragraphs, each its own chunk at 64 tokens. */
export function textDocument(source: string, paragraphs: string[]): IngestInput {
  const text = paragraphs.join('\n\n');
  return {
    source,
    filename: source,
    contentType: 'text/plain',
    bytes: Buffer.byteLength(text),
    document: { kind: 'text', pages: [{ page: null, text }], ocrPages: [] },
  };
}

/**
 * Whether the lexical index agrees with the chunks: no posting without its chunk, and the
 * statistics BM25 reads equal what they summarise. Empty when consistent.
 */
export async function indexInconsistencies(database: Database): Promise<string[]> {
  // The statistics count visible documents only: a hidden one (a large version being written,
  // or a replaced one being deleted, see src/storage/hidden-documents.ts) is outside them.
  const { rows } = await database.db.$client.query<{ problem: string }>(`
    WITH visible AS (
      SELECT c.* FROM chunks c JOIN documents d ON d.id = c.document_id AND d.kind <> '${HIDDEN}'
    )
    SELECT 'orphan postings' AS problem
    WHERE EXISTS (SELECT 1 FROM chunk_terms t WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = t.chunk_id))
    UNION ALL
    SELECT 'chunk_count differs for ' || d.source FROM documents d
    WHERE d.kind <> '${HIDDEN}'
      AND d.chunk_count <> (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)
    UNION ALL
    SELECT 'corpus_stats differ for owner ' || s.owner FROM corpus_stats s
    WHERE s.chunks <> (SELECT count(*) FROM visible c WHERE c.owner = s.owner)
       OR s.terms <> (SELECT coalesce(sum(term_count), 0) FROM visible c WHERE c.owner = s.owner)
    UNION ALL
    SELECT 'df differs for ' || s.term FROM term_stats s
    WHERE s.df <> (SELECT count(*) FROM chunk_terms t JOIN visible c ON c.id = t.chunk_id
                   WHERE t.owner = s.owner AND t.term = s.term)
  `);
  return rows.map((row) => row.problem);
}

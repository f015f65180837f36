import type pg from 'pg';
import type { ChunkHit } from './chunk-hit.ts';
import type { Db } from './database.ts';
import { POSTINGS_PER_TERM, removePostings, searchBm25, writePostings } from './lexical-index.ts';
import { withTransaction } from './transaction.ts';
import { pruneOrphanVectors } from './vector-store.ts';

/** Owner of shared documents; a user's own rows carry the user id (never empty). */
export const SHARED = '';

export interface NewDocument {
  source: string;
  owner: string;
  kind: 'document' | 'conversation';
  filename: string | null;
  contentType: string | null;
  bytes: number | null;
}

export interface ListedSource {
  source: string;
  /** Owned by a user, not shared. */
  private: boolean;
}

export interface OwnedSource {
  source: string;
  createdAt: Date;
  /** The source's chunks joined in order. */
  text: string;
}

export interface NewChunk {
  content: string;
  contentHash: string;
  page: number | null;
  metadata: Record<string, unknown>;
  /** Lexical term → count in this chunk. */
  terms: ReadonlyMap<string, number>;
  termCount: number;
}

/** A serialising key for every write to the lexical index (its statistics are shared rows). */
const INDEX_WRITE_LOCK = 0x646f6373; // "docs"

/**
 * Sources, their chunks and the lexical (BM25) index over them. Uploaded documents are
 * shared by all users; rows owned by a user are only ever read with that user's id.
 */
export class DocumentRepository {
  readonly #db: Db;

  readonly #postingsPerTerm: number;

  /** `postingsPerTerm`: see POSTINGS_PER_TERM (benchmarks vary it). */
  constructor(db: Db, postingsPerTerm = POSTINGS_PER_TERM) {
    this.#db = db;
    this.#postingsPerTerm = postingsPerTerm;
  }

  /**
   * The document sources of these owners (shared: SHARED), each name once, in order, and
   * whether one of them belongs to a user (a user's private copy of a name also shared counts).
   */
  async listSources(owners: readonly string[] = [SHARED]): Promise<ListedSource[]> {
    const { rows } = await this.#db.$client.query<ListedSource>(
      `SELECT source, bool_or(owner <> '') AS private FROM documents
        WHERE owner = ANY($1::text[]) AND kind = 'document'
        GROUP BY source ORDER BY source`,
      [owners],
    );
    return rows.map((row) => ({ source: row.source, private: row.private }));
  }

  async hasSource(owner: string, source: string): Promise<boolean> {
    const { rows } = await this.#db.$client.query(
      `SELECT 1 FROM documents WHERE owner = $1 AND source = $2 AND kind = 'document'`,
      [owner, source],
    );
    return rows.length > 0;
  }

  /** Deletes a shared source with its chunks and postings. False for an unknown source. */
  deleteSource(source: string): Promise<boolean> {
    return withTransaction(this.#db.$client, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [INDEX_WRITE_LOCK]);
      const removed = await removeDocument(client, SHARED, source);
      if (removed) await pruneOrphanVectors(client, removed);
      return removed !== undefined;
    });
  }

  /** A user's own sources of one kind (conversation memories), newest first, with their text. */
  async listOwned(owner: string, kind: NewDocument['kind']): Promise<OwnedSource[]> {
    if (owner === SHARED) throw new Error('owned sources belong to a user');
    const { rows } = await this.#db.$client.query<{
      source: string;
      created_at: Date;
      content: string | null;
    }>(
      `SELECT d.source, d.created_at,
              (SELECT string_agg(c.content, ' ' ORDER BY c.chunk_index)
               FROM chunks c WHERE c.document_id = d.id) AS content
       FROM documents d WHERE d.owner = $1 AND d.kind = $2
       ORDER BY d.created_at DESC, d.id DESC`,
      [owner, kind],
    );
    return rows.map((row) => ({
      source: row.source,
      createdAt: row.created_at,
      text: row.content ?? '',
    }));
  }

  /**
   * Deletes a user's own sources of one kind: one (`source`), several, or all of them. Returns
   * how many went.
   */
  deleteOwned(
    owner: string,
    kind: NewDocument['kind'],
    source?: string | readonly string[],
  ): Promise<number> {
    if (owner === SHARED) throw new Error('owned sources belong to a user');
    const sources = source === undefined ? null : typeof source === 'string' ? [source] : source;
    if (sources?.length === 0) return Promise.resolve(0);
    return withTransaction(this.#db.$client, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [INDEX_WRITE_LOCK]);
      const { rows } = await client.query<{ source: string }>(
        `SELECT source FROM documents WHERE owner = $1 AND kind = $2
         AND ($3::text[] IS NULL OR source = ANY($3::text[])) ORDER BY id`,
        [owner, kind, sources],
      );
      const removed: string[] = [];
      for (const row of rows)
        removed.push(...((await removeDocument(client, owner, row.source)) ?? []));
      await pruneOrphanVectors(client, removed);
      return rows.length;
    });
  }

  /**
   * Replaces a source (owner + name) with a new set of chunks in one transaction: a search
   * running meanwhile sees the old set or the new one, a crash leaves the old one, and two
   * replacements of one source run one after the other, the later one winning. Returns the
   * number of chunks stored. Aborting before the commit stores nothing.
   */
  replaceSource(
    document: NewDocument,
    chunks: readonly NewChunk[],
    signal?: AbortSignal,
  ): Promise<number> {
    return withTransaction(this.#db.$client, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [INDEX_WRITE_LOCK]);
      const replaced = await removeDocument(client, document.owner, document.source);
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO documents (source, owner, kind, filename, content_type, bytes, chunk_count)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
        [
          document.source,
          document.owner,
          document.kind,
          document.filename,
          document.contentType,
          document.bytes,
          chunks.length,
        ],
      );
      const documentId = Number(inserted.rows[0]?.id);
      if (chunks.length > 0) await insertChunks(client, documentId, document.owner, chunks);
      // After the new chunks are in: a paragraph the new version kept keeps its vector.
      if (replaced) await pruneOrphanVectors(client, replaced);
      signal?.throwIfAborted();
      return chunks.length;
    });
  }

  /** BM25 over the chunks the owners may see, best first (see lexical-index.ts). */
  searchLexical(
    terms: ReadonlyMap<string, number>,
    owners: readonly string[],
    limit: number,
  ): Promise<ChunkHit[]> {
    return searchBm25(this.#db, terms, owners, limit, this.#postingsPerTerm);
  }
}

/**
 * Removes one source, its chunks and its postings. Returns the content hashes its chunks had
 * (for pruneOrphanVectors), or undefined when there is no such source.
 */
async function removeDocument(
  client: pg.PoolClient,
  owner: string,
  source: string,
): Promise<string[] | undefined> {
  const found = await client.query<{ id: string }>(
    'SELECT id FROM documents WHERE owner = $1 AND source = $2',
    [owner, source],
  );
  const id = found.rows[0]?.id;
  if (id === undefined) return undefined;
  await removePostings(client, owner, id);
  const { rows } = await client.query<{ content_hash: string }>(
    'SELECT DISTINCT content_hash FROM chunks WHERE document_id = $1',
    [id],
  );
  await client.query('DELETE FROM documents WHERE id = $1', [id]);
  return rows.map((row) => row.content_hash);
}

async function insertChunks(
  client: pg.PoolClient,
  documentId: number,
  owner: string,
  chunks: readonly NewChunk[],
): Promise<void> {
  const { rows } = await client.query<{ id: string; chunk_index: number }>(
    `INSERT INTO chunks (document_id, owner, chunk_index, content, content_hash, page, term_count, metadata)
     SELECT $1, $2, * FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::int[], $8::jsonb[])
     RETURNING id, chunk_index`,
    [
      documentId,
      owner,
      chunks.map((_, index) => index),
      chunks.map((chunk) => chunk.content),
      chunks.map((chunk) => chunk.contentHash),
      chunks.map((chunk) => chunk.page),
      chunks.map((chunk) => chunk.termCount),
      chunks.map((chunk) => JSON.stringify(chunk.metadata)),
    ],
  );
  const ids = new Map(rows.map((row) => [row.chunk_index, Number(row.id)]));
  await writePostings(client, owner, chunks, (index) => ids.get(index) as number);
}

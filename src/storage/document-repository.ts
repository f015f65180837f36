import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { ChunkHit } from './chunk-hit.ts';
import type { Db } from './database.ts';
import { HIDDEN, hiddenSource } from './hidden-documents.ts';
import {
  averageLengthWith,
  countIntoStatistics,
  POSTINGS_PER_TERM,
  removePostings,
  searchBm25,
  subtractFromStatistics,
  writePostings,
} from './lexical-index.ts';
import { withTransaction } from './transaction.ts';
import { storedBytesOf } from './usage-repository.ts';
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

/**
 * A user's storage limit, checked again when a private document becomes visible: uploads of
 * one user admitted together each counted only what was stored before them, and all were kept
 * (four of 0.6 MB under a limit of 1 MB). The transactions that make documents visible take
 * turns (INDEX_WRITE_LOCK), so there the count includes every upload that came first.
 */
export interface StorageCap {
  maxBytes: number;
  /** The error an upload that does not fit fails with (the limit's own 429). */
  refusal(): Error;
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
 * Chunks written per transaction. On the embedded engine every query waits for the one
 * connection while a transaction holds it: a 2 MB text (2,300 chunks, 150,000 postings) in one
 * transaction held it 6–10 s, and six such uploads queued a chat for 40 s and an upload past
 * the pool's 60 s wait. 128 chunks (about 8,000 postings) hold it a fraction of a second.
 */
export const WRITE_BATCH_CHUNKS = 128;

/**
 * A hidden row left this long is a crashed ingestion's (a large one writes for minutes; on the
 * server engine another replica may be writing one now, so a younger row is never taken).
 */
const ABANDONED_AFTER = '1 hour';

/**
 * Sources, their chunks and the lexical (BM25) index over them. Uploaded documents are
 * shared by all users; rows owned by a user are only ever read with that user's id.
 */
export class DocumentRepository {
  readonly #db: Db;

  readonly #postingsPerTerm: number;

  /** `postingsPerTerm`: see POSTINGS_PER_TERM (benchmarks vary it). */
  readonly #batchChunks: number;

  /** `postingsPerTerm`: see POSTINGS_PER_TERM (benchmarks vary it). */
  constructor(db: Db, postingsPerTerm = POSTINGS_PER_TERM, batchChunks = WRITE_BATCH_CHUNKS) {
    this.#db = db;
    this.#postingsPerTerm = postingsPerTerm;
    this.#batchChunks = batchChunks;
  }

  /**
   * The document sources of these owners (shared: SHARED), each name once, in order, and
   * whether one of them belongs to a user (a user's private copy of a name also shared counts).
   * In code-point order (COLLATE "C"), as on the embedded engine, whatever collation the
   * server's database was created with.
   */
  async listSources(owners: readonly string[] = [SHARED]): Promise<ListedSource[]> {
    const { rows } = await this.#db.$client.query<ListedSource>(
      `SELECT source, bool_or(owner <> '') AS private FROM documents
        WHERE owner = ANY($1::text[]) AND kind = 'document'
        GROUP BY source ORDER BY source COLLATE "C"`,
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

  /**
   * Deletes a shared source with its chunks and postings. False for an unknown source. It
   * leaves searches at once; its rows go a batch a transaction.
   */
  async deleteSource(source: string): Promise<boolean> {
    const hidden = await withTransaction(this.#db.$client, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [INDEX_WRITE_LOCK]);
      return hideDocument(client, SHARED, source);
    });
    if (hidden !== undefined) await this.#deleteHidden(hidden);
    return hidden !== undefined;
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
   * Replaces a source (owner + name) with a new set of chunks: a search running meanwhile sees
   * the old set or the new one, a crash leaves the old one, and two replacements of one source
   * run one after the other, the later one winning. Returns the number of chunks stored.
   * Aborting before the new set is visible stores nothing.
   *
   * Up to WRITE_BATCH_CHUNKS chunks are written in one transaction. More are written a batch a
   * transaction under a hidden document row, then made visible (the statistics counted, the
   * old version hidden) in one short transaction; the old version's rows are deleted after,
   * a batch a transaction. No transaction holds a connection long, so other queries (on the
   * embedded engine, every other query) are served between the batches.
   */
  async replaceSource(
    document: NewDocument,
    chunks: readonly NewChunk[],
    signal?: AbortSignal,
    cap?: StorageCap,
  ): Promise<number> {
    if (chunks.length <= this.#batchChunks) {
      return this.#replaceAtOnce(document, chunks, signal, cap);
    }
    const staged = await this.#db.$client.query<{ id: string }>(
      `INSERT INTO documents (source, owner, kind) VALUES ($1, $2, $3) RETURNING id`,
      [hiddenSource(randomUUID()), document.owner, HIDDEN],
    );
    const id = String(staged.rows[0]?.id);
    let visible = false;
    try {
      const avgdl = await withTransaction(this.#db.$client, (client) =>
        averageLengthWith(client, document.owner, chunks),
      );
      for (let from = 0; from < chunks.length; from += this.#batchChunks) {
        signal?.throwIfAborted();
        const batch = chunks.slice(from, from + this.#batchChunks);
        await withTransaction(this.#db.$client, (client) =>
          insertChunks(client, Number(id), document.owner, batch, from, avgdl),
        );
      }
      signal?.throwIfAborted();
      const replaced = await withTransaction(this.#db.$client, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [INDEX_WRITE_LOCK]);
        await assertFits(client, document, cap);
        const old = await hideDocument(client, document.owner, document.source);
        await countIntoStatistics(client, document.owner, chunks);
        await client.query(
          `UPDATE documents SET source = $2, kind = $3, filename = $4, content_type = $5,
                  bytes = $6, chunk_count = $7, created_at = now()
           WHERE id = $1`,
          [
            id,
            document.source,
            document.kind,
            document.filename,
            document.contentType,
            document.bytes,
            chunks.length,
          ],
        );
        return old;
      });
      visible = true;
      if (replaced !== undefined) await this.#deleteHidden(replaced);
      return chunks.length;
    } finally {
      // Left behind if this fails too (the database gone): deleteAbandoned removes it later.
      if (!visible) await this.#deleteHidden(id).catch(() => {});
    }
  }

  async #replaceAtOnce(
    document: NewDocument,
    chunks: readonly NewChunk[],
    signal?: AbortSignal,
    cap?: StorageCap,
  ): Promise<number> {
    const replaced = await withTransaction(this.#db.$client, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [INDEX_WRITE_LOCK]);
      await assertFits(client, document, cap);
      const old = await hideDocument(client, document.owner, document.source);
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
      if (chunks.length > 0) {
        const avgdl = await averageLengthWith(client, document.owner, chunks);
        await insertChunks(client, documentId, document.owner, chunks, 0, avgdl);
        await countIntoStatistics(client, document.owner, chunks);
      }
      signal?.throwIfAborted();
      return old;
    });
    // After the new chunks are in: a paragraph the new version kept keeps its vector.
    if (replaced !== undefined) await this.#deleteHidden(replaced);
    return chunks.length;
  }

  /**
   * Deletes a hidden document's chunks and postings a batch a transaction, then the row (its
   * statistics were never counted, or were subtracted when it was hidden). Vectors no chunk
   * uses any more go with their chunks.
   */
  async #deleteHidden(documentId: string): Promise<void> {
    for (;;) {
      const removed = await withTransaction(this.#db.$client, async (client) => {
        const { rows } = await client.query<{ id: string }>(
          'SELECT id FROM chunks WHERE document_id = $1 ORDER BY id LIMIT $2',
          [documentId, this.#batchChunks],
        );
        if (rows.length === 0) return 0;
        const ids = rows.map((row) => row.id);
        await client.query('DELETE FROM chunk_terms WHERE chunk_id = ANY($1::bigint[])', [ids]);
        const deleted = await client.query<{ content_hash: string }>(
          'DELETE FROM chunks WHERE id = ANY($1::bigint[]) RETURNING content_hash',
          [ids],
        );
        await pruneOrphanVectors(
          client,
          deleted.rows.map((row) => row.content_hash),
        );
        return rows.length;
      });
      if (removed === 0) break;
    }
    await this.#db.$client.query('DELETE FROM documents WHERE id = $1', [documentId]);
  }

  /**
   * Deletes the hidden rows a crash (or a lost connection) left behind, a batch a transaction;
   * returns how many documents they were.
   */
  async deleteAbandoned(): Promise<number> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      `SELECT id FROM documents WHERE kind = $1 AND created_at < now() - $2::interval`,
      [HIDDEN, ABANDONED_AFTER],
    );
    for (const row of rows) await this.#deleteHidden(row.id);
    return rows.length;
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

/** The id of an owner's source, visible or not (hidden rows have sources no upload can take). */
async function documentId(
  client: pg.PoolClient,
  owner: string,
  source: string,
): Promise<string | undefined> {
  const { rows } = await client.query<{ id: string }>(
    'SELECT id FROM documents WHERE owner = $1 AND source = $2',
    [owner, source],
  );
  return rows[0]?.id;
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
  const id = await documentId(client, owner, source);
  if (id === undefined) return undefined;
  await removePostings(client, owner, id);
  const { rows } = await client.query<{ content_hash: string }>(
    'SELECT DISTINCT content_hash FROM chunks WHERE document_id = $1',
    [id],
  );
  await client.query('DELETE FROM documents WHERE id = $1', [id]);
  return rows.map((row) => row.content_hash);
}

/**
 * Hides a visible source in the transaction that makes its replacement visible: out of the
 * statistics and of every search and listing. Returns its id (for #deleteHidden), or undefined
 * when there is no such source.
 */
async function hideDocument(
  client: pg.PoolClient,
  owner: string,
  source: string,
): Promise<string | undefined> {
  const id = await documentId(client, owner, source);
  if (id === undefined) return undefined;
  await subtractFromStatistics(client, owner, id);
  await client.query('UPDATE documents SET kind = $2, source = $3 WHERE id = $1', [
    id,
    HIDDEN,
    hiddenSource(`replaced-${id}`),
  ]);
  return id;
}

/** Inserts chunks numbered from `firstIndex` and their postings (not their statistics). */
async function insertChunks(
  client: pg.PoolClient,
  documentId: number,
  owner: string,
  chunks: readonly NewChunk[],
  firstIndex: number,
  avgdl: number,
): Promise<void> {
  const { rows } = await client.query<{ id: string; chunk_index: number }>(
    `INSERT INTO chunks (document_id, owner, chunk_index, content, content_hash, page, term_count, metadata)
     SELECT $1, $2, * FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::int[], $8::jsonb[])
     RETURNING id, chunk_index`,
    [
      documentId,
      owner,
      chunks.map((_, index) => firstIndex + index),
      chunks.map((chunk) => chunk.content),
      chunks.map((chunk) => chunk.contentHash),
      chunks.map((chunk) => chunk.page),
      chunks.map((chunk) => chunk.termCount),
      chunks.map((chunk) => JSON.stringify(chunk.metadata)),
    ],
  );
  const ids = new Map(rows.map((row) => [row.chunk_index, Number(row.id)]));
  await writePostings(
    client,
    owner,
    chunks,
    (index) => ids.get(firstIndex + index) as number,
    avgdl,
  );
}

/** Throws the cap's refusal when the document would take its owner past their storage limit. */
async function assertFits(
  client: pg.PoolClient,
  document: NewDocument,
  cap: StorageCap | undefined,
): Promise<void> {
  if (!cap) return;
  const stored = await storedBytesOf(client, document.owner, document.source);
  if (stored + (document.bytes ?? 0) > cap.maxBytes) throw cap.refusal();
}

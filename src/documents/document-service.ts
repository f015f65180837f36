import { createHash } from 'node:crypto';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AppError, notFound } from '../errors.ts';
import type { ChunkHit } from '../storage/chunk-hit.ts';
import {
  type DocumentRepository,
  type NewChunk,
  type OwnedSource,
  SHARED,
  type StorageCap,
} from '../storage/document-repository.ts';
import type { VectorStore } from '../storage/vector-store.ts';
import { type ChunkingOptions, chunkDocument } from './chunker.ts';
import type { Embedder } from './embedder.ts';
import type { EmbeddingDimension } from './embedding-dimension.ts';
import type { IngestInput } from './extracted-document.ts';
import { lexicalTerms, termFrequencies } from './lexical-terms.ts';
import { fuseByScore } from './score-fusion.ts';
import { isUsableVector } from './usable-vector.ts';

export interface DocumentServiceDependencies {
  documents: DocumentRepository;
  chunking: ChunkingOptions;
  logger: Logger;
  /**
   * Present when embeddings are configured and the database has pgvector. `vectorWeight`:
   * the vector scores' share of the fused score, BM25's being the rest (HYBRID_VECTOR_WEIGHT);
   * 0 keeps search lexical. `dimension`: the one the model's vectors have now, shared with
   * the indexer (which re-embeds the texts whose vectors are of another).
   */
  semantic?:
    | {
        embedder: Embedder;
        dimension: EmbeddingDimension;
        vectors: VectorStore;
        indexer: { kick(): void };
        vectorWeight: number;
      }
    | undefined;
  /** RAG_VERBOSE: log queries and hits (their content included). */
  verbose: boolean;
}

export interface SearchOptions {
  /** The asking user: their own rows are searched with the shared documents. */
  userId?: string | undefined;
  limit: number;
  signal?: AbortSignal | undefined;
}

export interface SearchResult {
  retrieval: 'lexical' | 'hybrid';
  hits: ChunkHit[];
}

/** Candidates each ranking contributes before fusion. */
const FUSION_DEPTH = 50;
/** Chunks prepared between two yields to the event loop during an ingestion. */
const SLICE = 64;

/** Documents: ingestion into the chunk store, listing, deletion and hybrid search. */
export class DocumentService {
  readonly #deps: DocumentServiceDependencies;

  constructor(deps: DocumentServiceDependencies) {
    this.#deps = deps;
  }

  /**
   * The document sources a user can search, the shared ones and their own (`private`: the
   * user's own among them); without a user, the shared ones.
   */
  async listSources(userId?: string): Promise<{ sources: string[]; private: string[] }> {
    const listed = await this.#deps.documents.listSources(
      userId === undefined ? [SHARED] : [SHARED, userId],
    );
    return {
      sources: listed.map((entry) => entry.source),
      private: listed.filter((entry) => entry.private).map((entry) => entry.source),
    };
  }

  /** A user's own sources of one kind (conversation memories), newest first. */
  listForUser(userId: string, kind: 'conversation'): Promise<OwnedSource[]> {
    return this.#deps.documents.listOwned(userId, kind);
  }

  /** Deletes one or several of a user's own sources, or all of that kind; returns how many went. */
  deleteForUser(
    userId: string,
    kind: 'conversation',
    source?: string | readonly string[],
  ): Promise<number> {
    return this.#deps.documents.deleteOwned(userId, kind, source);
  }

  /**
   * Deletes a shared source, or one of a user's private sources (`userId`). A user naming a
   * shared source is refused (403): shared documents are the administrator's.
   */
  async deleteSource(source: string, userId?: string): Promise<void> {
    const { documents } = this.#deps;
    if (userId === undefined) {
      if (await documents.deleteSource(source)) return;
    } else {
      if ((await documents.deleteOwned(userId, 'document', source)) > 0) return;
      if (await documents.hasSource(SHARED, source)) {
        throw new AppError(
          'forbidden',
          403,
          'This document is shared by everyone: only the administrator can delete it.',
        );
      }
    }
    throw notFound(`No document with source ${JSON.stringify(source)}`);
  }

  /**
   * Removes what ingestions that died mid-write (a killed process, a lost database) left
   * hidden; see DocumentRepository.deleteAbandoned. Returns how many documents they were.
   */
  deleteAbandonedWrites(): Promise<number> {
    return this.#deps.documents.deleteAbandoned();
  }

  /**
   * Chunks an extracted document and stores it as a shared source (or a user's private one:
   * `privateTo`, searched by that user only), replacing any previous
   * version atomically (see DocumentRepository.replaceSource). Vectors follow in the
   * background; the document is searchable lexically as soon as this resolves.
   */
  ingest(
    input: IngestInput,
    signal?: AbortSignal,
    privateTo?: string | undefined,
    cap?: StorageCap,
  ): Promise<{ chunks: number }> {
    return this.#store(privateTo ?? SHARED, 'document', input, signal, cap);
  }

  /**
   * Stores a source that belongs to one user (conversation memories): found by that user's
   * searches only, never listed by `GET /documents`, never deleted by `DELETE /documents`.
   */
  ingestForUser(
    userId: string,
    input: IngestInput,
    signal?: AbortSignal,
  ): Promise<{ chunks: number }> {
    if (userId === SHARED) throw new Error('a user id is never empty');
    return this.#store(userId, 'conversation', input, signal);
  }

  async #store(
    owner: string,
    kind: 'document' | 'conversation',
    input: IngestInput,
    signal?: AbortSignal,
    cap?: StorageCap,
  ): Promise<{ chunks: number }> {
    const started = performance.now();
    const prepared = await this.#prepare(input, signal);
    const preparedAt = performance.now();
    if (prepared.length === 0) {
      throw new AppError('no_text', 422, 'The file contains no text that could be extracted.');
    }
    const chunks = await this.#deps.documents.replaceSource(
      {
        source: input.source,
        owner,
        kind,
        filename: input.filename,
        contentType: input.contentType,
        bytes: input.bytes,
      },
      prepared,
      signal,
      cap,
    );
    this.#deps.semantic?.indexer.kick();
    this.#deps.logger.info(
      {
        chunks,
        pages: input.document.pages.length,
        ms: Math.round(performance.now() - started),
        chunkingMs: Math.round(preparedAt - started),
        storingMs: Math.round(performance.now() - preparedAt),
      },
      'document stored',
    );
    return { chunks };
  }

  /**
   * The chunks best matching a query: BM25 alone, or fused by score with vector search when
   * the embedding model is available and has embedded documents.
   */
  async search(query: string, options: SearchOptions): Promise<SearchResult> {
    const owners = options.userId ? [SHARED, options.userId] : [SHARED];
    const terms = termFrequencies(lexicalTerms(query));
    const semantic = this.#deps.semantic;
    // Never wait for a model to load or download here: search lexically meanwhile, and let
    // the indexer load it (and embed what is missing) in the background.
    const useVectors = semantic?.embedder.available === true && semantic.vectorWeight > 0;
    if (semantic && !semantic.embedder.available) semantic.indexer.kick();
    const depth = useVectors ? Math.max(FUSION_DEPTH, options.limit) : options.limit;
    const lexical = this.#deps.documents.searchLexical(terms, owners, depth);
    let result: SearchResult;
    if (useVectors) {
      // A query the embedder could not embed (its server down, an error) is searched
      // lexically: BM25 still answers, as it does while a local model loads.
      const queryVector = semantic.embedder.embedQuery(query, options.signal).catch((error) => {
        if (options.signal?.aborted) throw error;
        this.#deps.logger.warn(
          { cause: error instanceof Error ? error.name : typeof error },
          'query embedding failed; searching lexically',
        );
        return undefined;
      });
      const nearest = queryVector.then((vector) => {
        if (vector === undefined) return undefined;
        // A zero vector has no direction (its cosine is NaN), pgvector refuses NaN and an
        // empty vector: nothing is near it.
        if (!isUsableVector(vector)) return [];
        // Only vectors of the query's dimension are compared. A dimension not seen before
        // (the model served under this name changed) has the indexer re-embed the texts
        // whose vectors are of the old one; until then they are found by their words.
        if (semantic.dimension.observe(vector.length)) semantic.indexer.kick();
        return semantic.vectors.search(semantic.embedder.id, vector, owners, depth);
      });
      const [bm25, vectors] = await Promise.all([lexical, nearest]);
      const lists = [
        // Fewer hits than asked for: BM25 returned every chunk that matches a query term
        // (a term capped at POSTINGS_PER_TERM, 500, alone gives more than `depth` ≤ 50).
        { hits: bm25, weight: 1 - semantic.vectorWeight, floor: 0, complete: bm25.length < depth },
        // Cosine similarity; never complete (see ScoredList.complete).
        { hits: vectors ?? [], weight: semantic.vectorWeight, floor: -1, complete: false },
      ];
      result = vectors
        ? { retrieval: 'hybrid', hits: fuseByScore(lists, options.limit) }
        : { retrieval: 'lexical', hits: bm25.slice(0, options.limit) };
    } else {
      result = { retrieval: 'lexical', hits: await lexical };
    }
    if (this.#deps.verbose) {
      this.#deps.logger.info(
        {
          query,
          retrieval: result.retrieval,
          hits: result.hits.map((hit) => ({
            source: hit.source,
            page: hit.page,
            score: hit.score,
            text: hit.content.slice(0, 200),
          })),
        },
        'document search',
      );
    }
    return result;
  }

  /** Chunks, hashes and lexical terms, in slices so that other requests keep being served. */
  async #prepare(input: IngestInput, signal?: AbortSignal): Promise<NewChunk[]> {
    const pieces = chunkDocument(input.document.pages, this.#deps.chunking);
    const ocrPages = new Set(input.document.ocrPages);
    const prepared: NewChunk[] = [];
    for (let i = 0; i < pieces.length; i += SLICE) {
      await yieldToEventLoop();
      signal?.throwIfAborted();
      for (const piece of pieces.slice(i, i + SLICE)) {
        const terms = lexicalTerms(piece.text);
        prepared.push({
          content: piece.text,
          contentHash: createHash('sha256').update(piece.text).digest('hex'),
          page: piece.page,
          termCount: terms.length,
          terms: termFrequencies(terms),
          metadata: {
            pageEnd: piece.pageEnd,
            start: piece.start,
            end: piece.end,
            heading: piece.heading,
            ...(piece.page !== null && ocrPages.has(piece.page) ? { ocr: true } : {}),
          },
        });
      }
    }
    return prepared;
  }
}

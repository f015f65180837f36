import { type ModelMessage, tool, zodSchema } from 'ai';
import { z } from 'zod';
import type { AfterAnswer } from '../assistant/chat-service.ts';
import type { DocumentService } from '../documents/document-service.ts';
import { visibleText } from '../visible-text.ts';

/** Rewrites a question into a standalone search query using the conversation so far. */
export type QueryRewriter = (
  query: string,
  conversation: readonly ModelMessage[],
  signal?: AbortSignal,
) => Promise<string>;

export interface DocumentToolContext {
  userId: string;
  documents: DocumentService;
  topK: number;
  /** QUERY_REWRITE_ENABLED. */
  rewrite?: QueryRewriter | undefined;
  /** RAG_SHOW_SOURCES: registers the sources list that ends the answer. */
  afterAnswer?: ((fragments: AfterAnswer) => void) | undefined;
}

/** One hit of `search_documents`, as the model (and the trace) sees it. */
export interface DocumentHit {
  source: string;
  /** 1-based page for paged documents (PDF), else null. */
  page: number | null;
  /** Relevance: BM25 (lexical) or fused score in [0, 1] (hybrid); higher is better. */
  score: number;
  text: string;
}

const searchDocumentsInput = zodSchema(
  z.object({
    query: visibleText(z.string().min(1).max(1000)).describe(
      'What to look for, as a standalone search query in the language of the documents',
    ),
  }),
);

/** Sources listed at the end of an answer. */
const MAX_SOURCES = 5;

/** `search_documents`, bound to one user (their own memories are searched with the documents). */
export function documentTools(context: DocumentToolContext) {
  const cited = new Map<string, { source: string; pages: string }>();
  context.afterAnswer?.(() => sourcesList([...cited.values()]));
  return {
    search_documents: tool({
      description:
        'Search the documents uploaded to this assistant (manuals, papers, notes). Returns the ' +
        'most relevant passages with their source and page; `hits` is empty when nothing matched.',
      inputSchema: searchDocumentsInput,
      execute: async ({ query }, { messages, abortSignal }) => {
        const searched = context.rewrite
          ? await context.rewrite(query, messages, abortSignal)
          : query;
        const { hits, retrieval } = await context.documents.search(searched, {
          userId: context.userId,
          limit: context.topK,
          signal: abortSignal,
        });
        for (const hit of hits) {
          const pages = pageRange(hit.page, hit.metadata.pageEnd);
          const key = `${hit.source}\u0000${pages}`;
          if (cited.size < MAX_SOURCES && !cited.has(key)) {
            cited.set(key, { source: hit.source, pages });
          }
        }
        return {
          query: searched,
          retrieval,
          hits: hits.map(
            (hit): DocumentHit => ({
              source: hit.source,
              page: hit.page,
              score: Math.round(hit.score * 10_000) / 10_000,
              text: hit.content,
            }),
          ),
        };
      },
    }),
  };
}

/** "p. 3", "pp. 3–4", or "" for a document without pages. */
function pageRange(page: number | null, pageEnd: unknown): string {
  if (page === null) return '';
  return typeof pageEnd === 'number' && pageEnd > page ? `pp. ${page}–${pageEnd}` : `p. ${page}`;
}

/** "Sources:" and one line per source, as separate fragments; nothing when none was used. */
function sourcesList(sources: { source: string; pages: string }[]): string[] {
  if (sources.length === 0) return [];
  return [
    '\n\nSources:',
    ...sources.map(({ source, pages }) => `\n- ${source}${pages ? `, ${pages}` : ''}`),
  ];
}

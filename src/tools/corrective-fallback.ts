import type { ToolSet } from 'ai';
import type { Logger } from 'pino';
import { type SearchWeb, WebSearchError } from '../web-search/web-search.ts';

export interface CorrectiveFallbackOptions {
  search: SearchWeb;
  logger: Logger;
  /** RAG_VERBOSE: the query may be logged. */
  verbose: boolean;
}

type SearchOutput = { query: string; hits: unknown[] };

/**
 * Corrective retrieval (CRAG, spec §1 and §8): when `search_documents` finds nothing, one web
 * search for the same query runs at once, and its results go to the model in that tool result,
 * so the model does not have to think of asking. At most once per chat (`cragFallbackUsed`): a
 * tool set is built for one chat, and a later empty search in it gets no second web search.
 * A policy on the tools, not a branch in the agent loop; without options (CRAG off, or no web
 * search configured) the tools are returned as they are.
 */
export function withCorrectiveFallback<T extends ToolSet>(
  tools: T,
  options: CorrectiveFallbackOptions | undefined,
): T {
  const documents = tools.search_documents;
  const execute = documents?.execute;
  if (!options || !documents || !execute) return tools;
  let cragFallbackUsed = false;

  return {
    ...tools,
    search_documents: {
      ...documents,
      execute: async (input: unknown, context: Parameters<typeof execute>[1]) => {
        const found = (await execute(input, context)) as SearchOutput;
        if (found.hits.length > 0 || cragFallbackUsed) return found;
        cragFallbackUsed = true;
        options.logger.info(
          options.verbose ? { query: found.query } : {},
          'no document matched: searching the web instead (CRAG)',
        );
        try {
          const web = await options.search(found.query, context.abortSignal);
          return { ...found, web_fallback: web };
        } catch (error) {
          if (!(error instanceof WebSearchError)) throw error;
          return { ...found, web_fallback: { error: error.message } };
        }
      },
    },
  };
}

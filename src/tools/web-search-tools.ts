import { tool, zodSchema } from 'ai';
import { z } from 'zod';
import { ToolRefusal } from '../assistant/tool-refusal.ts';
import { visibleText } from '../visible-text.ts';
import { type SearchWeb, WebSearchError } from '../web-search/web-search.ts';

const webSearchInput = zodSchema(
  z.object({
    query: visibleText(z.string().min(1).max(400)).describe(
      'What to look up on the web, in a few words',
    ),
  }),
);

/**
 * `web_search`: title, URL and snippet of the top results. A failed search (timeout, HTTP
 * error, rate limit) throws a short reason, which reaches the model as a tool error.
 */
export function webSearchTools(context: { search: SearchWeb }) {
  return {
    web_search: tool({
      description:
        'Search the web for current or outside information. Returns the top results with ' +
        'title, URL and a short snippet; cite the URLs you use.',
      inputSchema: webSearchInput,
      execute: async ({ query }, { abortSignal }) => {
        try {
          return await context.search(query, abortSignal);
        } catch (error) {
          if (!(error instanceof WebSearchError)) throw error;
          throw new ToolRefusal(`web_search_${error.reason}`, error.message);
        }
      },
    }),
  };
}

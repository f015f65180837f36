import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { firstCharacters } from '../first-characters.ts';
import { type ProviderSearch, providerFor } from './providers.ts';
import { WebSearchError } from './search-request.ts';

export { WebSearchError } from './search-request.ts';

/** One web result as the model sees it: bounded title and snippet. */
export interface WebSearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** What `web_search` returns to the model, and what `searchWeb` returns to a loop policy. */
export interface WebSearchOutput {
  provider: string;
  results: WebSearchResult[];
}

/** Runs one search; throws `WebSearchError` (a short reason fit for the model) on failure. */
export type SearchWeb = (query: string, signal?: AbortSignal) => Promise<WebSearchOutput>;

type WebSearchConfig = Pick<
  Config,
  | 'WEB_SEARCH_PROVIDER'
  | 'SEARXNG_URL'
  | 'TAVILY_API_KEY'
  | 'TAVILY_BASE_URL'
  | 'BRAVE_API_KEY'
  | 'BRAVE_BASE_URL'
  | 'WEB_SEARCH_MAX_RESULTS'
  | 'WEB_SEARCH_SNIPPET_CHARS'
  | 'WEB_SEARCH_TIMEOUT_MS'
>;

const TITLE_CHARS = 200;
const URL_CHARS = 500;

/**
 * The configured web search, or undefined when WEB_SEARCH_PROVIDER is `none` (the tool is then
 * not offered). A provider chosen without its URL or key is a configuration error at start.
 * Failures are logged at info with the provider, status and reason, never the query.
 */
export function createWebSearch(config: WebSearchConfig, logger: Logger): SearchWeb | undefined {
  const provider = config.WEB_SEARCH_PROVIDER;
  if (provider === 'none') return undefined;
  const search: ProviderSearch = providerFor(config);
  const log = logger.child({ component: 'web-search', provider });
  log.info('web search enabled');
  return async (query, signal) => {
    const started = Date.now();
    try {
      const raw = await search(
        { query, count: config.WEB_SEARCH_MAX_RESULTS, timeoutMs: config.WEB_SEARCH_TIMEOUT_MS },
        signal,
      );
      const results = raw
        .filter((result) => isWebAddress(result.url))
        .slice(0, config.WEB_SEARCH_MAX_RESULTS)
        .map((result) => ({
          title: clip(plain(result.title ?? ''), TITLE_CHARS),
          url: clip(result.url, URL_CHARS),
          snippet: clip(plain(result.snippet ?? ''), config.WEB_SEARCH_SNIPPET_CHARS),
        }));
      log.info({ ms: Date.now() - started, results: results.length }, 'web search done');
      return { provider, results };
    } catch (error) {
      if (signal?.aborted) throw error;
      const failure =
        error instanceof WebSearchError
          ? error
          : new WebSearchError('unreachable', 'The web search failed unexpectedly.');
      log.info(
        {
          ms: Date.now() - started,
          reason: failure.reason,
          status: failure.status,
          code: failure.code,
        },
        'web search failed',
      );
      throw failure;
    }
  };
}

/**
 * Brave marks matches with <strong>; providers may send entities. The model wants text.
 * A tag is a `<` to the next `>` with no `<` inside: `/<[^>]*>/` would scan to the end of the
 * text again from each `<` of a run without `>` (a page's title of 100,000 of them held the
 * event loop for seconds, every user waiting), this pattern reads each character at most twice.
 */
function plain(text: string): string {
  return text
    .replace(/<[^<>]*>/g, '')
    .replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) =>
      name === 'amp'
        ? '&'
        : name === 'lt'
          ? '<'
          : name === 'gt'
            ? '>'
            : name === 'quot'
              ? '"'
              : "'",
    )
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * An absolute http(s) URL: what the model is told to cite. A provider may pass on an engine's
 * javascript:, data:, magnet: or relative link, which no reader can open as a source.
 */
function isWebAddress(url: string): boolean {
  return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol);
}

/** Cut between characters: half an emoji is a lone surrogate in the model server's JSON. */
function clip(text: string, max: number): string {
  return firstCharacters(text, max).length === text.length
    ? text
    : `${firstCharacters(text, max - 1)}…`;
}

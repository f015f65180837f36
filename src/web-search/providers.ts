import type { Config } from '../config.ts';
import { ConfigError } from '../config.ts';
import { requestJson, WebSearchError } from './search-request.ts';

/** A provider's raw result before bounding. */
export interface RawResult {
  title?: string | undefined;
  url: string;
  snippet?: string | undefined;
}

export interface SearchParams {
  query: string;
  count: number;
  timeoutMs: number;
}

export type ProviderSearch = (params: SearchParams, signal?: AbortSignal) => Promise<RawResult[]>;

type ProviderConfig = Pick<
  Config,
  | 'WEB_SEARCH_PROVIDER'
  | 'SEARXNG_URL'
  | 'TAVILY_API_KEY'
  | 'TAVILY_BASE_URL'
  | 'BRAVE_API_KEY'
  | 'BRAVE_BASE_URL'
>;

export function providerFor(config: ProviderConfig): ProviderSearch {
  switch (config.WEB_SEARCH_PROVIDER) {
    case 'searxng':
      if (!config.SEARXNG_URL) throw missing('searxng', 'SEARXNG_URL');
      return searxng(config.SEARXNG_URL);
    case 'tavily':
      if (!config.TAVILY_API_KEY) throw missing('tavily', 'TAVILY_API_KEY');
      return tavily(config.TAVILY_BASE_URL, config.TAVILY_API_KEY);
    case 'brave':
      if (!config.BRAVE_API_KEY) throw missing('brave', 'BRAVE_API_KEY');
      return brave(config.BRAVE_BASE_URL, config.BRAVE_API_KEY);
    default:
      throw new ConfigError(`Invalid configuration:\n  WEB_SEARCH_PROVIDER: no provider`);
  }
}

const missing = (provider: string, name: string) =>
  new ConfigError(
    `Invalid configuration:\n  ${name}: required when WEB_SEARCH_PROVIDER=${provider}`,
  );

/** SearXNG and Tavily both name a result's text `content`. */
const titleUrlContent = (r: Record<string, unknown>) => ({
  title: str(r.title),
  url: str(r.url),
  snippet: str(r.content),
});

/** SearXNG's JSON API: `GET /search?q=…&format=json` (the instance must enable the json format). */
function searxng(base: string): ProviderSearch {
  return async ({ query, timeoutMs }, signal) => {
    const url = endpoint(base, 'search');
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    const body = await requestJson(
      url,
      { headers: { accept: 'application/json' } },
      timeoutMs,
      signal,
    );
    return list(field(body, 'results')).map(titleUrlContent);
  };
}

/** Tavily: `POST /search` with a bearer key and a JSON body. */
function tavily(base: string, apiKey: string): ProviderSearch {
  return async ({ query, count, timeoutMs }, signal) => {
    const body = await requestJson(
      endpoint(base, 'search'),
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body: JSON.stringify({ query, max_results: Math.min(count, 20), search_depth: 'basic' }),
      },
      timeoutMs,
      signal,
    );
    return list(field(body, 'results')).map(titleUrlContent);
  };
}

/** Brave: `GET /res/v1/web/search?q=…&count=…` with `X-Subscription-Token`. */
function brave(base: string, apiKey: string): ProviderSearch {
  return async ({ query, count, timeoutMs }, signal) => {
    const url = endpoint(base, 'res/v1/web/search');
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(Math.min(count, 20)));
    const body = await requestJson(
      url,
      { headers: { accept: 'application/json', 'x-subscription-token': apiKey } },
      timeoutMs,
      signal,
    );
    // No `web` section means no web results (e.g. a query Brave answered otherwise).
    const web = (body as { web?: unknown } | null)?.web;
    if (web === undefined) return [];
    const results = field(web, 'results');
    return list(results).map((r) => ({
      title: str(r.title),
      url: str(r.url),
      snippet: str(r.description),
    }));
  };
}

function endpoint(base: string, path: string): URL {
  return new URL(path, base.endsWith('/') ? base : `${base}/`);
}

function field(body: unknown, name: string): unknown {
  if (body && typeof body === 'object' && name in body)
    return (body as Record<string, unknown>)[name];
  throw new WebSearchError('bad_response', 'The web search service sent an unexpected answer.');
}

function list(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) {
    throw new WebSearchError('bad_response', 'The web search service sent an unexpected answer.');
  }
  return value.filter(
    (item): item is Record<string, unknown> => !!item && typeof item === 'object',
  );
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type BodyEnding, endBody } from './body-endings.ts';
import {
  assertNone,
  listen,
  type RecordedRequest,
  readRequest,
  sendJson,
  type UnexpectedRequest,
} from './fake-http.ts';

/**
 * Fakes of the three web-search providers, each speaking its real wire format (requests,
 * results and error bodies as their public documentation shows them) and failing loudly on
 * a request the real service would refuse: wrong path, method, parameters or credentials.
 */
export type SearchProvider = 'searxng' | 'tavily' | 'brave';

export interface FakeResult {
  title: string;
  url: string;
  snippet: string;
}

/** What the next request gets: results, one of the provider's real errors, or silence. */
export type FakeFailure = 'rate-limited' | 'unauthorized' | 'server-error' | 'stall';

export interface FakeSearchServer {
  provider: SearchProvider;
  /** Base URL for SEARXNG_URL / TAVILY_BASE_URL / BRAVE_BASE_URL. */
  url: string;
  apiKey: string;
  /** Valid searches received (the query each asked for). */
  queries: string[];
  requests: RecordedRequest[];
  unexpected: UnexpectedRequest[];
  /** Results for every valid search until changed. */
  results(results: FakeResult[]): void;
  /** Makes the next valid search fail this way. */
  failNext(failure: FakeFailure): void;
  /** Ends the next valid search's answer other than whole (test/support/body-endings.ts). */
  endNext(ending: BodyEnding): void;
  assertNoUnexpected(): void;
  close(): Promise<void>;
}

export async function startFakeSearchServer(provider: SearchProvider): Promise<FakeSearchServer> {
  const apiKey = `${provider}-key-${randomUUID().slice(0, 8)}`;
  const requests: RecordedRequest[] = [];
  const unexpected: UnexpectedRequest[] = [];
  const queries: string[] = [];
  const failures: FakeFailure[] = [];
  const endings: BodyEnding[] = [];
  const stalled: ServerResponse[] = [];
  let current: FakeResult[] = [];

  const refuse = (res: ServerResponse, request: RecordedRequest, reason: string) => {
    unexpected.push({ method: request.method, path: request.path, reason });
    sendJson(res, 400, { error: `fake ${provider}: ${reason}` });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    requests.push(request);
    const problem = PROTOCOLS[provider].check(request, apiKey);
    if (problem) return refuse(res, request, problem);
    queries.push(PROTOCOLS[provider].query(request));
    const failure = failures.shift();
    if (failure === 'stall') {
      stalled.push(res); // headers never come: the client must time out
      return;
    }
    if (failure) return PROTOCOLS[provider].fail(res, failure);
    const answer = PROTOCOLS[provider].answer(PROTOCOLS[provider].query(request), current);
    const ending = endings.shift();
    if (ending) {
      stalled.push(res);
      return endBody(res, JSON.stringify(answer), ending);
    }
    sendJson(res, 200, PROTOCOLS[provider].answer(PROTOCOLS[provider].query(request), current));
  }

  const server = await listen(handle, (req, error) =>
    unexpected.push({ method: req.method ?? '?', path: req.url ?? '?', reason: String(error) }),
  );
  return {
    provider,
    url: server.origin,
    apiKey,
    queries,
    requests,
    unexpected,
    results: (results) => {
      current = results;
    },
    failNext: (failure) => {
      failures.push(failure);
    },
    endNext: (ending) => {
      endings.push(ending);
    },
    assertNoUnexpected: () => assertNone(`fake ${provider}`, unexpected),
    close: () => {
      for (const res of stalled) res.destroy();
      return server.close();
    },
  };
}

interface Protocol {
  /** Why the real service would refuse this request, or undefined. */
  check(request: RecordedRequest, apiKey: string): string | undefined;
  query(request: RecordedRequest): string;
  answer(query: string, results: FakeResult[]): unknown;
  fail(res: ServerResponse, failure: Exclude<FakeFailure, 'stall'>): void;
}

const PROTOCOLS: Record<SearchProvider, Protocol> = {
  // SearXNG's Search API: GET /search?q=…&format=json. Errors are not JSON: an unset format is
  // a 403, the limiter answers 429 "Too Many Requests" in plain text.
  searxng: {
    check(request) {
      if (request.method !== 'GET' || request.path !== '/search') return 'not GET /search';
      if (!request.query.get('q')) return 'no q parameter';
      if (request.query.get('format') !== 'json') return 'format is not json';
      return undefined;
    },
    query: (request) => request.query.get('q') ?? '',
    answer: (query, results) => ({
      query,
      number_of_results: 0,
      results: results.map((result, i) => ({
        url: result.url,
        title: result.title,
        content: result.snippet,
        engine: 'duckduckgo',
        parsed_url: ['https', new URL(result.url).host, new URL(result.url).pathname, '', '', ''],
        template: 'default.html',
        engines: ['duckduckgo', 'brave'],
        positions: [i + 1],
        score: 2 / (i + 1),
        category: 'general',
      })),
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [],
      unresponsive_engines: [],
    }),
    fail(res, failure) {
      const [status, text] =
        failure === 'rate-limited'
          ? [429, 'Too Many Requests']
          : failure === 'unauthorized'
            ? [403, '<!doctype html><title>403 Forbidden</title><h1>Forbidden</h1>']
            : [500, '<!doctype html><title>500 Internal Server Error</title>'];
      res.writeHead(status, { 'content-type': status === 429 ? 'text/plain' : 'text/html' });
      res.end(text);
    },
  },

  // Tavily: POST /search, `Authorization: Bearer tvly-…`, JSON body. Errors are
  // `{"detail": {"error": "…"}}`; 432/433 are plan and pay-as-you-go limits.
  tavily: {
    check(request, apiKey) {
      if (request.method !== 'POST' || request.path !== '/search') return 'not POST /search';
      if (request.headers.authorization !== `Bearer ${apiKey}`)
        return 'missing or wrong bearer key';
      const body = request.body as { query?: unknown; max_results?: unknown } | undefined;
      if (typeof body?.query !== 'string' || body.query === '') return 'no query in the JSON body';
      const max = body.max_results;
      if (
        max !== undefined &&
        (!Number.isInteger(max) || (max as number) < 0 || (max as number) > 20)
      )
        return 'max_results is not an integer from 0 to 20';
      return undefined;
    },
    query: (request) => (request.body as { query: string }).query,
    answer: (query, results) => ({
      query,
      follow_up_questions: null,
      answer: null,
      images: [],
      results: results.map((result, i) => ({
        title: result.title,
        url: result.url,
        content: result.snippet,
        score: 0.9 - i * 0.05,
        raw_content: null,
      })),
      response_time: '1.09',
      request_id: randomUUID(),
    }),
    fail(res, failure) {
      const [status, error] =
        failure === 'rate-limited'
          ? [
              429,
              'Your request has been blocked due to excessive requests. Please reduce rate of requests.',
            ]
          : failure === 'unauthorized'
            ? [401, 'Unauthorized: missing or invalid API key.']
            : [500, 'Internal Server Error'];
      sendJson(res, status, { detail: { error } });
    },
  },

  // Brave: GET /res/v1/web/search?q=…&count=…, `X-Subscription-Token`, `Accept:
  // application/json`. Errors are `{"type": "ErrorResponse", "error": {…}, "time": …}`.
  brave: {
    check(request, apiKey) {
      if (request.method !== 'GET' || request.path !== '/res/v1/web/search')
        return 'not GET /res/v1/web/search';
      if (request.headers['x-subscription-token'] !== apiKey) return 'missing or wrong token';
      if (!String(request.headers.accept ?? '').includes('application/json'))
        return 'no Accept: application/json';
      if (!request.query.get('q')) return 'no q parameter';
      const count = request.query.get('count');
      if (count !== null && !/^(?:[1-9]|1\d|20)$/.test(count)) return 'count is not 1 to 20';
      return undefined;
    },
    query: (request) => request.query.get('q') ?? '',
    answer: (query, results) => ({
      type: 'search',
      query: { original: query, show_strict_warning: false, is_navigational: false },
      mixed: {
        type: 'mixed',
        main: results.map((_, index) => ({ type: 'web', index, all: false })),
      },
      web: {
        type: 'search',
        results: results.map((result) => ({
          type: 'search_result',
          title: result.title,
          url: result.url,
          description: result.snippet,
          is_source_local: false,
          is_source_both: false,
          family_friendly: true,
        })),
        family_friendly: true,
      },
    }),
    fail(res, failure) {
      const [status, code, detail] =
        failure === 'rate-limited'
          ? [429, 'RATE_LIMITED', 'Request rate limit exceeded for plan.']
          : failure === 'unauthorized'
            ? [422, 'SUBSCRIPTION_TOKEN_INVALID', 'The provided subscription token is invalid.']
            : [500, 'INTERNAL_ERROR', 'Internal server error.'];
      const headers: Record<string, string> =
        status === 429
          ? {
              'x-ratelimit-limit': '1, 2000',
              'x-ratelimit-remaining': '0, 1990',
              'x-ratelimit-reset': '1, 2419200',
            }
          : {};
      sendJson(
        res,
        status,
        {
          type: 'ErrorResponse',
          error: { id: randomUUID(), status, code, detail, meta: { component: 'api' } },
          time: Math.floor(Date.now() / 1000),
        },
        headers,
      );
    },
  },
};

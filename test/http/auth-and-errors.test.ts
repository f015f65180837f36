import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { sendOverRawSocket } from '../support/raw-http.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 's3cret-token-value';

// The engines fail differently (issue 8): every error path runs on both.
describe.each(ENGINES)('authentication and error responses on the %s engine', (engine) => {
  let parley: RunningParley;
  let storage: EngineEnv;
  let client = 0;

  beforeAll(async () => {
    storage = await engineEnv(engine);
    // TRUST_PROXY: each case below names its own client address (X-Forwarded-For).
    parley = await startParley({
      env: { API_TOKEN: TOKEN, TRUST_PROXY: 'loopback', ...storage.env },
    });
  });
  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
  });

  it.each([
    ['no header', undefined],
    ['a wrong token', `Bearer nope`],
    ['a lower-case scheme', `bearer ${TOKEN}`],
    ['the token without a scheme', TOKEN],
    ['a token with a suffix', `Bearer ${TOKEN}x`],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
  ])('answers 401 Unauthorized to %s', async (_case, authorization) => {
    // Six wrong credentials from one address: under the bearer throttle's 10 a minute, which
    // would answer 429 to the next case (test/http/bearer-throttle.test.ts). Its own address.
    const from = `198.51.100.${++client}`;
    for (const [method, path] of [
      ['GET', '/documents'],
      ['POST', '/reset'],
      ['DELETE', '/documents/x'],
      ['POST', '/feedback'],
      ['GET', '/reminders/alice'],
      ['POST', '/chat'],
    ] as const) {
      const response = await parley.fetch(path, {
        method,
        token: null,
        headers: { 'x-forwarded-for': from, ...(authorization && { authorization }) },
      });
      expect(response.status, `${method} ${path}`).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toEqual({ detail: 'Unauthorized' });
    }
  });

  it('lets the exact bearer token through', async () => {
    const response = await parley.fetch('/documents');
    expect(response.status).toBe(200);
  });

  it('serves health, the OpenAPI document and the docs without a token', async () => {
    const health = await parley.fetch('/health', { token: null });
    expect(health.status).toBe(200);
    const { model, ...spec } = (await health.json()) as Record<string, unknown>;
    expect(spec).toEqual({ status: 'ok', version: '1.0', database: 'ok' });
    // No model is named: the embedded one is looked for at NO_MODEL_URL, where nothing listens.
    expect(model).toMatchObject({
      source: 'download',
      state: expect.stringMatching(/^(checking|failed)$/),
    });

    const openapi = await parley.fetch('/openapi.json', { token: null });
    expect(openapi.status).toBe(200);
    const document = (await openapi.json()) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, unknown>;
    };
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/health', '/reset', '/documents', '/feedback']),
    );
    // The OpenAI-compatible door (issue 23) is documented too.
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/v1/models', '/v1/chat/completions']),
    );

    // Every route declares its error responses, each a {"detail": …} body.
    type Operation = {
      responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
    };
    const operations = document.paths as Record<string, Record<string, Operation>>;
    const declared = (path: string, method: string) =>
      Object.keys(operations[path]?.[method]?.responses ?? {}).sort();
    // 404: a conversation_id, parent or regenerate that is not the user's.
    expect(declared('/chat', 'post')).toEqual([
      '401',
      '403',
      '404',
      '413',
      '415',
      '422',
      '429',
      '500',
    ]);
    expect(declared('/documents', 'get')).toEqual(['200', '401', '429', '500', '503']);
    expect(declared('/documents/{*}', 'delete')).toEqual([
      '200',
      '401',
      '403',
      '404',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    expect(declared('/feedback', 'post')).toEqual([
      '200',
      '401',
      '404',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    expect(declared('/reset', 'post')).toEqual([
      '200',
      '401',
      '403',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    expect(declared('/reminders/{user_id}', 'get')).toEqual([
      '200',
      '401',
      '403',
      '422',
      '429',
      '500',
      '503',
    ]);
    expect(declared('/ingest', 'post')).toEqual([
      '200',
      '401',
      '403',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    expect(declared('/users/{user_id}/graph', 'delete')).toEqual([
      '200',
      '401',
      '403',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    const unauthorized = operations['/feedback']?.post?.responses['401']?.content;
    expect(JSON.stringify(unauthorized)).toContain('"detail"');
    // …except the OpenAI-compatible routes, whose errors take OpenAI's shape.
    expect(declared('/v1/chat/completions', 'post')).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '413',
      '415',
      '429',
      '500',
      '503',
    ]);
    const openAi401 = operations['/v1/chat/completions']?.post?.responses['401']?.content;
    expect(JSON.stringify(openAi401)).toContain('"error"');
    expect(JSON.stringify(openAi401)).not.toContain('"detail"');

    const docs = await parley.fetch('/docs/', { token: null });
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
  });

  it.each([
    [
      'malformed JSON',
      '/feedback',
      'application/json',
      '{"run_id": ',
      422,
      { detail: [{ loc: ['body'], msg: 'The body is not valid JSON', type: 'json_invalid' }] },
    ],
    [
      'malformed JSON',
      '/chat',
      'application/json',
      '{"message": "hi"',
      422,
      { detail: [{ loc: ['body'], msg: 'The body is not valid JSON', type: 'json_invalid' }] },
    ],
    [
      'a body over the limit',
      '/feedback',
      'application/json',
      JSON.stringify({ comment: 'x'.repeat(2 * 1024 * 1024) }),
      413,
      { detail: 'The request body is too large' },
    ],
    [
      'a body of an unsupported media type',
      '/feedback',
      'text/plain',
      'hello',
      415,
      { detail: 'Unsupported media type' },
    ],
  ])(
    'answers %s to POST %s with its status and a JSON detail',
    async (_case, path, type, body, status, expected) => {
      const response = await parley.fetch(path, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      });
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual(expected);
    },
  );

  it('answers wrong types with a FastAPI-style 422 naming each field', async () => {
    const response = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: 42, score: 'high' }),
    });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: string[]; type: string }[] };
    expect(detail.map((item) => item.loc)).toEqual([
      ['body', 'run_id'],
      ['body', 'score'],
    ]);
    for (const item of detail)
      expect(item).toMatchObject({ msg: expect.any(String), type: 'invalid_type' });
  });

  it('answers a missing body with 422', async () => {
    const response = await parley.fetch('/feedback', { method: 'POST' });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { detail: unknown[] }).detail[0]).toMatchObject({
      loc: ['body'],
    });
  });

  it('answers a client still sending an over-limit body with the 413 and keeps its connection', async () => {
    // A client writes its whole body before it reads: the 413 must survive that, and the
    // connection must still serve the next request (no reset under a sending client).
    const replies = await sendOverRawSocket(parley.url, [
      {
        head: `POST /feedback HTTP/1.1\r\nHost: parley\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`,
        body: Buffer.alloc(4 * 1024 * 1024, 'a'),
      },
      { head: 'GET /health HTTP/1.1\r\nHost: parley\r\n\r\n' },
    ]);
    expect(replies.error).toBeUndefined();
    expect(replies.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(replies.text).toContain('{"detail":"The request body is too large"}');
    expect(replies.text).toMatch(/\r\n\r\n[\s\S]*HTTP\/1\.1 200 /);
    expect(replies.closedByServer).toBe(false);
  });

  it('answers a body declared far over the limit with the 413 at once and closes, reading no more', async () => {
    const replies = await sendOverRawSocket(
      parley.url,
      [
        {
          head: `POST /feedback HTTP/1.1\r\nHost: parley\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n`,
          body: Buffer.alloc(64 * 1024, 'a'),
        },
      ],
      { untilClosed: true },
    );
    expect(replies.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(replies.text).toContain('{"detail":"The request body is too large"}');
    expect(replies.closedByServer).toBe(true);
  });

  it.each([
    ['malformed HTTP', 'NOT HTTP AT ALL\r\n\r\n', 400, 'The request is not valid HTTP.'],
    [
      'headers over 16 KB',
      `GET /health HTTP/1.1\r\nHost: parley\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
      431,
      'The request headers are too large.',
    ],
  ])(
    'answers %s with its status and a JSON detail, then closes',
    async (_case, head, status, detail) => {
      const replies = await sendOverRawSocket(parley.url, [{ head }], { untilClosed: true });
      expect(replies.text).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(replies.text).toContain(JSON.stringify({ detail }));
      expect(replies.closedByServer).toBe(true);
    },
  );

  it('answers 404 with a detail for an unknown route', async () => {
    const response = await parley.fetch('/nowhere');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: 'Not Found: GET /nowhere' });
  });

  it('answers 405 with an Allow header for a known path and a wrong method', async () => {
    const response = await parley.fetch('/documents', { method: 'PUT' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(await response.json()).toEqual({ detail: 'Method Not Allowed' });
  });

  it('returns a request id header, keeping a plain one the client sent', async () => {
    const generated = await parley.fetch('/health');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const given = await parley.fetch('/health', { headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const hostile = await parley.fetch('/health', { headers: { 'x-request-id': 'a b<script>' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('never writes the token to its logs', async () => {
    await parley.fetch('/documents', { token: 'wrong-token-also-secret' });
    await parley.fetch('/documents');
    await parley.waitForLog((line) => line.msg === 'request completed');
    await parley.settled();
    expect(parley.output()).not.toContain(TOKEN);
    expect(parley.output()).not.toContain('wrong-token-also-secret');
  });
});

describe('development mode', () => {
  it('lets every request through when API_TOKEN is unset', async () => {
    const parley = await startParley();
    try {
      const response = await parley.fetch('/documents');
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ documents: [] });
    } finally {
      await parley.stop();
    }
  });
});

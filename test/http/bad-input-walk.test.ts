import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BaseCall,
  badInputVariants,
  basePathOf,
  type Operation,
  type Variant,
} from '../support/bad-input-variants.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { multipartBody } from '../support/multipart.ts';
import { errorShapeProblem, type OpenApiDocument, operationsOf } from '../support/openapi-walk.ts';
import type { JsonSchema } from '../support/schema-example.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Walks every operation of /openapi.json with the input a careless or hostile client sends
 * (path parameters that name nothing or break the URL, query values of the wrong type or
 * size, bodies that are no JSON, the wrong JSON or too much of it, headers of garbage, methods
 * a path does not take), as each caller entitled to call it. No answer may be a 5xx; a 4xx
 * says what is wrong in the door's own shape (a 2xx is fine: some variants are valid input);
 * the server logs no error and stays healthy. An operation added later is walked too: nothing
 * here lists which routes exist (only the few valid bodies a schema cannot tell).
 */

const ADMIN = 'bad-input-admin-token';
/** Requests in flight at once: enough to finish in time, few enough for two shared cores. */
const GROUP = 6;
/** A request not answered in this long hangs: a defect too. */
const ANSWER_WITHIN_MS = 20_000;
/** What a client may send to a path that does not take it (a 405 names what it takes). */
const OTHER_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Valid bodies for the operations whose schema a plain example does not satisfy (patterns,
 * unions, ids that must exist); the others get one built from their schema.
 */
const BASE_BODIES: Record<string, (f: Fixture) => unknown> = {
  'POST /chat': () => ({ message: 'hello' }),
  'POST /v1/chat/completions': () => ({
    model: 'parley',
    messages: [{ role: 'user', content: 'hello' }],
  }),
  'POST /session': () => ({ key: 'not-a-key' }),
  'POST /feedback': (f) => ({ run_id: f.runId, score: 1 }),
  'PUT /users/{user_id}/profile': () => ({ display_name: 'Alice' }),
  'POST /users/{user_id}/automations': () => ({
    prompt: 'What is new?',
    schedule: { type: 'daily', time: '08:00' },
  }),
  'PATCH /users/{user_id}/automations/{id}': () => ({ name: 'renamed' }),
  'PATCH /users/{user_id}/conversations/{conversation_id}': () => ({ pinned: true }),
  'POST /users/{user_id}/conversations/{conversation_id}/select': (f) => ({ run_id: f.runId }),
  'POST /mcp': () => ({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  'POST /admin/users': () => ({ user_id: `walk-${crypto.randomUUID().slice(0, 8)}` }),
  'POST /admin/users/{user_id}/keys': () => ({}),
  'PATCH /admin/users/{user_id}': () => ({ limits: { chats_per_minute: 1000 } }),
  'POST /admin/mcp-servers': () => ({
    transport: 'http',
    name: `walk-${crypto.randomUUID().slice(0, 8)}`,
    url: 'http://127.0.0.1:9/mcp',
  }),
  'PATCH /admin/mcp-servers/{server_id}': () => ({ trusted: false }),
  'POST /admin/mcp-servers/{server_id}/approve-tools': () => ({ fingerprint: '0'.repeat(64) }),
  'PUT /admin/mcp-servers/{server_id}/users/{user_id}': () => ({ allowed: null }),
  'PUT /users/{user_id}/mcp-servers/{server_id}': () => ({ enabled: true }),
  'POST /users/{user_id}/approvals/{approval_id}': () => ({ decision: 'approve' }),
};

/**
 * Operations that read multipart/form-data: their parts are read as a stream, not validated
 * by a schema, so the spec has no requestBody that says so.
 */
const MULTIPART = new Set(['POST /ingest']);

/** A valid upload, for the variants of an upload's path, query and headers. */
const uploadForm = () => {
  const { body, contentType } = multipartBody([
    { name: 'file', filename: 'walk.txt', data: 'Notes about the walk.' },
  ]);
  return { contentType, body: new Uint8Array(body) };
};

/** Query values that must be given for the call to be valid. */
const BASE_QUERY: Record<string, string> = { q: 'hello', state: 'failed' };

interface Fixture {
  runId: string;
  conversationId: string;
  automationId: string;
  mcpServerId: string;
}

type Caller = 'alice' | 'alice-web' | 'admin';
/**
 * The administrator's routes are walked with API_TOKEN; every other with alice's key, with
 * the web client's session made from it, and with API_TOKEN acting on alice's data (each
 * takes another path through a route).
 */
const callersOf = (template: string): Caller[] =>
  isAdminRoute(template) ? ['admin'] : ['alice', 'alice-web', 'admin'];
const isAdminRoute = (template: string) =>
  template.startsWith('/admin/') || template === '/admin' || template === '/metrics';

function baseParam(op: Operation, name: string, schema: JsonSchema, f: Fixture): string {
  if (name === 'user_id') {
    if (!isAdminRoute(op.template)) return 'alice';
    // Deleting carol would leave the rest of the walk on a user that is not there.
    return op.method === 'DELETE' && op.template === '/admin/users/{user_id}'
      ? 'walk-nobody'
      : 'carol';
  }
  if (name === 'run_id') return f.runId;
  if (name === 'conversation_id') return f.conversationId;
  if (name === 'server_id') return f.mcpServerId;
  if (name === 'id' && op.template.includes('/automations/')) return f.automationId;
  if (name === 'model') return 'parley';
  if (name === '*') return 'walk-none.txt';
  return schema.format === 'uuid' ? crypto.randomUUID() : 'x';
}

describe.each(ENGINES)('bad input to every route on the %s engine', (engine) => {
  let setup: EngineSetup;
  let parley: RunningParley;
  let aliceKey: string;
  let fixture: Fixture;

  const call = (path: string, init: RequestInit & { token?: string | null }) =>
    parley.fetch(path, { ...init, signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
  const admin = async (method: string, path: string, json?: unknown) => {
    const response = await call(path, {
      method,
      ...(json !== undefined && {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(json),
      }),
    });
    const text = await response.text();
    expect(response.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    return JSON.parse(text) as Record<string, unknown>;
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    // Any chat a valid part of a call lets through is answered at once: the walk never waits
    // on the model, and never depends on what it says.
    setup.llm.respond(() => reply.text('ok'));
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        METRICS_ENABLED: 'true',
        EMBEDDINGS_PROVIDER: 'none',
        // Small limits, so one body over every route's limit is small enough to send often.
        MESSAGE_MAX_CHARS: '2000',
        IMAGE_MAX_BYTES: '1024',
        INGEST_MAX_BYTES: String(64 * 1024),
        // The walk's sign-ins with a key of nothing would throttle the web caller's own
        // sign-in: each of those comes from an address of its own (X-Forwarded-For).
        TRUST_PROXY: 'loopback',
      },
    });
    aliceKey = (await admin('POST', '/admin/users', { user_id: 'alice' })).key as string;
    await signIn();
    await admin('POST', '/admin/users', { user_id: 'carol' });
    const chat = await call('/chat', {
      method: 'POST',
      token: aliceKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hello', resumable: true }),
    });
    expect(chat.status).toBe(200);
    await chat.text();
    const automation = await admin(
      'POST',
      '/users/alice/automations',
      BASE_BODIES['POST /users/{user_id}/automations']?.({} as Fixture),
    );
    const server = await admin('POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'walk',
      url: 'http://127.0.0.1:9/mcp',
    });
    fixture = {
      runId: chat.headers.get('x-parley-run-id') as string,
      conversationId: chat.headers.get('x-parley-conversation-id') as string,
      automationId: automation.id as string,
      mcpServerId: server.id as string,
    };
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  /** What the server logged for a 500's request id: where to look. */
  const loggedCause = async (text: string) => {
    let requestId: unknown;
    try {
      requestId = (JSON.parse(text) as { request_id?: unknown }).request_id;
    } catch {
      return '';
    }
    const line = await parley
      .waitForLog((entry) => entry.reqId === requestId && entry.err !== undefined, 2000)
      .catch(() => undefined);
    return line ? ` (logged: ${JSON.stringify(line.err).slice(0, 300)})` : '';
  };

  let webCookie = '';
  let signIns = 0;
  /** Signs the web caller in as the page does (alice's key in the body), keeping the cookie. */
  const signIn = async () => {
    const response = await call('/session', {
      method: 'POST',
      token: null,
      headers: {
        'content-type': 'application/json',
        'x-parley-client': '1',
        'x-forwarded-for': `10.9.${(++signIns >> 8) & 255}.${signIns & 255}`,
      },
      body: JSON.stringify({ key: aliceKey }),
    });
    expect(response.status, await response.text()).toBe(200);
    webCookie = (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  };

  /** How often each status was answered: the walk is worth little if all were 401. */
  const statuses = new Map<number, number>();

  /** Sends one variant; what is wrong with its answer, if anything. */
  const send = async (
    op: Operation,
    base: BaseCall,
    variant: Variant,
    caller: Caller,
  ): Promise<string | undefined> => {
    const method = variant.method ?? op.method;
    const label = `${method} ${op.template} as ${caller} [${variant.what}] → ${variant.path.slice(0, 160)}`;
    let response: Response;
    try {
      response = await call(variant.path, {
        method,
        headers:
          caller === 'alice-web'
            ? { ...variant.headers, cookie: webCookie, 'x-parley-client': '1' }
            : variant.headers,
        body: variant.body,
        token: caller === 'admin' ? ADMIN : caller === 'alice' ? aliceKey : null,
      });
    } catch (error) {
      return `${label}: no answer (${(error as Error).cause ?? error})`;
    }
    const { status } = response;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    // A stream that was let through is not read: closing it is the client's right. Nor is a
    // backup read to its end: each is the whole database, compressed again for every variant
    // that passes (half the embedded walk's time); what a backup holds is test/ops/backup's to
    // prove, and leaving one mid-download must log no error either.
    const type = response.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream') || type.startsWith('application/gzip')) {
      await response.body?.cancel();
    }
    const text = (await response.text().catch(() => '')) as string;
    if (status >= 500) return `${label}: ${status} ${text.slice(0, 200)}${await loggedCause(text)}`;
    if (variant.expectNotFound && status !== 404) {
      return `${label}: ${status}, expected 404: ${text.slice(0, 200)}`;
    }
    // A HEAD answer has no body to read the error from.
    if (status >= 400 && method !== 'HEAD') {
      const problem = errorShapeProblem(variant.path, status, text);
      if (problem) return `${label}: ${problem}`;
    }
    // A generated client knows only the statuses the spec names. What the URL itself breaks
    // is answered before any operation is chosen (a method the path does not take: 405; a
    // path that does not decode: 400; another path: 404; too long: 414, 431).
    const sameUrl = pathnameOf(variant.path) === pathnameOf(basePathOf(op, base));
    if (
      status >= 400 &&
      method === op.method &&
      sameUrl &&
      ![414, 431].includes(status) &&
      !op.responses.includes(String(status))
    ) {
      return `${label}: ${status}, which its OpenAPI responses do not name: ${text.slice(0, 120)}`;
    }
    return undefined;
  };

  it('answers every bad input to every operation with an explained 4xx, and stays healthy', async () => {
    const document = (await (await call('/openapi.json', {})).json()) as OpenApiDocument;
    const operations = operationsOf(document);
    expect(operations.length).toBeGreaterThan(40);
    const roots = [document];
    const failures: string[] = [];
    let sent = 0;
    const walkedPaths = new Set<string>();
    for (const op of operations) {
      const key = `${op.method} ${op.template}`;
      const base: BaseCall = {
        params: Object.fromEntries(
          op.parameters
            .filter((p) => p.in === 'path')
            .map((p) => [p.name, baseParam(op, p.name, p.schema, fixture)]),
        ),
        query: Object.fromEntries(
          op.parameters
            .filter((p) => p.in === 'query' && p.required)
            .map((p) => [p.name, BASE_QUERY[p.name] ?? 'x']),
        ),
        headers: {
          ...(op.template === '/mcp' && { accept: 'application/json, text/event-stream' }),
          ...(op.template.startsWith('/session') && { 'x-parley-client': '1' }),
        },
        json: BASE_BODIES[key]?.(fixture),
        ...(MULTIPART.has(key) && { raw: uploadForm() }),
      };
      const walked = MULTIPART.has(key)
        ? { ...op, body: { mediaTypes: ['multipart/form-data'] } }
        : op;
      const variants = badInputVariants(walked, base, roots);
      if (!walkedPaths.has(op.template)) {
        walkedPaths.add(op.template);
        const taken = operations.filter((o) => o.template === op.template).map((o) => o.method);
        for (const method of OTHER_METHODS.filter((m) => !taken.includes(m))) {
          const path = basePathOf(op, base);
          variants.push({
            what: `${method}, a method the path does not take`,
            method,
            path,
            headers: base.headers,
          });
        }
      }
      // Skip nothing silently: every operation gets at least its header variants.
      expect(variants.length, key).toBeGreaterThan(0);
      const sends = callersOf(op.template).flatMap((caller) =>
        variants.map((variant) => ({ variant, caller })),
      );
      for (let i = 0; i < sends.length; i += GROUP) {
        const group = sends.slice(i, i + GROUP);
        const found = await Promise.all(group.map((s) => send(op, base, s.variant, s.caller)));
        failures.push(...found.filter((f): f is string => f !== undefined));
        sent += group.length;
        // Signing out (DELETE /session) ended the web caller's session: it signs in again.
        if (op.template === '/session') await signIn();
        const health = await call('/health', { token: null }).catch((error) => error as Error);
        if (!(health instanceof Response) || health.status !== 200) {
          const what = health instanceof Response ? health.status : health.message;
          failures.push(
            `/health ${what} after ${key} [${group.map((s) => s.variant.what).join('; ')}]`,
          );
          expect(failures, `the server is down; ${sent} requests were sent`).toEqual([]);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(operations.length * 10);
    // Nothing failed out of sight either (in a stream already answered 200, in the background).
    await parley.settled();
    const errors = parley.logs
      .filter((line) => line.level >= 50)
      .map((line) => `${line.msg} ${JSON.stringify(line.err ?? line.code ?? '').slice(0, 300)}`);
    expect(errors, 'errors the server logged during the walk').toEqual([]);
    // The answers refuse the input, not the caller (POST /session's key of nothing is a 401).
    expect(statuses.get(401) ?? 0, JSON.stringify([...statuses])).toBeLessThan(sent / 100);
    expect(statuses.get(422) ?? 0).toBeGreaterThan(sent / 4);
  }, 600_000);

  it('answers bad paths outside the spec (the web client, the docs, nothing) the same way', async () => {
    const paths = [
      '/%00',
      '/%ED%A0%80',
      '/%zz',
      `/${'a'.repeat(5000)}`,
      '/index.html%00',
      '/assets/..%2F..%2Fpackage.json',
      '/assets/%ED%A0%80.js',
      '/assets/%zz.js',
      `/assets/${'a'.repeat(5000)}.js`,
      '/docs/%zz',
      '/docs/static/..%2F..%2Fpackage.json',
      '/docs/static/%ED%A0%80',
      '/v1/%ED%A0%80',
      '/v1/nothing/%zz',
      '/openapi.json/%zz',
    ];
    const failures: string[] = [];
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const response = await call(path, { method, token: aliceKey });
        const text = await response.text();
        const label = `${method} ${path.slice(0, 80)}`;
        if (response.status >= 500)
          failures.push(`${label}: ${response.status} ${text.slice(0, 200)}`);
        else if (response.status >= 400) {
          const problem = errorShapeProblem(path, response.status, text);
          if (problem) failures.push(`${label}: ${problem}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect((await call('/health', { token: null })).status).toBe(200);
  });
});

const pathnameOf = (path: string) => new URL(path, 'http://parley.test').pathname;

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES, type Engine } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Walks every route of /openapi.json with every kind of caller (bearer keys, and the web
 * client's session cookies, which must have their key's rights) and asserts what each may do
 * to alice's and bob's data. A route that has no rule below fails the test: a route added
 * later cannot skip the authorization review.
 */

const ADMIN = 'walk-admin-token';
type Caller =
  | 'none'
  | 'wrong'
  | 'admin'
  | 'alice'
  | 'bob'
  | 'revoked'
  | 'expired'
  | 'admin-web'
  | 'alice-web';
const CALLERS: Caller[] = [
  'none',
  'wrong',
  'admin',
  'alice',
  'bob',
  'revoked',
  'expired',
  'admin-web',
  'alice-web',
];
/** Callers whose bearer credential is refused. */
const REFUSED: Caller[] = ['wrong', 'revoked', 'expired'];
let clientAddresses = 0;
/** A client address no request used before (10.0.0.1, 10.0.0.2, …). */
const nextClientAddress = () => {
  const n = ++clientAddresses;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};
/** The web client's callers: signed in with that key, then only the session cookie is sent. */
const WEB_CALLERS = { 'admin-web': 'admin', 'alice-web': 'alice' } as const;
type WebCaller = keyof typeof WEB_CALLERS;
const isWeb = (caller: Caller): caller is WebCaller => caller in WEB_CALLERS;
/** Who a caller acts as: a session cookie has its key's rights, no more and no less. */
const actsAs = (caller: Caller): Caller => (isWeb(caller) ? WEB_CALLERS[caller] : caller);
type Target = 'alice' | 'bob';

interface Call {
  method: string;
  path: string;
  headers?: Record<string, string>;
  json?: unknown;
  multipart?: ReturnType<typeof multipartBody>;
}

interface Fixture {
  runOf: Record<Target, string>;
  /** The conversation each target's run is in. */
  conversationOf: Record<Target, string>;
  memoryOf: Record<Target, string>;
  spareKeyId(): Promise<string>;
  /** An enabled MCP server (an HTTP one nothing listens for: chats leave it out). */
  mcpServerId: string;
}

/**
 * - public: every caller gets `status`.
 * - admin: the administrator gets `status`, a user's key 403.
 * - user: a call on a target's data; the administrator and the target's own key get
 *   `status`, another user's key `other` (403, or 404 where existence is not revealed).
 */
type Rule =
  | { kind: 'public'; status: number; call: () => Call }
  | {
      kind: 'admin';
      /** Per engine where the engines answer differently (a backup is the embedded one's). */
      status: number | Record<Engine, number>;
      call: (fixture: Fixture) => Promise<Call> | Call;
    }
  | {
      kind: 'user';
      status: number;
      other: 200 | 403 | 404;
      call: (target: Target, f: Fixture) => Call;
      /** Walked after every other route: it deletes what they use. */
      last?: true;
    };

/** An id no automation has (the owner gets 404, another user 403 before any lookup). */
const NO_AUTOMATION = '00000000-0000-4000-8000-0000000a0700';
/** An id no conversation has. */
const NO_CONVERSATION = '00000000-0000-4000-8000-00000000c0de';

const chat = (target: Target): Call => ({
  method: 'POST',
  path: '/chat',
  json: { message: 'hello', user_id: target },
});

const RULES: Record<string, Rule> = {
  'GET /health': { kind: 'public', status: 200, call: () => ({ method: 'GET', path: '/health' }) },
  'POST /chat': { kind: 'user', status: 200, other: 403, call: chat },
  'GET /v1/models': {
    kind: 'user',
    status: 200,
    other: 200, // no user is named
    call: () => ({ method: 'GET', path: '/v1/models' }),
  },
  'GET /v1/models/{model}': {
    kind: 'user',
    status: 200,
    other: 200,
    call: () => ({ method: 'GET', path: '/v1/models/parley' }),
  },
  'POST /v1/chat/completions': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({
      method: 'POST',
      path: '/v1/chat/completions',
      json: { model: 'parley', messages: [{ role: 'user', content: 'hello' }], user: t },
    }),
  },
  'GET /users/{user_id}/history': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/history` }),
  },
  // The web client's sign-in reads its credential from the body, never from a bearer header:
  // whoever calls, a body that is no key is refused, and signing out is always possible.
  'POST /session': {
    kind: 'public',
    status: 401,
    call: () => ({
      method: 'POST',
      path: '/session',
      headers: { 'x-parley-client': '1' },
      json: { key: 'not-a-key' },
    }),
  },
  'GET /session': {
    kind: 'public',
    status: 200,
    call: () => ({ method: 'GET', path: '/session' }),
  },
  'DELETE /session': {
    kind: 'public',
    status: 200,
    call: () => ({ method: 'DELETE', path: '/session', headers: { 'x-parley-client': '1' } }),
  },
  'POST /reset': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/reset?user_id=${t}` }),
  },
  'GET /documents': {
    kind: 'user',
    status: 200,
    other: 200, // no user is named: each caller lists what it can search
    call: () => ({ method: 'GET', path: '/documents' }),
  },
  'DELETE /documents/{*}': {
    kind: 'user',
    status: 404,
    other: 404, // a key names only its own private sources: another user's is not found
    call: (t) => ({ method: 'DELETE', path: `/documents/private-${t}.txt-missing` }),
  },
  'POST /feedback': {
    kind: 'user',
    status: 200,
    other: 404, // another user's run is as unknown as none
    call: (t, f) => ({ method: 'POST', path: '/feedback', json: { run_id: f.runOf[t], score: 1 } }),
  },
  'GET /reminders/{user_id}': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/reminders/${t}` }),
  },
  'DELETE /reminders/{user_id}/{id}': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({
      method: 'DELETE',
      path: `/reminders/${t}/00000000-0000-4000-8000-000000000000`,
    }),
  },
  'POST /ingest': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({
      method: 'POST',
      path: '/ingest',
      multipart: multipartBody([
        { name: 'user_id', value: t },
        { name: 'file', filename: `walk-${t}.txt`, data: `Notes of ${t} about the walk.` },
      ]),
    }),
  },
  'GET /users/{user_id}/profile': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/profile` }),
  },
  'PUT /users/{user_id}/profile': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({
      method: 'PUT',
      path: `/users/${t}/profile`,
      json: { display_name: t.toUpperCase() },
    }),
  },
  'POST /users/{user_id}/telegram-link': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/users/${t}/telegram-link` }),
  },
  'GET /users/{user_id}/graph': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/graph` }),
  },
  'DELETE /users/{user_id}/graph': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'DELETE', path: `/users/${t}/graph` }),
  },
  'GET /users/{user_id}/memories': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/memories` }),
  },
  'DELETE /users/{user_id}/memories': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'DELETE', path: `/users/${t}/memories` }),
  },
  'DELETE /users/{user_id}/memories/{memory_id}': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t, f) => ({ method: 'DELETE', path: `/users/${t}/memories/${f.memoryOf[t]}` }),
  },
  'GET /users/{user_id}/usage': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/usage` }),
  },
  'GET /users/{user_id}/export': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/export` }),
  },
  'POST /users/{user_id}/conversations': {
    kind: 'user',
    status: 201,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/users/${t}/conversations`, json: {} }),
  },
  'GET /users/{user_id}/conversations': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/conversations` }),
  },
  'DELETE /users/{user_id}/conversations': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'DELETE', path: `/users/${t}/conversations` }),
    last: true,
  },
  'POST /users/{user_id}/automations': {
    kind: 'user',
    status: 201,
    other: 403,
    call: (t) => ({
      method: 'POST',
      path: `/users/${t}/automations`,
      json: { prompt: 'What is new?', schedule: { type: 'daily', time: '08:00' } },
    }),
  },
  'GET /users/{user_id}/automations': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/automations` }),
  },
  'PATCH /users/{user_id}/automations/{id}': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({
      method: 'PATCH',
      path: `/users/${t}/automations/${NO_AUTOMATION}`,
      json: { name: 'renamed' },
    }),
  },
  'DELETE /users/{user_id}/automations/{id}': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'DELETE', path: `/users/${t}/automations/${NO_AUTOMATION}` }),
  },
  'GET /users/{user_id}/automations/{id}/runs': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/automations/${NO_AUTOMATION}/runs` }),
  },
  'POST /users/{user_id}/automations/{id}/pause': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/users/${t}/automations/${NO_AUTOMATION}/pause` }),
  },
  'POST /users/{user_id}/automations/{id}/resume': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/users/${t}/automations/${NO_AUTOMATION}/resume` }),
  },
  'POST /users/{user_id}/automations/{id}/run': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/users/${t}/automations/${NO_AUTOMATION}/run` }),
  },
  'POST /users/{user_id}/automations/{id}/read': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'POST', path: `/users/${t}/automations/${NO_AUTOMATION}/read` }),
  },
  // The fixture's runs were not resumable: their owner (and the administrator) get the 404
  // a resumable run of someone else's would give; another user's key is refused first.
  'GET /users/{user_id}/runs/{run_id}/events': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t, f) => ({ method: 'GET', path: `/users/${t}/runs/${f.runOf[t]}/events` }),
  },
  'POST /users/{user_id}/runs/{run_id}/stop': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t, f) => ({ method: 'POST', path: `/users/${t}/runs/${f.runOf[t]}/stop` }),
  },
  'GET /users/{user_id}/conversations/{conversation_id}': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t, f) => ({ method: 'GET', path: `/users/${t}/conversations/${f.conversationOf[t]}` }),
  },
  'PATCH /users/{user_id}/conversations/{conversation_id}': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t, f) => ({
      method: 'PATCH',
      path: `/users/${t}/conversations/${f.conversationOf[t]}`,
      json: { pinned: true },
    }),
  },
  'DELETE /users/{user_id}/conversations/{conversation_id}': {
    kind: 'user',
    status: 404,
    other: 403,
    call: (t) => ({ method: 'DELETE', path: `/users/${t}/conversations/${NO_CONVERSATION}` }),
  },
  'POST /users/{user_id}/conversations/{conversation_id}/select': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t, f) => ({
      method: 'POST',
      path: `/users/${t}/conversations/${f.conversationOf[t]}/select`,
      json: { run_id: f.runOf[t] },
    }),
  },
  'GET /users/{user_id}/conversations/search': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/conversations/search?q=hello` }),
  },
  'GET /users/{user_id}/conversations/{conversation_id}/export': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t, f) => ({
      method: 'GET',
      path: `/users/${t}/conversations/${f.conversationOf[t]}/export?format=json`,
    }),
  },
  // Parley as an MCP server: the user is the key's own, or the one `user_id` names (the
  // administrator's token names anyone; a key naming another user is 403 before any MCP
  // message is read). Its Origin check is tested in test/mcp/mcp-server.test.ts.
  'POST /mcp': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({
      method: 'POST',
      path: `/mcp?user_id=${t}`,
      headers: { accept: 'application/json, text/event-stream' },
      json: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'list_reminders', arguments: {} },
      },
    }),
  },
  'GET /metrics': { kind: 'admin', status: 200, call: () => ({ method: 'GET', path: '/metrics' }) },
  'POST /admin/users': {
    kind: 'admin',
    status: 201,
    call: () => ({
      method: 'POST',
      path: '/admin/users',
      json: { user_id: `walk-${Math.random().toString(36).slice(2)}` },
    }),
  },
  'GET /admin/users': {
    kind: 'admin',
    status: 200,
    call: () => ({ method: 'GET', path: '/admin/users' }),
  },
  'POST /admin/users/{user_id}/keys': {
    kind: 'admin',
    status: 201,
    call: () => ({ method: 'POST', path: '/admin/users/carol/keys', json: {} }),
  },
  'DELETE /admin/keys/{key_id}': {
    kind: 'admin',
    status: 200,
    call: async (f) => ({ method: 'DELETE', path: `/admin/keys/${await f.spareKeyId()}` }),
  },
  'PATCH /admin/users/{user_id}': {
    kind: 'admin',
    status: 200,
    call: () => ({
      method: 'PATCH',
      path: '/admin/users/carol',
      json: { limits: { chats_per_minute: 100 } },
    }),
  },
  'GET /admin/jobs': {
    kind: 'admin',
    status: 200,
    call: () => ({ method: 'GET', path: '/admin/jobs?state=failed' }),
  },
  'GET /admin/backup': {
    kind: 'admin',
    status: { embedded: 200, server: 409 }, // a PostgreSQL server is backed up with pg_dump
    call: () => ({ method: 'GET', path: '/admin/backup' }),
  },
  'POST /admin/mcp-servers': {
    kind: 'admin',
    status: 201,
    call: () => ({
      method: 'POST',
      path: '/admin/mcp-servers',
      json: {
        transport: 'http',
        name: `walk-${Math.random().toString(36).slice(2, 10)}`,
        url: 'http://127.0.0.1:9/mcp',
      },
    }),
  },
  'GET /admin/mcp-servers': {
    kind: 'admin',
    status: 200,
    call: () => ({ method: 'GET', path: '/admin/mcp-servers' }),
  },
  'GET /admin/mcp-servers/{server_id}': {
    kind: 'admin',
    status: 200,
    call: (f) => ({ method: 'GET', path: `/admin/mcp-servers/${f.mcpServerId}` }),
  },
  'PATCH /admin/mcp-servers/{server_id}': {
    kind: 'admin',
    status: 200,
    call: (f) => ({
      method: 'PATCH',
      path: `/admin/mcp-servers/${f.mcpServerId}`,
      json: { trusted: false },
    }),
  },
  'DELETE /admin/mcp-servers/{server_id}': {
    kind: 'admin',
    status: 404,
    call: () => ({ method: 'DELETE', path: `/admin/mcp-servers/${NO_CONVERSATION}` }),
  },
  'POST /admin/mcp-servers/{server_id}/approve-tools': {
    kind: 'admin',
    status: 409, // no listing with this fingerprint was seen
    call: (f) => ({
      method: 'POST',
      path: `/admin/mcp-servers/${f.mcpServerId}/approve-tools`,
      json: { fingerprint: '0'.repeat(64) },
    }),
  },
  'PUT /admin/mcp-servers/{server_id}/users/{user_id}': {
    kind: 'admin',
    status: 200,
    call: (f) => ({
      method: 'PUT',
      path: `/admin/mcp-servers/${f.mcpServerId}/users/carol`,
      json: { allowed: null },
    }),
  },
  'GET /users/{user_id}/mcp-servers': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t) => ({ method: 'GET', path: `/users/${t}/mcp-servers` }),
  },
  'PUT /users/{user_id}/mcp-servers/{server_id}': {
    kind: 'user',
    status: 200,
    other: 403,
    call: (t, f) => ({
      method: 'PUT',
      path: `/users/${t}/mcp-servers/${f.mcpServerId}`,
      json: { enabled: true },
    }),
  },
  'POST /users/{user_id}/approvals/{approval_id}': {
    kind: 'user',
    status: 404, // no call waits for it
    other: 403,
    call: (t) => ({
      method: 'POST',
      path: `/users/${t}/approvals/${NO_CONVERSATION}`,
      json: { decision: 'approve' },
    }),
  },
  'DELETE /admin/users/{user_id}': {
    kind: 'admin',
    status: 404,
    call: () => ({ method: 'DELETE', path: '/admin/users/nobody-at-all' }),
  },
};

const isLast = (route: string) => {
  const rule = RULES[route];
  return rule?.kind === 'user' && rule.last === true;
};

describe.each(ENGINES)('authorization of every route on the %s engine', (engine) => {
  let parley: RunningParley;
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  const keys: Partial<Record<Caller, string>> = {};
  let fixture: Fixture;
  let clockFile: string;

  const cookies: Partial<Record<WebCaller, string>> = {};
  /** Signs a web caller in as the page does (its key in the body), keeping only the cookie. */
  const signIn = async (caller: WebCaller) => {
    const as = WEB_CALLERS[caller];
    const response = await parley.fetch('/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-parley-client': '1' },
      body: JSON.stringify({ key: as === 'admin' ? ADMIN : keys[as] }),
      token: null,
    });
    expect(response.status, `${caller} signs in`).toBe(200);
    cookies[caller] = (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  };

  const send = async (caller: Caller, call: Call) => {
    const headers: Record<string, string> = { ...call.headers };
    const credential =
      caller === 'admin' ? ADMIN : caller === 'wrong' ? 'not-the-token' : keys[caller];
    if (isWeb(caller)) {
      headers.cookie = cookies[caller] as string;
      headers['x-parley-client'] = '1';
    } else if (credential) headers.authorization = `Bearer ${credential}`;
    // A refused credential counts against its client address, and past 10 a minute that
    // address gets 429 before the credential is looked at (src/http/credential-throttle.ts):
    // the walk's hundreds of refusals would then assert the throttle, not each route's rule.
    // So each refused caller's request comes from an address of its own (TRUST_PROXY below);
    // the throttle has its own test (test/http/bearer-throttle.test.ts).
    if (REFUSED.includes(caller)) headers['x-forwarded-for'] = nextClientAddress();
    let body: string | Uint8Array | undefined;
    if (call.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.json);
    } else if (call.multipart) {
      headers['content-type'] = call.multipart.contentType;
      body = new Uint8Array(call.multipart.body);
    }
    const response = await parley.fetch(call.path, {
      method: call.method,
      headers,
      body,
      token: null,
    });
    const text = await response.text();
    // Signing out ended this caller's session: the walk goes on with a new one.
    if (isWeb(caller) && call.method === 'DELETE' && call.path === '/session') await signIn(caller);
    return { status: response.status, text };
  };

  const admin = async (method: string, path: string, json?: unknown) => {
    const response = await send('admin', { method, path, json });
    expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
    return JSON.parse(response.text) as Record<string, unknown>;
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    llm.respond(() => reply.text('Hello there.'));
    clockFile = join(mkdtempSync(join(tmpdir(), 'parley-clock-')), 'now');
    writeFileSync(clockFile, new Date().toISOString());
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        METRICS_ENABLED: 'true',
        EMBEDDINGS_PROVIDER: 'none',
        PARLEY_TEST_CLOCK_FILE: clockFile,
        TRUST_PROXY: 'loopback',
      },
      token: null,
    });
    for (const user of ['alice', 'bob', 'carol'] as const) {
      const created = await admin('POST', '/admin/users', { user_id: user });
      if (user !== 'carol') keys[user] = created.key as string;
    }
    const revoked = await admin('POST', '/admin/users/alice/keys', {});
    await admin('DELETE', `/admin/keys/${revoked.key_id}`);
    keys.revoked = revoked.key as string;
    const expiring = await admin('POST', '/admin/users/alice/keys', { expires_in_days: 1 });
    keys.expired = expiring.key as string;
    // The service's clock moves two days on: the key has expired.
    writeFileSync(clockFile, new Date(Date.now() + 2 * 86_400_000).toISOString());

    const runOf = {} as Record<Target, string>;
    const conversationOf = {} as Record<Target, string>;
    for (const target of ['alice', 'bob'] as const) {
      const response = await send(target, chat(target));
      const stream = await readChat(new Response(response.text));
      expect(stream.runId).toBeDefined();
      runOf[target] = stream.runId as string;
      const listed = await admin('GET', `/users/${target}/conversations`);
      conversationOf[target] = (listed.conversations as { id: string }[])[0]?.id as string;
      // No longer current: POST /reset and the walk's chats go to another one.
      await admin('POST', `/users/${target}/conversations`, {});
    }
    for (const caller of Object.keys(WEB_CALLERS) as WebCaller[]) await signIn(caller);
    const mcpServer = await admin('POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'walk',
      url: 'http://127.0.0.1:9/mcp',
    });
    await admin('PATCH', `/admin/mcp-servers/${mcpServer.id}`, { enabled: true });
    fixture = {
      mcpServerId: mcpServer.id as string,
      runOf,
      conversationOf,
      memoryOf: {
        alice: '00000000-0000-4000-8000-0000000000a1',
        bob: '00000000-0000-4000-8000-0000000000b0',
      },
      spareKeyId: async () => (await admin('POST', '/admin/users/carol/keys', {})).key_id as string,
    };
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it("answers 404 to a key reaching another user's conversation under its own user", async () => {
    const failures: string[] = [];
    for (const caller of ['alice', 'alice-web'] as const) {
      const theirs = fixture.conversationOf.bob;
      const calls: Call[] = [
        { method: 'GET', path: `/users/alice/conversations/${theirs}` },
        { method: 'PATCH', path: `/users/alice/conversations/${theirs}`, json: { title: 'x' } },
        { method: 'DELETE', path: `/users/alice/conversations/${theirs}` },
        { method: 'GET', path: `/users/alice/conversations/${theirs}/export` },
        {
          method: 'POST',
          path: `/users/alice/conversations/${theirs}/select`,
          json: { run_id: fixture.runOf.bob },
        },
        { method: 'POST', path: '/chat', json: { message: 'hi', conversation_id: theirs } },
        // Bob's turn named in Alice's own conversation is as unknown.
        { method: 'POST', path: '/chat', json: { message: 'hi', parent: fixture.runOf.bob } },
      ];
      for (const call of calls) {
        const { status } = await send(caller, call);
        if (status !== 404) failures.push(`${call.method} ${call.path} as ${caller}: ${status}`);
      }
    }
    expect(failures).toEqual([]);
    // Bob's conversation is untouched.
    const bob = await admin('GET', `/users/bob/conversations/${fixture.conversationOf.bob}`);
    expect((bob.conversation as { title: string }).title).toBe('hello');
  });

  it('has a rule for every route it serves, and every route keeps it', async () => {
    const document = JSON.parse(
      (await send('none', { method: 'GET', path: '/openapi.json' })).text,
    );
    const routes = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, operations]) =>
        Object.keys(operations).map((m) => `${m.toUpperCase()} ${path}`),
      )
      .sort((a, b) => Number(isLast(a)) - Number(isLast(b)));
    const unruled = routes.filter((route) => !(route in RULES));
    expect(unruled, 'routes without an authorization rule').toEqual([]);
    expect(routes.length).toBeGreaterThan(20);

    const failures: string[] = [];
    const check = (route: string, caller: Caller, what: string, got: number, want: number) => {
      if (got !== want) failures.push(`${route} as ${caller} ${what}: ${got}, expected ${want}`);
    };
    for (const route of routes) {
      const rule = RULES[route] as Rule;
      for (const caller of CALLERS) {
        const as = actsAs(caller);
        const authenticated = as === 'admin' || as === 'alice' || as === 'bob';
        if (rule.kind === 'public') {
          check(route, caller, '', (await send(caller, rule.call())).status, rule.status);
        } else if (rule.kind === 'admin') {
          const status = typeof rule.status === 'number' ? rule.status : rule.status[engine];
          const want = !authenticated ? 401 : as === 'admin' ? status : 403;
          check(route, caller, '', (await send(caller, await rule.call(fixture))).status, want);
        } else {
          for (const target of ['alice', 'bob'] as const) {
            const want = !authenticated
              ? 401
              : as === 'admin' || as === target
                ? rule.status
                : rule.other;
            const { status } = await send(caller, rule.call(target, fixture));
            check(route, caller, `on ${target}'s data`, status, want);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it("leaves a user's data as it was after another user's key was refused", async () => {
    await send('admin', {
      method: 'PUT',
      path: '/users/alice/profile',
      json: { display_name: 'Alice Kept' },
    });
    const refused = await send('bob', {
      method: 'PUT',
      path: '/users/alice/profile',
      json: { display_name: 'Mallory' },
    });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text)).toEqual({ detail: expect.any(String) });
    const profile = await send('alice', { method: 'GET', path: '/users/alice/profile' });
    expect(JSON.parse(profile.text).display_name).toBe('Alice Kept');

    // A key without a user_id acts as its own user.
    const own = await send('bob', { method: 'GET', path: '/documents' });
    expect(own.status).toBe(200);
    const reset = await send('bob', { method: 'POST', path: '/reset' });
    expect(JSON.parse(reset.text)).toEqual({ reset: true, user_id: 'bob' });
  });
});

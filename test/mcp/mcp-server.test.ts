import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { multipartBody } from '../support/multipart.ts';
import { seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Parley as an MCP server (`/mcp`), driven by the official SDK's Client over Streamable HTTP,
 * as any user's MCP client would: each key reaches its own user's documents, reminders,
 * memories and graph, and nothing of anyone else's.
 */

const ADMIN = 'mcp-admin-token';
const ALLOWED_ORIGIN = 'https://mcp-client.example';
const MEMORY = {
  alice: '00000000-0000-4000-8000-00000000a11c',
  bob: '00000000-0000-4000-8000-000000000b0b',
};
const TOOLS = [
  'cancel_reminder',
  'delete_memory',
  'list_memories',
  'list_reminders',
  'query_graph',
  'search_documents',
  'set_reminder',
];

/** A JSON-RPC initialize, as the transport specification has a client send it. */
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'raw-test', version: '1.0.0' },
  },
};

describe.each(ENGINES)('Parley as an MCP server on the %s engine', (engine) => {
  let parley: RunningParley;
  let setup: EngineSetup;
  const keys: Record<string, string> = {};
  const clients: Client[] = [];

  /** An SDK client connected to /mcp with this bearer credential. */
  const connect = async (credential: string | undefined, query = '') => {
    const client = new Client({ name: 'parley-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${parley.url}/mcp${query}`), {
      requestInit: credential ? { headers: { authorization: `Bearer ${credential}` } } : {},
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  /** Calls a tool and parses its JSON text (asserting it is no error result). */
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const first = result.content[0];
    if (first?.type !== 'text') throw new Error(`${name} gave no text`);
    return JSON.parse(first.text);
  };
  /** Calls a tool that must refuse: the refusal's text. */
  const refusal = async (client: Client, name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError).toBe(true);
    const first = result.content[0];
    return first?.type === 'text' ? first.text : '';
  };
  const post = (headers: Record<string, string>, body: unknown = INITIALIZE, query = '') =>
    fetch(`${parley.url}/mcp${query}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(body),
    });
  const admin = async (method: string, path: string, json?: unknown) => {
    const response = await parley.fetch(path, {
      method,
      ...(json !== undefined && {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(json),
      }),
    });
    expect(response.status, `${method} ${path}`).toBeLessThan(300);
    return (await response.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    // Its fake model is configured, never asked: no tool here needs the model.
    setup = await engineSetup(engine);
    const { dataDir } = setup;
    await seed(
      { dataDir, databaseUrl: setup.env.DATABASE_URL },
      {
        documents: [
          {
            source: `memory:${MEMORY.alice}`,
            chunks: ['Alice keeps a pet axolotl named Pickle.'],
            userId: 'alice',
          },
          {
            source: `memory:${MEMORY.bob}`,
            chunks: ['Bob is learning the bagpipes.'],
            userId: 'bob',
          },
        ],
        triples: [
          { userId: 'alice', subject: 'Minsu', relation: 'works at', object: 'Samsung' },
          { userId: 'bob', subject: 'Minsu', relation: 'lives in', object: 'Busan' },
        ],
      },
    );
    parley = await startParley({
      dataDir,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        CONV_RAG_ENABLED: 'true',
        MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN,
      },
    });
    for (const user of ['alice', 'bob']) {
      keys[user] = (await admin('POST', '/admin/users', { user_id: user })).key as string;
      const upload = multipartBody([
        {
          name: 'file',
          filename: `${user}-notes.txt`,
          data:
            user === 'alice'
              ? 'The quokka enclosure code is marmalade seven.'
              : 'The llama shed code is thistle nine.',
        },
      ]);
      const ingested = await fetch(`${parley.url}/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys[user]}`, 'content-type': upload.contentType },
        body: new Uint8Array(upload.body),
      });
      expect(ingested.status, await ingested.text()).toBe(200);
    }
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await parley?.stop();
    await setup?.cleanup();
  });

  it("lists a user's tools, with which of them change things", async () => {
    const alice = await connect(keys.alice);
    expect(alice.getServerVersion()?.name).toBe('parley');
    const { tools } = await alice.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
    const readOnly = tools.filter((tool) => tool.annotations?.readOnlyHint).map((t) => t.name);
    expect(readOnly.sort()).toEqual([
      'list_memories',
      'list_reminders',
      'query_graph',
      'search_documents',
    ]);
    const destructive = tools.filter((tool) => tool.annotations?.destructiveHint);
    expect(destructive.map((tool) => tool.name).sort()).toEqual([
      'cancel_reminder',
      'delete_memory',
    ]);
  });

  it("searches the user's own documents and memories, never another user's", async () => {
    const alice = await connect(keys.alice);
    const bob = await connect(keys.bob);
    const found = await call(alice, 'search_documents', { query: 'quokka enclosure code' });
    expect(found.hits[0]).toMatchObject({ source: 'alice-notes.txt' });
    expect(found.hits[0].text).toContain('marmalade seven');
    const memory = await call(alice, 'search_documents', { query: 'axolotl' });
    expect(memory.hits.map((hit: { text: string }) => hit.text).join()).toContain('Pickle');

    for (const query of ['quokka enclosure code marmalade', 'axolotl Pickle']) {
      const theirs = await call(bob, 'search_documents', { query });
      expect(JSON.stringify(theirs.hits)).not.toMatch(/marmalade|Pickle/);
    }
    expect((await call(bob, 'search_documents', { query: 'llama shed' })).hits[0]).toMatchObject({
      source: 'bob-notes.txt',
    });
  });

  it('sets, lists and cancels reminders, each user only their own', async () => {
    const alice = await connect(keys.alice);
    const bob = await connect(keys.bob);
    const listed = await call(alice, 'list_reminders');
    expect(listed).toMatchObject({ reminders: [], total: 0, timezone: expect.any(String) });
    const date = `${Number(listed.today.slice(0, 4)) + 1}${listed.today.slice(4)}`;
    const set = await call(alice, 'set_reminder', { title: 'Dentist', date, time: '09:30' });
    expect(set).toMatchObject({ title: 'Dentist', date, time: '09:30', id: expect.any(String) });

    // What the user sees through the REST API too.
    const rest = await admin('GET', '/reminders/alice');
    expect(rest.reminders).toEqual([expect.objectContaining({ id: set.id, title: 'Dentist' })]);
    expect((await call(alice, 'list_reminders')).reminders).toEqual([
      expect.objectContaining({ id: set.id }),
    ]);

    // Bob neither sees Alice's reminder nor can cancel it.
    expect(await call(bob, 'list_reminders', { include_past: true })).toMatchObject({
      reminders: [],
      total: 0,
    });
    expect(await refusal(bob, 'cancel_reminder', { id: set.id })).toMatch(/No reminder/);
    expect((await admin('GET', '/reminders/alice')).reminders).toHaveLength(1);

    // A date in the past is Parley's refusal, said as such.
    expect(await refusal(alice, 'set_reminder', { title: 'Late', date: '2001-01-01' })).toMatch(
      /in the past/,
    );
    // Arguments past their limits are refused before any service sees them.
    expect(await refusal(alice, 'set_reminder', { title: 'x'.repeat(201), date })).toMatch(
      /title/i,
    );
    // So is text with nothing visible (zero-width spaces, a BOM), which listed as a blank row.
    for (const [name, args] of [
      ['set_reminder', { title: '\u200b\ufeff', date }],
      ['search_documents', { query: '\u200c\u2060' }],
      ['query_graph', { name: '\u200b' }],
    ] as const) {
      expect(await refusal(alice, name, args), name).toContain('must contain a visible character');
    }

    // A NUL character (which PostgreSQL cannot store in text) is the client's mistake, said as
    // such, not an internal error; nothing is stored.
    for (const [name, args] of [
      ['set_reminder', { title: 'Dentist\u0000', date }],
      ['set_reminder', { title: 'Dentist', date, note: 'bring\u0000the card' }],
      ['search_documents', { query: 'quokka\u0000' }],
      ['query_graph', { name: 'Minsu\u0000' }],
    ] as const) {
      expect(await refusal(alice, name, args), name).toContain('NUL');
    }
    expect((await admin('GET', '/reminders/alice')).reminders).toHaveLength(1);

    expect(await call(alice, 'cancel_reminder', { id: set.id })).toEqual({ cancelled: set.id });
    expect((await admin('GET', '/reminders/alice')).reminders).toEqual([]);
  });

  it('reads and deletes memories, each user only their own', async () => {
    const alice = await connect(keys.alice);
    const bob = await connect(keys.bob);
    const mine = await call(alice, 'list_memories');
    expect(mine).toMatchObject({ total: 1, memories: [{ id: MEMORY.alice }] });
    expect(mine.memories[0].text).toContain('axolotl');
    const theirs = await call(bob, 'list_memories');
    expect(theirs).toMatchObject({ total: 1, memories: [{ id: MEMORY.bob }] });

    // Bob naming Alice's memory finds nothing, and it stays.
    expect(await refusal(bob, 'delete_memory', { id: MEMORY.alice })).toMatch(/No memory/);
    expect(await call(alice, 'list_memories')).toMatchObject({ total: 1 });

    expect(await call(bob, 'delete_memory', { id: MEMORY.bob })).toEqual({ deleted: MEMORY.bob });
    expect(await admin('GET', '/users/bob/memories')).toMatchObject({ memories: [] });
    expect(await admin('GET', '/users/alice/memories')).toMatchObject({
      memories: [{ id: MEMORY.alice }],
    });
  });

  it("queries the user's own knowledge graph", async () => {
    const alice = await connect(keys.alice);
    const bob = await connect(keys.bob);
    expect(await call(alice, 'query_graph', { name: 'minsu' })).toMatchObject({
      total: 1,
      relations: [{ subject: 'Minsu', relation: 'works at', object: 'Samsung' }],
    });
    expect(await call(bob, 'query_graph', { name: 'Minsu' })).toMatchObject({
      total: 1,
      relations: [{ subject: 'Minsu', relation: 'lives in', object: 'Busan' }],
    });
    expect(await call(bob, 'query_graph')).toMatchObject({ total: 1 });
    expect(await call(alice, 'query_graph', { name: 'Busan' })).toMatchObject({ total: 0 });
  });

  it('lets the administrator act for the user named in user_id, and no key for another', async () => {
    const asAlice = await connect(ADMIN, '?user_id=alice');
    expect(await call(asAlice, 'list_memories')).toMatchObject({
      memories: [{ id: MEMORY.alice }],
    });
    // Bob's key naming Alice is refused outright, before any MCP message is read.
    const refused = await connect(keys.bob, '?user_id=alice').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(403);
    const raw = await post({ authorization: `Bearer ${keys.bob}` }, INITIALIZE, '?user_id=alice');
    expect(raw.status).toBe(403);
  });

  it('refuses a request without a key, or with a wrong one, with 401', async () => {
    for (const credential of [undefined, 'pk_not-a-real-key-at-all', 'not-the-token']) {
      const refused = await connect(credential).catch((error: unknown) => error);
      expect(refused, String(credential)).toBeInstanceOf(StreamableHTTPError);
      expect((refused as StreamableHTTPError).code).toBe(401);
    }
    const raw = await post({});
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('refuses a foreign Origin with 403 and takes an allowed one', async () => {
    const authorization = `Bearer ${keys.alice}`;
    for (const origin of ['http://evil.example.com', 'null', `${ALLOWED_ORIGIN}:8443`]) {
      const refused = await post({ authorization, origin });
      expect(refused.status, origin).toBe(403);
      expect(((await refused.json()) as { detail: string }).detail).toMatch(/MCP_ALLOWED_ORIGINS/);
    }
    const allowed = await post({ authorization, origin: ALLOWED_ORIGIN });
    expect(allowed.status).toBe(200);
    const initialized = (await allowed.json()) as { result: { serverInfo: { name: string } } };
    expect(initialized.result.serverInfo.name).toBe('parley');
  });

  it('is stateless: no session id is issued, and any request stands on its own', async () => {
    const authorization = `Bearer ${keys.alice}`;
    const initialized = await post({ authorization });
    expect(initialized.status).toBe(200);
    expect(initialized.headers.get('mcp-session-id')).toBeNull();
    // Without a stream, no tools/list_changed can be sent: none is promised.
    const { result } = (await initialized.json()) as { result: { capabilities: unknown } };
    expect(result.capabilities).toMatchObject({ tools: { listChanged: false } });
    // A tools/list without any initialize before it (as on another replica) is answered.
    const listed = await post(
      { authorization, 'mcp-protocol-version': '2025-11-25' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { result: { tools: { name: string }[] } };
    expect(body.result.tools.map((tool: { name: string }) => tool.name).sort()).toEqual(TOOLS);
    // No stream of server-initiated messages, no session to end.
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${parley.url}/mcp`, {
        method,
        headers: { authorization, accept: 'text/event-stream' },
      });
      expect(response.status, method).toBe(405);
    }
    // A message that is no JSON-RPC is the transport's 400, not a crash.
    expect((await post({ authorization }, { hello: 'there' })).status).toBe(400);
  });

  it('answers a body that is not JSON, or none, with a JSON-RPC parse error', async () => {
    // As JSON-RPC 2.0 and the OpenAPI description say (400, a JSON-RPC error), so an MCP
    // client reads it as one, not as a REST route's {"detail": …}.
    for (const body of ['{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', '']) {
      const response = await fetch(`${parley.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${keys.alice}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: expect.stringContaining('Parse error') },
      });
    }
  });

  it('answers a call with malformed params with JSON-RPC "invalid params", not an internal error', async () => {
    const headers = { authorization: `Bearer ${keys.alice}`, 'mcp-protocol-version': '2025-11-25' };
    const cases: [params: unknown, where: string][] = [
      [{ name: 'list_reminders', arguments: [1, 2] }, 'params.arguments'],
      [{ name: 'list_reminders', arguments: 'all' }, 'params.arguments'],
      [{ name: 42 }, 'params.name'],
      [{}, 'params.name'],
    ];
    for (const [id, [params, where]] of cases.entries()) {
      const response = await post(headers, { jsonrpc: '2.0', id, method: 'tools/call', params });
      expect(response.status).toBe(200);
      expect(await response.json(), JSON.stringify(params)).toEqual({
        jsonrpc: '2.0',
        id,
        error: { code: -32602, message: expect.stringMatching(`^Invalid params: ${where}: `) },
      });
    }
    // The same request well formed is answered, on the same stateless door.
    const listed = await post(headers, {
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'list_reminders', arguments: {} },
    });
    expect(((await listed.json()) as { result?: unknown }).result).toBeDefined();
  });

  it('logs each call by its tool and outcome, never its arguments, results or the key', async () => {
    const calls = parley.logs.filter((line) => line.msg === 'mcp tool call');
    expect(calls.find((line) => line.mcp_tool === 'set_reminder' && line.outcome === 'ok')).toEqual(
      expect.objectContaining({ ms: expect.any(Number) }),
    );
    // A refusal is logged by its code.
    expect(calls.map((line) => line.outcome)).toContain('reminder_date_out_of_range');
    await parley.settled();
    const output = parley.output();
    for (const words of ['quokka enclosure', 'marmalade', 'Dentist', 'Pickle', 'axolotl']) {
      expect(output).not.toContain(words);
    }
    for (const key of [keys.alice, keys.bob]) expect(output).not.toContain(key);
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApprovalQuestion,
  approvalIn,
  readChat,
  streamReader,
} from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type Json, jsonCaller } from '../support/json-call.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';

const ADMIN = 'data-admin-token';

describe.each(ENGINES)("a user's data, theirs, on the %s engine", (engine) => {
  let parley: RunningParley;
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let mcp: ToolListMcpServer;
  const keys: Record<string, string> = {};

  const answer = jsonCaller(() => parley);
  /** Status and body only, as its assertions compare them whole. */
  const call = async (...args: Parameters<typeof answer>) => {
    const { status, body } = await answer(...args);
    return { status, body };
  };
  const upload = async (token: string, source: string, text: string, userId?: string) => {
    const { body, contentType } = multipartBody([
      ...(userId ? [{ name: 'user_id', value: userId }] : []),
      { name: 'file', filename: source, data: text },
    ]);
    const response = await parley.fetch('/ingest', {
      method: 'POST',
      token,
      headers: { 'content-type': contentType },
      body: new Uint8Array(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  /** What `search_documents` gave the model when the user asked for `query`. */
  const searchAs = async (token: string, query: string) => {
    llm.enqueue(reply.toolCalls([{ name: 'search_documents', args: { query } }]), reply.text('ok'));
    const before = llm.chats.length;
    const stream = await readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: `look up ${query}` }),
      }),
    );
    expect(stream.text).toBe('ok');
    const followUp = llm.chats[before + 1]?.body.messages ?? [];
    const toolMessage = followUp.find((message) => message.role === 'tool');
    return JSON.parse(JSON.stringify(toolMessage?.content));
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    mcp = await startToolListMcpServer(() => ({ tools: [listedTool('note')] }));
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        CRAG_ENABLED: 'false',
        QUERY_REWRITE_ENABLED: 'false',
        MCP_CREDENTIALS_KEY: 'a'.repeat(64),
      },
      token: null,
    });
    for (const user of ['alice', 'bob']) {
      keys[user] = (await call(ADMIN, 'POST', '/admin/users', { user_id: user })).body.key;
    }
  });
  afterAll(async () => {
    await parley?.stop();
    await mcp?.close();
    await setup?.cleanup();
  });

  it("answers the admin routes' bad input with what to fix, never a 500", async () => {
    const again = await call(ADMIN, 'POST', '/admin/users', { user_id: 'bob' });
    expect(again).toEqual({ status: 409, body: { detail: expect.stringContaining('exists') } });
    expect((await call(ADMIN, 'POST', '/admin/users', { user_id: '' })).status).toBe(422);
    expect((await call(ADMIN, 'POST', '/admin/users', { user_id: 'a\u0007b' })).status).toBe(422);
    expect((await call(ADMIN, 'POST', '/admin/users', {})).status).toBe(422);
    expect((await call(ADMIN, 'POST', '/admin/users/nobody/keys', {})).status).toBe(404);
    const days = await call(ADMIN, 'POST', '/admin/users/bob/keys', { expires_in_days: 0 });
    expect(days.status).toBe(422);
    expect((await call(ADMIN, 'DELETE', '/admin/keys/not-a-uuid')).status).toBe(422);
    expect(
      (await call(ADMIN, 'DELETE', '/admin/keys/00000000-0000-4000-8000-000000000000')).status,
    ).toBe(404);
    const unknownLimit = await call(ADMIN, 'PATCH', '/admin/users/bob', { limits: { speed: 1 } });
    expect(unknownLimit.status).toBe(422);
    const negative = await call(ADMIN, 'PATCH', '/admin/users/bob', {
      limits: { chats_per_minute: -1 },
    });
    expect(negative.status).toBe(422);
    const missing = await call(ADMIN, 'PATCH', '/admin/users/nobody', {
      limits: { chats_per_minute: 1 },
    });
    expect(missing.status).toBe(404);
    // null puts a limit back to the default.
    await call(ADMIN, 'PATCH', '/admin/users/bob', { limits: { chats_per_minute: 3 } });
    const reset = await call(ADMIN, 'PATCH', '/admin/users/bob', {
      limits: { chats_per_minute: null },
    });
    expect(reset.body.limits.chats_per_minute).toBe(20);
  });

  it("keeps a user's uploads private: listed, searched and deleted by that user only", async () => {
    expect(
      (await upload(keys.alice as string, 'alice-diary.txt', 'The zanzibarite is blue.')).status,
    ).toBe(200);
    expect((await upload(ADMIN, 'shared.txt', 'Office hours are nine to five.')).status).toBe(200);
    expect(
      (await upload(ADMIN, 'bob-plan.txt', 'Quetzalfern planting in May.', 'bob')).status,
    ).toBe(200);

    // `private` names the caller's own (the ones they may delete); the administrator gets the
    // spec's shape alone.
    expect((await call(keys.alice as string, 'GET', '/documents')).body).toEqual({
      documents: ['alice-diary.txt', 'shared.txt'],
      private: ['alice-diary.txt'],
    });
    expect((await call(keys.bob as string, 'GET', '/documents')).body).toEqual({
      documents: ['bob-plan.txt', 'shared.txt'],
      private: ['bob-plan.txt'],
    });
    expect((await call(ADMIN, 'GET', '/documents')).body).toEqual({ documents: ['shared.txt'] });

    expect(JSON.stringify(await searchAs(keys.alice as string, 'zanzibarite'))).toContain(
      'alice-diary.txt',
    );
    const bobs = JSON.stringify(await searchAs(keys.bob as string, 'zanzibarite'));
    expect(bobs).not.toContain('zanzibarite is blue');
    expect(bobs).not.toContain('alice-diary.txt');

    expect((await call(keys.bob as string, 'DELETE', '/documents/alice-diary.txt')).status).toBe(
      404,
    );
    const shared = await call(keys.alice as string, 'DELETE', '/documents/shared.txt');
    expect(shared.status).toBe(403);
    expect(shared.body.detail).toContain('shared');
    expect((await call(keys.alice as string, 'GET', '/documents')).body.documents).toContain(
      'alice-diary.txt',
    );
  });

  it('tells a user which listed documents are their own, with a key or a session alike', async () => {
    // Carol's private copy of a name that is also shared counts as hers: she can delete it.
    const carol = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'carol' })).body.key;
    expect((await upload(ADMIN, 'handbook.txt', 'Shared handbook text.')).status).toBe(200);
    expect((await upload(carol, 'handbook.txt', 'Carol’s own handbook notes.')).status).toBe(200);
    expect((await upload(carol, 'carol-only.txt', 'Carol’s list.')).status).toBe(200);
    const expected = {
      documents: ['carol-only.txt', 'handbook.txt', 'shared.txt'],
      private: ['carol-only.txt', 'handbook.txt'],
    };
    expect((await call(carol, 'GET', '/documents')).body).toEqual(expected);

    const signIn = await parley.fetch('/session', {
      method: 'POST',
      token: null,
      headers: { 'x-parley-client': 'web', 'content-type': 'application/json' },
      body: JSON.stringify({ key: carol }),
    });
    expect(signIn.status).toBe(200);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const withSession = await parley.fetch('/documents', { token: null, headers: { cookie } });
    expect(await withSession.json()).toEqual(expected);

    expect((await call(carol, 'DELETE', '/documents/carol-only.txt')).status).toBe(200);
    expect((await call(carol, 'DELETE', '/documents/handbook.txt')).status).toBe(200);
    expect((await call(carol, 'GET', '/documents')).body).toEqual({
      documents: ['handbook.txt', 'shared.txt'],
      private: [],
    });
    expect((await call(ADMIN, 'GET', '/documents')).body).toEqual({
      documents: ['handbook.txt', 'shared.txt'],
    });
    expect((await call(ADMIN, 'DELETE', '/documents/handbook.txt')).status).toBe(200);
    expect((await call(ADMIN, 'DELETE', '/admin/users/carol')).status).toBe(200);
  });

  it('exports everything kept about a user as one JSON document', async () => {
    llm.enqueue(reply.text('Noted, Alice.'));
    const chat = await readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        token: keys.alice as string,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'My cat is called Nabi.' }),
      }),
    );
    expect(chat.runId).toBeDefined();
    await call(keys.alice as string, 'POST', '/feedback', {
      run_id: chat.runId,
      score: 1,
      comment: 'nice',
    });
    await call(keys.alice as string, 'PUT', '/users/alice/profile', { timezone: 'Asia/Seoul' });

    const response = await parley.fetch('/users/alice/export', { token: keys.alice as string });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const data = (await response.json()) as Json;
    expect(data.user_id).toBe('alice');
    expect(data.profile.timezone).toBe('Asia/Seoul');
    expect(JSON.stringify(data.messages)).toContain('My cat is called Nabi.');
    expect(JSON.stringify(data.messages)).toContain('Noted, Alice.');
    const run = data.runs.find((r: Json) => r.run_id === chat.runId);
    expect(run.feedback).toEqual([expect.objectContaining({ score: 1, comment: 'nice' })]);
    expect(data.documents.map((d: Json) => d.source)).toEqual(['alice-diary.txt']);
    expect(JSON.stringify(data)).not.toContain('Quetzalfern'); // nothing of bob's

    expect((await parley.fetch('/users/alice/export', { token: keys.bob as string })).status).toBe(
      403,
    );
  });

  it('exports the user’s MCP settings, always-allowed tools and approval questions', async () => {
    const server = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'notes',
      url: mcp.url,
    });
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${server.body.id}`, { enabled: true });
    await call(keys.alice as string, 'PUT', `/users/alice/mcp-servers/${server.body.id}`, {
      credential: { value: 'Bearer alice-secret-token' },
    });
    // A call that asks alice, who always allows the tool: a question with its arguments.
    llm.enqueue(
      reply.toolCalls([{ name: 'notes__note', args: { text: 'Buy Quokkaberry jam' } }]),
      reply.text('Done.'),
    );
    const response = await parley.fetch('/chat', {
      method: 'POST',
      token: keys.alice as string,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'note it', approvals: 'ask' }),
    });
    const stream = streamReader(response);
    const approval = approvalIn(
      await stream.until((text) => approvalIn(text) !== undefined),
    ) as ApprovalQuestion;
    await call(keys.alice as string, 'POST', `/users/alice/approvals/${approval.id}`, {
      decision: 'always',
    });
    expect(await stream.rest()).toContain('Done.');

    const data = (await (
      await parley.fetch('/users/alice/export', { token: keys.alice as string })
    ).json()) as Json;
    expect(data.mcp_servers).toEqual([
      {
        server: 'notes',
        enabled: null,
        allowed: null,
        has_credential: true,
        credential_header: 'Authorization',
        updated_at: expect.any(String),
        always_allowed: ['note'],
      },
    ]);
    expect(data.tool_approvals).toEqual([
      {
        id: approval.id,
        run_id: expect.any(String),
        server: 'notes',
        tool: 'note',
        arguments: { text: 'Buy Quokkaberry jam' },
        decision: 'always',
        created_at: expect.any(String),
        decided_at: expect.any(String),
      },
    ]);
    // The credential is the user's, but a secret: it is named, never exported.
    expect(JSON.stringify(data)).not.toContain('alice-secret-token');
    await call(ADMIN, 'DELETE', `/admin/mcp-servers/${server.body.id}`);
  });

  it('deletes a user with everything of theirs, and their keys stop working', async () => {
    // Their MCP settings and credential too (issue 33).
    const server = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'erase-me',
      url: 'http://127.0.0.1:9/mcp',
    });
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${server.body.id}`, { enabled: true });
    const choice = await call(
      keys.alice as string,
      'PUT',
      `/users/alice/mcp-servers/${server.body.id}`,
      {
        enabled: false,
        credential: { value: 'Bearer alice-token' },
      },
    );
    expect(choice.status, JSON.stringify(choice.body)).toBe(200);
    const deleted = await call(ADMIN, 'DELETE', '/admin/users/alice');
    expect(deleted).toEqual({ status: 200, body: { deleted: 'alice' } });
    expect((await call(keys.alice as string, 'GET', '/documents')).status).toBe(401);
    expect(
      (await call(ADMIN, 'GET', '/admin/users')).body.users.map((u: Json) => u.user_id),
    ).toEqual(['bob']);
    const left = (await (
      await parley.fetch('/users/alice/export', { token: ADMIN })
    ).json()) as Json;
    expect(left).toMatchObject({
      profile: null,
      messages: [],
      runs: [],
      memories: [],
      graph: [],
      reminders: [],
      documents: [],
    });
    expect((await call(keys.bob as string, 'GET', '/documents')).body.documents).toContain(
      'bob-plan.txt',
    );
    expect(JSON.stringify(await searchAs(keys.bob as string, 'zanzibarite'))).not.toContain(
      'is blue',
    );
    expect((await call(ADMIN, 'DELETE', '/admin/users/alice')).status).toBe(404);

    if (setup.env.DATABASE_URL) {
      // Every table that names a user or an owner: nothing of alice's is left anywhere.
      const client = new pg.Client({ connectionString: setup.env.DATABASE_URL });
      await client.connect();
      try {
        const { rows: columns } = await client.query<{ table_name: string; column_name: string }>(
          `SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = 'public' AND column_name IN ('user_id', 'owner')`,
        );
        expect(columns.length).toBeGreaterThan(10);
        for (const { table_name, column_name } of columns) {
          const { rows } = await client.query(
            `SELECT count(*)::int AS n FROM "${table_name}" WHERE "${column_name}" = 'alice'`,
          );
          expect(rows[0].n, `${table_name}.${column_name}`).toBe(0);
        }
      } finally {
        await client.end();
      }
    }
  });
});

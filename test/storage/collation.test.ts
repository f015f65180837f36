import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApprovalQuestion, approvalIn, streamReader } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type Json, jsonCaller } from '../support/json-call.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';

const ADMIN = 'collation-admin-token';

/**
 * Production databases are often created with a language collation (ICU, en-US here), where
 * 'a' < 'A' < 'b' < 'B'; every other suite runs on C.UTF-8 databases, and the embedded engine
 * is C. Names Parley lists come in code-point order on both engines, whatever the database's
 * collation.
 */
describe('the server engine on a database with an ICU (en-US) collation', () => {
  let setup: EngineSetup;
  let parley: RunningParley;
  let mcp: ToolListMcpServer;
  let key: string;
  const call = jsonCaller(() => parley);
  const upload = async (token: string, source: string) => {
    const { body, contentType } = multipartBody([
      { name: 'file', filename: source, data: `The text of ${source}.` },
    ]);
    const response = await parley.fetch('/ingest', {
      method: 'POST',
      token,
      headers: { 'content-type': contentType },
      body: new Uint8Array(body),
    });
    expect(response.status).toBe(200);
  };

  beforeAll(async () => {
    setup = await engineSetup('server', {}, {}, { locale: 'icu:en-US' });
    mcp = await startToolListMcpServer(() => ({ tools: [listedTool('beta'), listedTool('Zap')] }));
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        CRAG_ENABLED: 'false',
        QUERY_REWRITE_ENABLED: 'false',
      },
      token: null,
    });
    key = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'ann' })).body.key;
  });
  afterAll(async () => {
    await parley?.stop();
    await mcp?.close();
    await setup?.cleanup();
  });

  it('lists and exports document names in code-point order, as the embedded engine does', async () => {
    for (const source of ['b.txt', 'B.txt', 'a.txt', 'A.txt']) await upload(ADMIN, source);
    expect((await call(ADMIN, 'GET', '/documents')).body).toEqual({
      documents: ['A.txt', 'B.txt', 'a.txt', 'b.txt'],
    });

    for (const source of ['notes.txt', 'Notes.txt', 'Plan.txt']) await upload(key, source);
    expect((await call(key, 'GET', '/documents')).body).toEqual({
      documents: ['A.txt', 'B.txt', 'Notes.txt', 'Plan.txt', 'a.txt', 'b.txt', 'notes.txt'],
      private: ['Notes.txt', 'Plan.txt', 'notes.txt'],
    });
    const data = (await (await parley.fetch('/users/ann/export', { token: key })).json()) as Json;
    expect(data.documents.map((document: { source: string }) => document.source)).toEqual([
      'Notes.txt',
      'Plan.txt',
      'notes.txt',
    ]);
  });

  it('lists and exports always-allowed MCP tools in code-point order', async () => {
    const server = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'tools',
      url: mcp.url,
    });
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${server.body.id}`, { enabled: true });
    for (const tool of ['beta', 'Zap']) {
      setup.llm.enqueue(
        reply.toolCalls([{ name: `tools__${tool}`, args: { text: 'x' } }]),
        reply.text('Done.'),
      );
      const stream = streamReader(
        await parley.fetch('/chat', {
          method: 'POST',
          token: key,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: `use ${tool}`, approvals: 'ask' }),
        }),
      );
      const approval = approvalIn(
        await stream.until((text) => approvalIn(text) !== undefined),
      ) as ApprovalQuestion;
      await call(key, 'POST', `/users/ann/approvals/${approval.id}`, { decision: 'always' });
      expect(await stream.rest()).toContain('Done.');
    }
    const listed = (await call(key, 'GET', '/users/ann/mcp-servers')).body.servers;
    expect(listed.map((entry: Json) => entry.always_allowed)).toEqual([['Zap', 'beta']]);
    const data = (await (await parley.fetch('/users/ann/export', { token: key })).json()) as Json;
    expect(data.mcp_servers.map((entry: Json) => entry.always_allowed)).toEqual([['Zap', 'beta']]);
  });
});

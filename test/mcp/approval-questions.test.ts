import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ApprovalQuestion, approvalIn, streamReader } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { jsonCaller } from '../support/json-call.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';

const ADMIN = 'approval-questions-admin';

/**
 * Tool calls that wait for the user's approval: in a resumable answer (the web client's way)
 * the user reloads the page, so the stream that showed the question is gone, and comes back
 * through GET /users/{user_id}/runs/{run_id}/events: the question must be there to answer.
 * And a question whose arguments PostgreSQL cannot store as they are must still be asked.
 */
describe.each(ENGINES)('MCP approval questions, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  let mcp: ToolListMcpServer;
  const call = jsonCaller(() => parley);

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    mcp = await startToolListMcpServer(() => ({ tools: [listedTool('note')] }));
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: { ...setup.env, API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' },
    });
    const created = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'notes',
      url: mcp.url,
    });
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: true });
  }, 120_000);
  afterEach(() => llm.assertNoUnexpected());
  afterAll(async () => {
    await parley?.stop();
    await mcp?.close();
    await setup?.cleanup();
  });

  it('shows the waiting question again to a client that comes back, and takes its decision', async () => {
    const key = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'rita' })).body.key;
    llm.enqueue(
      reply.toolCalls([{ name: 'notes__note', args: { text: 'pay rent' } }]),
      reply.text('All done.'),
    );
    const first = await parley.fetch('/chat', {
      method: 'POST',
      token: key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'note it', approvals: 'ask', resumable: true }),
    });
    const runId = first.headers.get('x-parley-run-id');
    expect(runId).toBeTruthy();
    const asking = streamReader(first);
    const question = approvalIn(await asking.until((raw) => approvalIn(raw) !== undefined));
    if (!question) throw new Error('no question');
    // The page is reloaded: the stream that asked is gone.
    await asking.cancel();

    const again = await parley.fetch(`/users/rita/runs/${runId}/events`, { token: key });
    expect(again.status).toBe(200);
    const resumed = streamReader(again);
    const shown = await resumed.until((raw) => approvalIn(raw) !== undefined);
    expect(approvalIn(shown)?.id).toBe(question.id);
    const decided = await call(key, 'POST', `/users/rita/approvals/${question.id}`, {
      decision: 'deny',
    });
    expect(decided.body).toEqual({ id: question.id, decision: 'deny' });
    const rest = await resumed.rest();
    expect(rest).toContain(`"__approval_decided":{"id":"${question.id}","decision":"deny"}`);
    expect(rest).toContain('All done.');
  });

  it('asks about a call whose arguments hold a NUL character, which PostgreSQL cannot store', async () => {
    const key = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'nul' })).body.key;
    llm.enqueue(
      reply.toolCalls([{ name: 'notes__note', args: { text: 'pay\u0000rent' } }]),
      reply.text('Not noted.'),
    );
    const response = await parley.fetch('/chat', {
      method: 'POST',
      token: key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'note it', approvals: 'ask' }),
    });
    const stream = streamReader(response);
    const asked = await stream.until(
      (raw) => approvalIn(raw) !== undefined || raw.includes('[DONE]'),
    );
    const question = approvalIn(asked);
    if (!question) throw new Error(`not asked:\n${asked}`);
    // The user is shown what the model asked for, as it will be run.
    expect(question.arguments).toEqual({ text: 'pay\u0000rent' });
    const decided = await call(key, 'POST', `/users/nul/approvals/${question.id}`, {
      decision: 'deny',
    });
    expect(decided.body).toEqual({ id: question.id, decision: 'deny' });
    expect(await stream.rest()).toContain('Not noted.');
  });
});

/**
 * A question left waiting by a process that died (SIGKILL mid-wait): no run waits for it
 * any more, and nobody marked it expired. Once MCP_APPROVAL_TIMEOUT_SECONDS has passed, a
 * late answer (a Telegram button, an old tab) must be told it expired, not "approve" as if
 * the call were going to run.
 */
describe.each(ENGINES)(
  'an MCP approval left by a process that died, on the %s engine',
  (engine) => {
    let llm: FakeLlmServer;
    let setup: EngineSetup;
    let parley: RunningParley;
    let mcp: ToolListMcpServer;
    const call = jsonCaller(() => parley);
    const start = async () =>
      startParley({
        dataDir: setup.dataDir,
        token: ADMIN,
        env: {
          ...setup.env,
          API_TOKEN: ADMIN,
          EMBEDDINGS_PROVIDER: 'none',
          MCP_APPROVAL_TIMEOUT_SECONDS: '2',
        },
      });

    beforeAll(async () => {
      setup = await engineSetup(engine);
      llm = setup.llm;
      mcp = await startToolListMcpServer(() => ({ tools: [listedTool('note')] }));
      parley = await start();
      const created = await call(ADMIN, 'POST', '/admin/mcp-servers', {
        transport: 'http',
        name: 'notes',
        url: mcp.url,
      });
      await call(ADMIN, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: true });
    }, 120_000);
    afterAll(async () => {
      await parley?.stop();
      await mcp?.close();
      await setup?.cleanup();
    });

    it('answers a late decision with expired', async () => {
      const key = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'orphan' })).body.key;
      llm.enqueue(reply.toolCalls([{ name: 'notes__note', args: { text: 'pay rent' } }]));
      const response = await parley.fetch('/chat', {
        method: 'POST',
        token: key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'note it', approvals: 'ask' }),
      });
      const question = approvalIn(
        await streamReader(response).until((raw) => approvalIn(raw) !== undefined),
      ) as ApprovalQuestion;
      await parley.stop('SIGKILL');
      parley = await start();
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const late = await call(key, 'POST', `/users/orphan/approvals/${question.id}`, {
        decision: 'approve',
      });
      expect(late.body).toEqual({ id: question.id, decision: 'expired' });
    }, 60_000);
  },
);

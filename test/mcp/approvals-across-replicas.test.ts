import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type EngineStack,
  type ReplicaStack,
  startEngineStack,
  startReplicas,
} from '../support/chat-stack.ts';
import { type ApprovalQuestion, approvalIn, streamReader } from '../support/chat-stream.ts';
import { reply } from '../support/fake-llm-server.ts';

/**
 * An answer waiting for its user's decision on one replica learns of the decision sent to
 * another, through the database; one left unanswered stops waiting when its time is up and
 * the model is told the call was not approved (a late decision then changes nothing).
 */
const EVERYTHING = fileURLToPath(
  import.meta.resolve('@modelcontextprotocol/server-everything/dist/index.js'),
);

describe('MCP approvals across replicas (the server engine)', () => {
  let stack: ReplicaStack;

  beforeAll(async () => {
    stack = await startReplicas(2, { MCP_APPROVAL_TIMEOUT_SECONDS: '3' });
    const [first] = stack.replicas;
    if (!first) throw new Error('no replica');
    const created = await first.fetch('/admin/mcp-servers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transport: 'stdio',
        name: 'everything',
        command: process.execPath,
        args: [EVERYTHING, 'stdio'],
      }),
    });
    const { id } = (await created.json()) as { id: string };
    await first.fetch(`/admin/mcp-servers/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
  }, 240_000);
  afterAll(() => stack?.stop());

  const toolResult = (id: string) =>
    stack.llm.chats
      .flatMap((chat) => chat.body.messages)
      .find((m) => m.role === 'tool' && m.tool_call_id === id)?.content;

  it('takes a decision sent to another replica', async () => {
    const [waiting, deciding] = stack.replicas;
    if (!waiting || !deciding) throw new Error('two replicas');
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'across', name: 'everything__get-sum', args: { a: 2, b: 2 } }]),
      reply.text('Four.'),
    );
    const response = await stack.chat(waiting, {
      message: 'sum',
      user_id: 'rita',
      approvals: 'ask',
    });
    const stream = streamReader(response);
    const approval = approvalIn(
      await stream.until((raw) => approvalIn(raw) !== undefined),
    ) as ApprovalQuestion;
    const decided = await deciding.fetch(`/users/rita/approvals/${approval.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(decided.status).toBe(200);
    const raw = await stream.rest();
    expect(raw).toContain('Four.');
    expect(toolResult('across')).toBe('The sum of 2 and 2 is 4.');
  });

  it('stops waiting when no decision comes in time', async () => {
    const [waiting, other] = stack.replicas;
    if (!waiting || !other) throw new Error('two replicas');
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'late', name: 'everything__get-sum', args: { a: 1, b: 2 } }]),
      reply.text('Nobody answered.'),
    );
    const started = Date.now();
    const response = await stack.chat(waiting, {
      message: 'sum',
      user_id: 'rita',
      approvals: 'ask',
    });
    const stream = streamReader(response);
    const approval = approvalIn(
      await stream.until((raw) => approvalIn(raw) !== undefined),
    ) as ApprovalQuestion;
    const raw = await stream.rest();
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(raw).toContain(`"__approval_decided":{"id":"${approval.id}","decision":"expired"}`);
    expect(toolResult('late')).toBe('Not run: the user did not approve this call in time.');
    const late = await other.fetch(`/users/rita/approvals/${approval.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(await late.json()).toEqual({ id: approval.id, decision: 'expired' });
  });
});

describe('an MCP approval nobody answers, on the embedded engine', () => {
  let stack: EngineStack;
  beforeAll(async () => {
    stack = await startEngineStack('embedded', { MCP_APPROVAL_TIMEOUT_SECONDS: '3' });
    const created = await stack.post('/admin/mcp-servers', {
      transport: 'stdio',
      name: 'everything',
      command: process.execPath,
      args: [EVERYTHING, 'stdio'],
    });
    const { id } = (await created.json()) as { id: string };
    await stack.parley.fetch(`/admin/mcp-servers/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
  }, 120_000);
  afterAll(() => stack?.stop());

  it('stops waiting when no decision comes in time', async () => {
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'late', name: 'everything__get-sum', args: { a: 1, b: 2 } }]),
      reply.text('Nobody answered.'),
    );
    const response = await stack.post('/chat', { message: 'sum', approvals: 'ask' });
    const stream = streamReader(response);
    const raw = await stream.rest();
    expect(raw).toMatch(/"__approval_decided":\{"id":"[0-9a-f-]{36}","decision":"expired"\}/);
    expect(raw).toContain('Nobody answered.');
    const result = stack.llm.chats
      .flatMap((chat) => chat.body.messages)
      .find((m) => m.role === 'tool' && m.tool_call_id === 'late')?.content;
    expect(result).toBe('Not run: the user did not approve this call in time.');
  });
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReplicaStack, startReplicas } from '../support/chat-stack.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 300_000;
const ADMIN = 'replica-mcp-admin';

/**
 * `/mcp` is stateless, so one MCP client behind a load balancer that sends each request to
 * another replica works: here every HTTP request of the official SDK's client goes to the next
 * replica in turn (its initialize to one, each call after it to the other).
 */
describe('one MCP client whose requests alternate between two replicas', () => {
  let stack: ReplicaStack;
  let client: Client;
  const replicasAsked: string[] = [];

  beforeAll(async () => {
    stack = await startReplicas(2, { API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' });
    const [first] = stack.replicas;
    if (!first) throw new Error('no replica started');
    const created = await first.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'roamer' }),
    });
    const { key } = (await created.json()) as { key: string };
    let turn = 0;
    const urls = stack.replicas.map((replica) => replica.url);
    const roundRobin = (input: string | URL, init?: RequestInit) => {
      const base = urls[turn++ % urls.length] as string;
      replicasAsked.push(base);
      const url = new URL(input instanceof URL ? input.href : input);
      return fetch(`${base}${url.pathname}${url.search}`, init);
    };
    client = new Client({ name: 'roaming-client', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${urls[0]}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
        fetch: roundRobin,
      }),
    );
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await client?.close().catch(() => {});
    await stack?.stop();
  });

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const first = result.content[0];
    return first?.type === 'text' ? JSON.parse(first.text) : undefined;
  };

  it('sets a reminder through one replica and lists it through the other', async () => {
    const { today } = await call('list_reminders');
    const date = `${Number(today.slice(0, 4)) + 1}${today.slice(4)}`;
    const set = await call('set_reminder', { title: 'Renew passport', date });
    const listed = await call('list_reminders');
    expect(listed.reminders).toEqual([expect.objectContaining({ id: set.id, date })]);
    expect(await call('cancel_reminder', { id: set.id })).toEqual({ cancelled: set.id });
    expect((await call('list_reminders')).total).toBe(0);
    // Both replicas answered, taking turns.
    expect(new Set(replicasAsked)).toEqual(new Set(stack.replicas.map((r) => r.url)));
  });
});

import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import type { Json } from '../support/json-call.ts';
import { mcpToolOffers } from '../support/mcp-tool-offers.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  failingListing,
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * What a chat offers the model of a user's MCP tools, and what the user's status says of the
 * rest: at most MCP_MAX_TOOLS (default 100) in a stable order, no tool whose schema passes
 * MCP_TOOL_SCHEMA_MAX_CHARS (default 20,000), a listing that pages forever cut, and a failing
 * re-list after `tools/list_changed` said stale until it lists again. The servers are the
 * SDK's own (test/support/tool-list-mcp-server.ts); the model is the fake LLM server, whose
 * recorded requests show the tools sent.
 */

const ADMIN = 'mcp-tool-caps-admin';
const names = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);

describe.each(ENGINES)('the MCP tools a chat offers, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  const servers = {} as Record<
    'many' | 'wide' | 'endless' | 'fickle' | 'shaped',
    ToolListMcpServer
  >;
  const { call, addServer, userWith, chatOffers, toolStatus } = mcpToolOffers(
    () => parley,
    () => llm,
    ADMIN,
  );

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    const many = names(300, 't').map((name) => listedTool(name));
    servers.many = await startToolListMcpServer(() => ({ tools: [...many].reverse() }));
    const wide = [listedTool('huge', 25_000), listedTool('small'), listedTool('tiny')];
    servers.wide = await startToolListMcpServer(() => ({ tools: wide }));
    // Every page names a next one: five tools a page, forever.
    servers.endless = await startToolListMcpServer((cursor) => {
      const page = Number(cursor ?? 0);
      return { tools: names(5, `p${page}_`).map((n) => listedTool(n)), nextCursor: `${page + 1}` };
    });
    servers.fickle = await startToolListMcpServer(() => ({ tools: [listedTool('steady')] }));
    // One tool's output schema is no JSON Schema a validator can compile (a type that does
    // not exist, a $ref to nothing): the server's other tools are not its hostages.
    servers.shaped = await startToolListMcpServer(() => ({
      tools: [
        listedTool('plain'),
        {
          ...listedTool('typo'),
          outputSchema: { type: 'object', properties: { n: { type: 'integr' } } },
        } as Tool,
        {
          ...listedTool('dangling'),
          outputSchema: { type: 'object', properties: { n: { $ref: '#/$defs/missing' } } },
        },
      ],
    }));
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: { ...setup.env, API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' },
    });
    for (const [name, server] of Object.entries(servers)) await addServer(name, server.url);
  }, 120_000);
  afterEach(() => llm.assertNoUnexpected());
  afterAll(async () => {
    await parley?.stop();
    for (const server of Object.values(servers)) await server.close();
    await setup?.cleanup();
  });

  it('offers at most 100 of 300 tools, the same ones every chat, and names the rest', async () => {
    const key = await userWith('ann', 'many');
    const first = await chatOffers('ann', key, 'many');
    expect(first).toHaveLength(100);
    // Tools by name, not the order the server lists them in (reversed).
    expect([...first].sort()).toEqual(names(100, 't').map((n) => `many__${n}`));
    expect(await chatOffers('ann', key, 'many')).toEqual(first);
    const status = await toolStatus('ann', key, 'many');
    expect(status).toMatchObject({ listed: 300, offered: 100, listing_cut: false });
    expect(status.left_out).toHaveLength(200);
    expect(status.left_out[0]).toEqual({ name: 't100', reason: 'tool_limit' });
    expect(status.left_out.every((t: Json) => t.reason === 'tool_limit')).toBe(true);
  });

  it('leaves out a tool whose input schema is over 20,000 characters, and says so', async () => {
    const key = await userWith('bea', 'wide');
    expect((await chatOffers('bea', key, 'wide')).sort()).toEqual(['wide__small', 'wide__tiny']);
    expect(await toolStatus('bea', key, 'wide')).toEqual({
      listed: 3,
      offered: 2,
      left_out: [{ name: 'huge', reason: 'schema_too_large' }],
      listing_cut: false,
      stale_since: null,
    });
  });

  it('stops reading a listing that pages forever, and says it was cut', async () => {
    const key = await userWith('cy', 'endless');
    const started = Date.now();
    expect(await chatOffers('cy', key, 'endless')).toHaveLength(100);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(servers.endless.listCalls).toBe(20);
    expect(await toolStatus('cy', key, 'endless')).toMatchObject({
      listed: 100,
      offered: 100,
      listing_cut: true,
    });
    await parley.waitForLog((l) => l.code === 'mcp_tool_listing_cut');
  });

  it('offers a server whose tools include an output schema no validator can compile', async () => {
    const key = await userWith('eve', 'shaped');
    expect((await chatOffers('eve', key, 'shaped')).sort()).toEqual([
      'shaped__dangling',
      'shaped__plain',
      'shaped__typo',
    ]);
    const servers = (await call(ADMIN, 'GET', '/admin/mcp-servers')).body.servers;
    expect(servers.find((s: Json) => s.name === 'shaped').status.state).toBe('up');
    await parley.waitForLog((l) => l.code === 'mcp_output_schema_unusable');
  });

  it('says since when a re-list after tools/list_changed fails, and clears it once it lists', async () => {
    const key = await userWith('dee', 'fickle');
    expect(await chatOffers('dee', key, 'fickle')).toEqual(['fickle__steady']);
    const working = servers.fickle.listing;
    servers.fickle.listing = failingListing;
    await servers.fickle.notifyChanged();
    await waitFor(async () => (await toolStatus('dee', key, 'fickle')).stale_since !== null);
    const since = (await toolStatus('dee', key, 'fickle')).stale_since;
    expect(Date.parse(since)).toBeLessThanOrEqual(Date.now());
    // Meanwhile the older tools are still offered.
    expect(await chatOffers('dee', key, 'fickle')).toEqual(['fickle__steady']);
    const failedLists = servers.fickle.listCalls;
    servers.fickle.listing = working;
    // Tried again with back-off (1, 2, 4 s...): fresh once a try lists.
    await waitFor(
      async () => (await toolStatus('dee', key, 'fickle')).stale_since === null,
      20_000,
    );
    expect(servers.fickle.listCalls).toBeGreaterThan(failedLists);
    expect((await toolStatus('dee', key, 'fickle')).offered).toBe(1);
  }, 30_000);
});

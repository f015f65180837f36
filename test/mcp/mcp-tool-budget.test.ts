import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { mcpToolOffers } from '../support/mcp-tool-offers.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';

/**
 * MCP_MAX_TOOLS and MCP_TOOL_SCHEMA_MAX_CHARS set to small values, and tool names a model
 * provider refuses: what the model is sent (the fake model's recorded request) and what the
 * user's status says. The budget is shared round-robin over the user's servers by name, so a
 * server with more tools than the whole budget does not crowd out the others.
 */

const ADMIN = 'mcp-tool-budget-admin';
const MAX_TOOLS = 6;
const SCHEMA_MAX_CHARS = 500;
const names = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);
const limitedOut = (tools: string[]) => tools.map((name) => ({ name, reason: 'tool_limit' }));
/** listedTool's schema is 74 characters of JSON and its padding. */
const schemaOf = (chars: number) => chars - 74;
const TOO_LONG = 'x'.repeat(60); // 65 characters once `odd__` is put in front: over 64

describe.each(ENGINES)('a small MCP tool budget, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  const servers: Record<string, ToolListMcpServer> = {};
  const { addServer, userWith, chatOffers, toolStatus } = mcpToolOffers(
    () => parley,
    () => llm,
    ADMIN,
  );

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    const listings = {
      alpha: names(20, 'a').map((name) => listedTool(name)),
      beta: names(4, 'b').map((name) => listedTool(name)),
      gamma: [listedTool('g000')],
      wide: [
        listedTool('at_limit', schemaOf(SCHEMA_MAX_CHARS)),
        listedTool('over_limit', schemaOf(SCHEMA_MAX_CHARS + 1)),
        listedTool('small'),
      ],
      odd: [listedTool('bad name!'), listedTool(TOO_LONG), listedTool('fine')],
    };
    for (const [name, tools] of Object.entries(listings)) {
      servers[name] = await startToolListMcpServer(() => ({ tools: [...tools].reverse() }));
    }
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        MCP_MAX_TOOLS: String(MAX_TOOLS),
        MCP_TOOL_SCHEMA_MAX_CHARS: String(SCHEMA_MAX_CHARS),
      },
    });
    for (const [name, server] of Object.entries(servers)) await addServer(name, server.url);
  }, 120_000);
  afterEach(() => llm.assertNoUnexpected());
  afterAll(async () => {
    await parley?.stop();
    for (const server of Object.values(servers)) await server.close();
    await setup?.cleanup();
  });

  it('shares MCP_MAX_TOOLS round-robin: a server with more tools than it leaves the others theirs', async () => {
    const key = await userWith('ann', 'alpha', 'beta', 'gamma');
    const offered = await chatOffers('ann', key, 'alpha', 'beta', 'gamma');
    // 6 over 3 servers: gamma has 1, so its unused place goes round; alpha, first by name, gets
    // the odd one.
    expect([...offered].sort()).toEqual([
      'alpha__a000',
      'alpha__a001',
      'alpha__a002',
      'beta__b000',
      'beta__b001',
      'gamma__g000',
    ]);
    expect(await chatOffers('ann', key, 'alpha', 'beta', 'gamma')).toEqual(offered);
    expect(await toolStatus('ann', key, 'alpha')).toEqual({
      listed: 20,
      offered: 3,
      left_out: limitedOut(names(20, 'a').slice(3)),
      listing_cut: false,
      stale_since: null,
    });
    expect(await toolStatus('ann', key, 'beta')).toMatchObject({
      listed: 4,
      offered: 2,
      left_out: limitedOut(['b002', 'b003']),
    });
    expect(await toolStatus('ann', key, 'gamma')).toMatchObject({
      listed: 1,
      offered: 1,
      left_out: [],
    });
  });

  it('gives the whole budget to one server when it is the only one switched on', async () => {
    const key = await userWith('bob', 'alpha');
    expect((await chatOffers('bob', key, 'alpha')).sort()).toEqual(
      names(MAX_TOOLS, 'a').map((name) => `alpha__${name}`),
    );
    expect(await toolStatus('bob', key, 'alpha')).toMatchObject({ listed: 20, offered: 6 });
  });

  it('leaves out a tool whose schema is one character past MCP_TOOL_SCHEMA_MAX_CHARS', async () => {
    const key = await userWith('cy', 'wide');
    expect((await chatOffers('cy', key, 'wide')).sort()).toEqual(['wide__at_limit', 'wide__small']);
    expect(await toolStatus('cy', key, 'wide')).toEqual({
      listed: 3,
      offered: 2,
      left_out: [{ name: 'over_limit', reason: 'schema_too_large' }],
      listing_cut: false,
      stale_since: null,
    });
  });

  it('does not offer a tool whose name a model provider refuses, and says so', async () => {
    const key = await userWith('dee', 'odd');
    expect(await chatOffers('dee', key, 'odd')).toEqual(['odd__fine']);
    expect(await toolStatus('dee', key, 'odd')).toEqual({
      listed: 3,
      offered: 1,
      left_out: [
        { name: 'bad name!', reason: 'name_not_accepted' },
        { name: TOO_LONG, reason: 'name_not_accepted' },
      ],
      listing_cut: false,
      stale_since: null,
    });
  });
});

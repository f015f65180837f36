import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { mcpToolOffers } from '../support/mcp-tool-offers.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  failingListing,
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { englishContext, launchChromium, seriousViolations, signIn } from './browser.ts';

const ADMIN = 'browser-mcp-tool-counts-admin';

/**
 * How many of each MCP server's tools a user's chats get, where the user switches their
 * servers on and off (Profile), in Chromium: MCP_MAX_TOOLS=6 shared over four servers, a tool
 * whose name models refuse, a listing that pages forever (cut) and one whose re-list fails
 * (stale). What the page says is what the status route says, read as a screen reader would.
 */
describe.each(ENGINES)('MCP tool counts in the web client, on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;
  let browser: Browser;
  let page: Page;
  const servers: Record<string, ToolListMcpServer> = {};
  const { addServer, userWith, chatOffers, toolStatus } = mcpToolOffers(
    () => parley,
    () => llm,
    ADMIN,
  );

  beforeAll(async () => {
    browser = await launchChromium();
    setup = await engineSetup(engine);
    llm = setup.llm;
    const alpha = Array.from({ length: 10 }, (_, i) => listedTool(`a${i}`));
    servers.alpha = await startToolListMcpServer(() => ({ tools: alpha }));
    servers.beta = await startToolListMcpServer(() => ({
      tools: [listedTool('fine'), listedTool('bad name!')],
    }));
    servers.endless = await startToolListMcpServer((cursor) => {
      const page = Number(cursor ?? 0);
      const tools = [0, 1, 2, 3, 4].map((i) => listedTool(`p${page}_${i}`));
      return { tools, nextCursor: `${page + 1}` };
    });
    servers.fickle = await startToolListMcpServer(() => ({ tools: [listedTool('steady')] }));
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: { ...setup.env, API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none', MCP_MAX_TOOLS: '6' },
    });
    for (const [name, server] of Object.entries(servers)) await addServer(name, server.url);
    const key = await userWith('ann', ...Object.keys(servers));
    // A chat lists every server's tools: 6 places, one to each server in turn.
    expect((await chatOffers('ann', key, ...Object.keys(servers))).sort()).toEqual([
      'alpha__a0',
      'alpha__a1',
      'beta__fine',
      'endless__p0_0',
      'endless__p0_1',
      'fickle__steady',
    ]);
    servers.fickle.listing = failingListing;
    await servers.fickle.notifyChanged();
    await waitFor(async () => (await toolStatus('ann', key, 'fickle')).stale_since !== null);

    const context = await englishContext(browser, { width: 1000, height: 900 });
    page = await context.newPage();
    await signIn(page, parley.url, key);
    await page.getByRole('link', { name: 'Profile' }).click();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
    for (const server of Object.values(servers)) await server.close();
    await setup?.cleanup();
  });

  /** What a screen reader says of a server's switch: its name and its description. */
  const announced = async (name: string) => {
    const cdp = await page.context().newCDPSession(page);
    const { root } = await cdp.send('DOM.getDocument');
    const { nodes } = await cdp.send('Accessibility.queryAXTree', {
      nodeId: root.nodeId,
      accessibleName: name,
      role: 'checkbox',
    });
    await cdp.detach();
    return nodes.map((node) => node.description?.value);
  };

  it('says of each server how many tools are offered and left out, with the switch it belongs to', async () => {
    await page.getByRole('checkbox', { name: 'Use alpha' }).waitFor();
    expect(await announced('Use alpha')).toEqual(['2 tools offered, 8 left out']);
    expect(await announced('Use beta')).toEqual(['1 tool offered, 1 left out']);
    expect(await announced('Use fickle')).toEqual([
      expect.stringMatching(
        /^1 tool offered Its tool list could not be refreshed since .+; its earlier tools are offered meanwhile\.$/,
      ),
    ]);
    expect(await announced('Use endless')).toEqual([
      '2 tools offered, 98 left out Its tool list was cut: the server lists more tools than Parley reads.',
    ]);
    await page.getByText('1 tool offered, 1 left out').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('names the tools left out and why', async () => {
    const beta = page.getByText('1 tool offered, 1 left out').locator('../..');
    await beta.getByText('Left out, and why').click();
    expect(await beta.getByRole('listitem').allTextContents()).toEqual([
      'bad name!: models do not accept its name',
    ]);
  });
});

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { englishContext, launchChromium, signIn } from './browser.ts';

const TOKEN = 'browser-mcp-admin-page-token';
const FAILING = "process.stderr.write('upstream token missing\\n'); process.exit(2)";

/**
 * The administrator's MCP servers in the web client's Admin page (issue 33), in Chromium: a
 * server is added disabled with the exact command shown, enabled, and when it cannot start the
 * page says why, with its stderr.
 */
describe.each(ENGINES)('MCP servers on the Admin page, on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    setup = await engineSetup(engine, { API_TOKEN: TOKEN });
    llm = setup.llm;
    parley = await startParley({ dataDir: setup.dataDir, token: TOKEN, env: setup.env });
    const context = await englishContext(browser, { width: 1000, height: 900 });
    page = await context.newPage();
    await signIn(page, parley.url, TOKEN);
    await page.getByRole('link', { name: 'Admin' }).click();
  });
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
    await setup?.cleanup();
  });

  it('adds a server showing its exact command, enables it, and says why it is down', async () => {
    const form = page.getByRole('form', { name: 'Add MCP server' });
    await form.getByLabel('Name').fill('upstream');
    await form.getByLabel('Command').fill(process.execPath);
    await form.getByLabel('Arguments (one per line)').fill(`-e\n${FAILING}`);
    await form.getByRole('button', { name: 'Add MCP server' }).click();
    const card = page.getByRole('article', { name: 'upstream' });
    await card.waitFor();
    expect(await card.locator('pre').first().textContent()).toBe(
      [process.execPath, '-e', FAILING].map((part) => JSON.stringify(part)).join(' '),
    );
    expect(await card.getByRole('status').textContent()).toBe('Disabled');
    await card.getByRole('button', { name: 'Enable' }).click();
    await card.getByRole('button', { name: 'Disable' }).waitFor();
    expect(await card.getByRole('status').textContent()).toBe('Not used yet');

    // A chat starts it; it exits at once.
    llm.enqueue(reply.text('Without it.'));
    const chat = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hello' }),
    });
    expect(await chat.text()).toContain('Without it.');
    await expect
      .poll(
        async () => {
          await page.getByRole('link', { name: 'Chat' }).click();
          await page.getByRole('link', { name: 'Admin' }).click();
          return card.getByRole('status').textContent({ timeout: 5_000 });
        },
        { timeout: 20_000 },
      )
      .toBe('Down: the server process exited while starting (code 2)');
    await card.getByText('Its last error output').click();
    await expect
      .poll(() => card.locator('details pre').textContent())
      .toBe('upstream token missing');
  });
});

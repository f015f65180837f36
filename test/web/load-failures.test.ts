import type { Browser, Locator, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { englishContext, launchChromium, signIn } from './browser.ts';

const TOKEN = 'browser-load-failures-token';

/**
 * What a user sees when a page's or a panel's load fails, in Chromium: the server answers 503
 * (a database gone away), then the network drops the request, then it goes through. Each
 * failure is an alert that says what could not be loaded and why, with "Try again"; the try
 * that goes through shows what was to be loaded, and the alert is gone. (Only the browser's
 * request is failed, never Parley's code: one engine is enough, as for the profile's test.)
 */
describe('loads that fail in the web client, in Chromium', () => {
  let llm: FakeLlmServer;
  let parley: RunningParley;
  let browser: Browser;
  let page: Page;
  let adminPage: Page;
  let conversation: string;
  /** A conversation of 25 turns: its first page shows the newest 20. */
  let long: string;

  const call = async (method: string, path: string, body?: unknown, key?: string) => {
    const response = await parley.fetch(path, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(response.status, `${method} ${path}`).toBeLessThan(300);
    return response.json() as Promise<Record<string, unknown>>;
  };

  beforeAll(async () => {
    browser = await launchChromium();
    llm = await startFakeLlmServer();
    parley = await startParley({
      // 26 chats before the tests: above the default 20 a minute.
      env: { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url, LIMIT_CHATS_PER_MINUTE: '100' },
    });
    const { key } = (await call('POST', '/admin/users', { user_id: 'alice' })) as { key: string };
    await call('POST', '/users/alice/automations', {
      prompt: 'Summarise the news',
      name: 'Morning news',
      schedule: { type: 'daily', time: '08:00' },
    });
    const server = await call('POST', '/admin/mcp-servers', {
      transport: 'stdio',
      name: 'upstream',
      command: process.execPath,
      args: ['-e', 'process.exit(0)'],
    });
    // Enabled, so a user's list has it (it is started only by a chat, which none uses).
    await call('PATCH', `/admin/mcp-servers/${server.id}`, { enabled: true });
    long = String((await call('POST', '/users/alice/conversations', {}, key)).id);
    for (let i = 1; i <= 25; i++) {
      llm.enqueue(reply.text(`Answer number ${i}.`));
      const turn = await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ message: `Question number ${i}?`, conversation_id: long }),
      });
      expect(await turn.text()).toContain(`Answer number ${i}.`);
    }
    // The conversation "Chat" opens is the last one created or chatted in: this one.
    await call('POST', '/users/alice/conversations', {}, key);
    llm.enqueue(reply.text('Paris, of course.'));
    const chat = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ message: 'Capital of France?' }),
    });
    expect(await chat.text()).toContain('Paris, of course.');
    const listed = (await call('GET', '/users/alice/conversations', undefined)) as {
      conversations: Array<{ id: string }>;
    };
    conversation = listed.conversations[0]?.id ?? '';

    const signedInPage = async (secret: string) => {
      const context = await englishContext(browser, { width: 1000, height: 900 });
      const signed = await context.newPage();
      await signIn(signed, parley.url, secret);
      await signed.getByRole('button', { name: 'Sign out' }).waitFor();
      return signed;
    };
    page = await signedInPage(key);
    adminPage = await signedInPage(TOKEN);
  });
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
    await llm?.close();
  });

  /**
   * Fails the GETs of `url` (503, then a dropped network) and checks what the user sees at
   * each step: `open` makes the page ask for the first time, "Try again" the next two; the
   * third goes through and `loaded` shows.
   */
  const failThenLoad = async (
    on: Page,
    url: RegExp,
    what: string,
    open: () => Promise<unknown>,
    loaded: Locator,
    whileFailed?: () => Promise<void>,
  ) => {
    const alert = on.getByRole('alert').filter({ hasText: what });
    const tryAgain = alert.getByRole('button', { name: 'Try again' });
    const failures = [
      {
        fail: (route: Route) =>
          route.fulfill({ status: 503, json: { detail: 'Service Unavailable' } }),
        why: 'Service Unavailable',
      },
      { fail: (route: Route) => route.abort('internetdisconnected'), why: 'Failed to fetch' },
    ];
    let failed = 0;
    for (const [i, { fail, why }] of failures.entries()) {
      await on.route(url, async (route) => {
        if (route.request().method() !== 'GET') return route.fallback();
        await fail(route);
        failed += 1;
      });
      if (i === 0) await open();
      else await tryAgain.click(); // tried again, and failed again: still said, still offered
      await expect.poll(() => failed).toBeGreaterThanOrEqual(i + 1);
      await alert.waitFor({ timeout: 10_000 });
      expect(await alert.textContent()).toContain(`${what}: ${why}`);
      await tryAgain.waitFor({ timeout: 10_000 });
      expect(await loaded.count()).toBe(0);
      await whileFailed?.();
      await on.unroute(url);
    }
    await tryAgain.click();
    await loaded.first().waitFor({ timeout: 10_000 });
    await alert.waitFor({ state: 'detached', timeout: 10_000 });
  };

  it('says when the sign-in could not be checked, and checks it again on "Try again"', async () => {
    // The page asks who is signed in as it opens. That failing (the server answers 503 when
    // its database is gone) showed the sign-in form, as if the session were over.
    await failThenLoad(
      page,
      /\/session$/,
      'Could not check your sign-in',
      () => page.reload(),
      page.getByRole('button', { name: 'Sign out' }),
      // Not told to sign in again: the session may well be good.
      async () => expect(await page.getByLabel('API key').count()).toBe(0),
    );
  });

  it('says when the reminders could not be loaded, and loads them on "Try again"', async () => {
    await failThenLoad(
      page,
      /\/reminders\/alice$/,
      'Could not load your reminders',
      () => page.getByRole('link', { name: 'Reminders' }).click(),
      page.getByText('No reminders.'),
    );
  });

  it('says when the memories could not be loaded, and loads them on "Try again"', async () => {
    await failThenLoad(
      page,
      /\/users\/alice\/memories$/,
      'Could not load your memories',
      () => page.getByRole('link', { name: 'Memories' }).click(),
      page.getByText('No memories.'),
    );
  });

  it('says when the graph could not be loaded, and loads it on "Try again"', async () => {
    await failThenLoad(
      page,
      /\/users\/alice\/graph$/,
      'Could not load your graph',
      () => page.getByRole('link', { name: 'Graph' }).click(),
      page.getByText('No relations.'),
    );
  });

  it('says when the usage could not be loaded, and loads it on "Try again"', async () => {
    await page.getByRole('link', { name: 'Chat' }).click();
    await failThenLoad(
      page,
      /\/users\/alice\/usage$/,
      'Could not load your usage',
      () => page.getByRole('link', { name: 'Profile' }).click(),
      page.getByRole('rowheader', { name: 'tokens / day' }),
    );
  });

  it('says when your MCP servers could not be loaded, and loads them on "Try again"', async () => {
    await page.getByRole('link', { name: 'Chat' }).click();
    await failThenLoad(
      page,
      /\/users\/alice\/mcp-servers$/,
      'Could not load your MCP servers',
      () => page.getByRole('link', { name: 'Profile' }).click(),
      page.getByRole('checkbox', { name: 'Use upstream' }),
    );
  });

  it('says when the documents could not be loaded, and loads them on "Try again"', async () => {
    await failThenLoad(
      page,
      /\/documents$/,
      'Could not load the documents',
      () => page.getByRole('link', { name: 'Documents' }).click(),
      page.getByText('No documents yet.'),
      // Not "Loading…" for good: nothing is loading any more.
      async () => expect(await page.getByText('Loading…').count()).toBe(0),
    );
  });

  it('says when the automations could not be loaded, and loads them on "Try again"', async () => {
    await failThenLoad(
      page,
      /\/users\/alice\/automations$/,
      'Could not load your automations',
      () => page.getByRole('link', { name: /^Automations/ }).click(),
      page.getByText('Morning news'),
    );
  });

  it('says when the conversations could not be loaded, and loads them on "Try again"', async () => {
    await page.getByRole('link', { name: 'Reminders' }).click();
    const list = page.getByRole('navigation', { name: 'Conversations' });
    await failThenLoad(
      page,
      /\/users\/alice\/conversations\?limit=50$/,
      'Could not load your conversations',
      () => page.goto(`${parley.url}/#/c/${conversation}`),
      list.getByRole('link'),
    );
  });

  it('says when "Chat" could not find the conversation to open, and opens it on "Try again"', async () => {
    // "Chat" opens the current conversation: the list is asked which one that is.
    await page.getByRole('link', { name: 'Reminders' }).click();
    await failThenLoad(
      page,
      /\/users\/alice\/conversations\?limit=50$/,
      'Could not open a conversation',
      () => page.getByRole('link', { name: 'Chat' }).click(),
      page.getByRole('log', { name: 'Conversation' }).getByText('Paris, of course.'),
    );
    // The list, which failed with it, was loaded again with it.
    await page
      .getByRole('navigation', { name: 'Conversations' })
      .getByRole('link')
      .first()
      .waitFor({ timeout: 10_000 });
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('says when a search could not be made, and makes it on "Try again"', async () => {
    await page.goto(`${parley.url}/#/c/${conversation}`);
    await failThenLoad(
      page,
      /\/users\/alice\/conversations\/search\?/,
      'Could not search your conversations',
      () => page.getByRole('searchbox', { name: 'Search conversations' }).fill('Paris'),
      page.getByRole('list', { name: 'Search results' }).getByRole('link'),
    );
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
  });

  it('says when a conversation could not be loaded, and loads it on "Try again"', async () => {
    await page.getByRole('link', { name: 'Reminders' }).click();
    await failThenLoad(
      page,
      new RegExp(`/users/alice/conversations/${conversation}\\?limit=20$`),
      'Could not load this conversation',
      () => page.goto(`${parley.url}/#/c/${conversation}`),
      page.getByRole('log', { name: 'Conversation' }).getByText('Paris, of course.'),
    );
  });

  it('says when older turns could not be loaded, and loads them on "Try again"', async () => {
    await page.goto(`${parley.url}/#/c/${long}`);
    const shown = page.getByRole('log', { name: 'Conversation' });
    await shown.getByText('Answer number 25.').waitFor();
    expect(await shown.getByText('Answer number 1.', { exact: true }).count()).toBe(0);
    await failThenLoad(
      page,
      new RegExp(`/users/alice/conversations/${long}\\?limit=20&before=`),
      'Could not load this conversation',
      // Scrolled to the top: the older page is asked for.
      () => shown.evaluate((log) => log.scrollTo({ top: 0 })),
      shown.getByText('Answer number 1.', { exact: true }),
      // The newest turns stay shown while the older ones could not be loaded.
      async () => expect(await shown.getByText('Answer number 25.').count()).toBe(1),
    );
    expect(await shown.getByText('Answer number 25.').count()).toBe(1);
  });

  it('says when the users could not be loaded, and loads them on "Try again"', async () => {
    await failThenLoad(
      adminPage,
      /\/admin\/users$/,
      'Could not load the users',
      () => adminPage.getByRole('link', { name: 'Admin' }).click(),
      adminPage.getByRole('heading', { name: 'alice' }),
    );
  });

  it('says when the MCP servers could not be loaded, and loads them on "Try again"', async () => {
    await adminPage.getByRole('link', { name: 'Documents' }).click();
    await failThenLoad(
      adminPage,
      /\/admin\/mcp-servers$/,
      'Could not load the MCP servers',
      () => adminPage.getByRole('link', { name: 'Admin' }).click(),
      adminPage.getByRole('article', { name: 'upstream' }),
    );
  });
});

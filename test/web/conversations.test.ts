import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  englishContext,
  holdResponses,
  launchChromium,
  seriousViolations,
  signIn,
} from './browser.ts';

const TOKEN = 'browser-admin-token';
const ADDRESS = /#\/c\/([0-9a-f-]{36})$/;

/**
 * Many conversations per user in the web client, in a real Chromium against a real Parley on
 * each storage engine (search is the database's) and the fake model. Controls are found by
 * role and name, as a screen-reader user finds them.
 */
describe.each(ENGINES)('conversations in the web client, on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;
  let browser: Browser;
  let page: Page;
  /** The two conversations' ids, from their addresses. */
  let busan = '';
  let bread = '';
  let key = '';

  beforeAll(async () => {
    browser = await launchChromium();
    // More than the default 20 chats a minute are asked here, none of them about limits.
    setup = await engineSetup(engine, { API_TOKEN: TOKEN, LIMIT_CHATS_PER_MINUTE: '0' });
    llm = setup.llm;
    parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
    const created = await parley.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'alice' }),
    });
    ({ key } = (await created.json()) as { key: string });
    const context = await englishContext(browser);
    page = await context.newPage();
    await signIn(page, parley.url, key);
  });
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
    await setup?.cleanup();
  });

  const list = () => page.getByRole('navigation', { name: 'Conversations' });
  const titles = () => list().getByRole('list').first().getByRole('link').allTextContents();
  const messageBox = () => page.getByRole('textbox', { name: 'Message' });
  const lastAnswer = () => page.locator('.bubble.assistant').last();
  const question = () => page.locator('.bubble.user').last();
  const idOf = () => ADDRESS.exec(page.url())?.[1] ?? '';
  /** What the page shows after a request (an address, a list): seconds on a slow network. */
  const MOVED = { timeout: 10_000 };
  const send = async (text: string) => {
    const turns = await page.locator('.bubble.user').count();
    await messageBox().fill(text);
    await messageBox().press('Enter');
    await page.locator('.bubble.user').nth(turns).waitFor();
    await page.locator('.bubble.assistant[aria-busy="true"]').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor();
  };
  const search = async (words: string) => {
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill(words);
    return page.getByRole('list', { name: 'Search results' });
  };
  const stored = async () => {
    const response = await parley.fetch('/users/alice/conversations?limit=100');
    const body = (await response.json()) as { conversations: Array<{ id: string; title: string }> };
    return body.conversations;
  };

  it('keeps the conversation it was in when "New conversation" starts another', async () => {
    await messageBox().waitFor();
    await expect.poll(idOf, MOVED).not.toBe('');
    busan = idOf();
    llm.enqueue(reply.text('부산 여행은 기차가 제일 편해요.'));
    await send('부산 여행 계획을 알려줘');
    await page.getByRole('button', { name: 'New conversation' }).click();
    await expect.poll(idOf, MOVED).not.toBe(busan);
    bread = idOf();
    await expect.poll(() => page.locator('.turn').count()).toBe(0);
    llm.enqueue(reply.text('Bake the sourdough for forty minutes at 230 degrees.'));
    await send('How long should I bake bread?');
    // The newest activity first; the model saw only this conversation. (The list is loaded
    // again after the answer: on a slow network, later than expect.poll's second.)
    await list().getByRole('link', { name: 'How long should I bake bread?' }).waitFor();
    await expect
      .poll(titles, MOVED)
      .toEqual(['How long should I bake bread?', '부산 여행 계획을 알려줘']);
    expect(JSON.stringify(llm.chats.at(-1)?.body.messages)).not.toContain('부산');
    expect(
      await list()
        .getByRole('link', { name: 'How long should I bake bread?' })
        .getAttribute('aria-current'),
    ).toBe('page');
  });

  it('finds a conversation by a Korean word and by an English word, and opens it at that turn', async () => {
    const korean = await search('기차');
    const hit = korean.getByRole('link').filter({ hasText: '기차가' });
    await hit.waitFor();
    expect(await korean.getByRole('link').count()).toBe(1);
    expect(await hit.textContent()).toContain('부산 여행 계획을 알려줘'); // the title, then the snippet
    await hit.click();
    await expect.poll(idOf, MOVED).toBe(busan);
    await lastAnswer().getByText('부산 여행은 기차가 제일 편해요.').waitFor();
    expect(await question().textContent()).toContain('부산 여행 계획을 알려줘');

    const english = await search('sourdough');
    await english.getByRole('link').filter({ hasText: 'sourdough' }).click();
    await expect.poll(idOf, MOVED).toBe(bread);
    await lastAnswer().getByText('Bake the sourdough for forty minutes').waitFor();
    expect(await (await search('nothingmatcheshere')).textContent()).toContain('Nothing found.');
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
    await expect.poll(titles, MOVED).toHaveLength(2);
  });

  it('opens a conversation from its address, after a reload too', async () => {
    await page.goto(`${parley.url}/#/c/${busan}`);
    await lastAnswer().getByText('기차가').waitFor();
    await page.reload();
    await lastAnswer().getByText('부산 여행은 기차가 제일 편해요.').waitFor();
    expect(idOf()).toBe(busan);
    const link = list().getByRole('link', { name: '부산 여행 계획을 알려줘' });
    expect(await link.getAttribute('aria-current')).toBe('page');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      '부산 여행 계획을 알려줘',
    );
  });

  it('renames a conversation and pins it first', async () => {
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('textbox', { name: 'Title' }).fill('Busan trip');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { level: 1, name: 'Busan trip' }).waitFor();
    await expect.poll(() => page.title()).toBe('Busan trip · Parley');
    await expect.poll(titles, MOVED).toEqual(['How long should I bake bread?', 'Busan trip']);
    await page.getByRole('button', { name: 'Pin', exact: true }).click();
    await page.getByRole('button', { name: 'Unpin' }).waitFor();
    await expect.poll(titles, MOVED).toEqual(['📌Busan trip', 'How long should I bake bread?']);
    const pinned = list().getByRole('listitem').first();
    expect(await pinned.getByRole('img', { name: 'Pinned' }).count()).toBe(1);
    await page.reload();
    // The list comes a while after the page on a slow network: wait for it as a reader would.
    await list()
      .getByRole('link', { name: /Busan trip/ })
      .waitFor();
    await expect.poll(titles, MOVED).toEqual(['📌Busan trip', 'How long should I bake bread?']);
    expect((await stored()).map((c) => c.title)).toEqual([
      'Busan trip',
      'How long should I bake bread?',
    ]);
  });

  it('keeps the newest list when an older load of it answers last', async () => {
    // On a slow network the list loaded after one change can answer after the list loaded
    // after the next: the first load's answer (fetched now, with the old title) is held back.
    const rename = async (title: string) => {
      await page.getByRole('button', { name: 'Rename' }).click();
      await page.getByRole('textbox', { name: 'Title' }).fill(title);
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('heading', { level: 1, name: title }).waitFor();
    };
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held: Promise<void> | undefined;
    await page.route(/\/users\/alice\/conversations\?limit=/, async (route) => {
      if (held) return route.fallback();
      held = route.fetch().then(async (response) => {
        await released;
        await route.fulfill({ response });
      });
    });
    await rename('Busan trip, for now');
    await expect.poll(() => held !== undefined).toBe(true);
    await rename('Busan trip');
    await expect.poll(titles, MOVED).toEqual(['📌Busan trip', 'How long should I bake bread?']);
    const lateAnswered = page.waitForEvent('requestfinished', (request) =>
      request.url().includes('/conversations?limit='),
    );
    release();
    await held;
    await lateAnswered;
    // The page has read and drawn the late answer a moment after it came.
    await page.evaluate(() => new Promise((done) => setTimeout(done, 200)));
    expect(await titles()).toEqual(['📌Busan trip', 'How long should I bake bread?']);
    await page.unroute(/\/users\/alice\/conversations\?limit=/);
  });

  it('deletes a conversation only once the user confirms', async () => {
    await page.getByRole('button', { name: 'New conversation' }).click();
    await expect.poll(idOf, MOVED).not.toBe(busan);
    const doomed = idOf();
    await expect.poll(() => page.locator('.turn').count()).toBe(0);
    llm.enqueue(reply.text('Soon gone.'));
    await send('A question to throw away');
    // The question names the conversation once its answer is in: the heading shows it, and the
    // confirmation names the conversation as the heading does.
    await page.getByRole('heading', { level: 1, name: 'A question to throw away' }).waitFor();
    await expect.poll(titles, MOVED).toHaveLength(3);
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.dismiss();
    });
    await page.getByRole('button', { name: 'Delete conversation' }).click();
    await expect.poll(() => asked).toContain('A question to throw away');
    expect(idOf()).toBe(doomed);
    expect((await stored()).map((c) => c.id)).toContain(doomed);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete conversation' }).click();
    await expect.poll(idOf, MOVED).not.toBe(doomed);
    await expect.poll(titles, MOVED).toEqual(['📌Busan trip', 'How long should I bake bread?']);
    expect((await stored()).map((c) => c.id)).not.toContain(doomed);
  });

  it('edits a question: the new answer shows, and "Previous version" the old one', async () => {
    await list().getByRole('link', { name: 'How long should I bake bread?' }).click();
    await expect.poll(idOf, MOVED).toBe(bread);
    await lastAnswer().getByText('sourdough').waitFor();
    await page.locator('.turn').last().getByRole('button', { name: 'Edit' }).click();
    await page
      .getByRole('textbox', { name: 'Edited question' })
      .fill('How long should I bake rye?');
    llm.enqueue(reply.text('Rye takes about an hour.'));
    await page.getByRole('button', { name: 'Save' }).click();
    await lastAnswer().getByText('Rye takes about an hour.').waitFor();
    await page.getByText('Version 2 of 2').waitFor();
    expect(await question().textContent()).toContain('How long should I bake rye?');
    expect(await page.locator('.turn').count()).toBe(1);
    // The edited question replaced the old one: the model did not see it.
    expect(JSON.stringify(llm.chats.at(-1)?.body.messages)).not.toContain('bake bread');
    expect(await page.getByRole('button', { name: 'Next version' }).isDisabled()).toBe(true);

    await page.getByRole('button', { name: 'Previous version' }).click();
    await lastAnswer().getByText('Bake the sourdough for forty minutes').waitFor();
    expect(await question().textContent()).toContain('How long should I bake bread?');
    await page.getByText('Version 1 of 2').waitFor();
    expect(await page.getByRole('button', { name: 'Previous version' }).isDisabled()).toBe(true);
    // The version shown is the active path: a reload shows it too.
    await page.reload();
    await lastAnswer().getByText('Bake the sourdough for forty minutes').waitFor();
    await page.getByRole('button', { name: 'Next version' }).click();
    await lastAnswer().getByText('Rye takes about an hour.').waitFor();
  });

  it('regenerates an answer as another version', async () => {
    llm.enqueue(reply.text('Bake rye for sixty minutes.'));
    await lastAnswer().getByRole('button', { name: 'Regenerate' }).click();
    await lastAnswer().getByText('Bake rye for sixty minutes.').waitFor();
    await page.getByText('Version 3 of 3').waitFor();
    expect(await question().textContent()).toContain('How long should I bake rye?');
    expect(JSON.stringify(llm.chats.at(-1)?.body.messages)).toContain(
      'How long should I bake rye?',
    );
    await page.getByRole('button', { name: 'Previous version' }).click();
    await lastAnswer().getByText('Rye takes about an hour.').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await search('rye');
    await page.getByRole('list', { name: 'Search results' }).getByRole('link').first().waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
  });

  it('puts the list behind a button 390 px wide', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    const toggle = page.getByRole('button', { name: 'Conversations' });
    await toggle.waitFor();
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await list().isVisible()).toBe(false);
    expect(await messageBox().isVisible()).toBe(true);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await toggle.click();
    await list().waitFor();
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await list().getByRole('link', { name: 'Busan trip' }).click();
    await expect.poll(idOf, MOVED).toBe(busan);
    await lastAnswer().getByText('기차가').waitFor();
    expect(await list().isVisible()).toBe(false);
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await page.setViewportSize({ width: 1000, height: 720 });
  });

  it('opens a long conversation at an old turn that search found, beyond the newest page', async () => {
    const made = await parley.fetch('/users/alice/conversations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Long one' }),
    });
    const { id } = (await made.json()) as { id: string };
    for (let i = 1; i <= 25; i++) {
      const lines = Array.from({ length: 8 }, (_, n) => `Answer ${i}, line ${n + 1}.`);
      if (i === 2) lines[3] = 'The zeppelin lands at noon.';
      llm.enqueue(reply.text(lines.join('\n\n')));
      const chat = await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'alice', conversation_id: id, message: `Question ${i}` }),
      });
      await chat.text();
    }
    await page.reload();
    const hits = await search('zeppelin');
    await hits.getByRole('link').filter({ hasText: 'zeppelin' }).click();
    await page.waitForURL((url) => url.hash.includes(id)); // after the version is chosen
    const found = page.locator('.turn').filter({ hasText: 'Question 2' }).first();
    await found.waitFor();
    // The address names the turn until the page has found and shown it (seconds on a slow
    // network), then the conversation alone.
    await expect.poll(idOf, { timeout: 15_000 }).toBe(id);
    const log = page.getByRole('log', { name: 'Conversation' });
    await expect
      .poll(async () => {
        const view = await log.boundingBox();
        const turn = await found.locator('.bubble.user').boundingBox();
        return !!view && !!turn && turn.y >= view.y && turn.y + turn.height <= view.y + view.height;
      })
      .toBe(true);
    expect(await log.getByText('The zeppelin lands at noon.').isVisible()).toBe(true);
    // Twenty hits a page, then more on request: every answer of it has a "line".
    const lines = (await search('line')).getByRole('link');
    await expect.poll(() => lines.count(), MOVED).toBe(20);
    await list().getByRole('button', { name: 'More results' }).click();
    await expect.poll(() => lines.count(), MOVED).toBe(25);
    expect(await list().getByRole('button', { name: 'More results' }).count()).toBe(0);
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
  });

  it('names its controls in Korean for a Korean browser', async () => {
    const korean = await browser.newContext({ locale: 'ko-KR' });
    const koPage = await korean.newPage();
    await koPage.goto(`${parley.url}/#/c/${bread}`);
    await koPage.getByLabel('API 키').fill(key);
    await koPage.getByRole('button', { name: '로그인' }).click();
    const conversations = koPage.getByRole('navigation', { name: '대화 목록' });
    await conversations.getByRole('link', { name: 'Busan trip' }).waitFor();
    for (const name of [
      '새 대화',
      '이름 바꾸기',
      '대화 삭제',
      '수정',
      '다시 생성',
      '이전 버전',
      '다음 버전',
    ]) {
      // The turns' buttons come with the turns, after the list: waited for, not counted at once.
      await koPage.getByRole('button', { name, exact: true }).first().waitFor();
    }
    expect(await koPage.getByRole('searchbox', { name: '대화 검색' }).count()).toBe(1);
    await korean.close();
  });

  it('lists fifty conversations, then more on request; "New conversation" reuses an unused one', async () => {
    for (let i = 1; i <= 50; i++) {
      await parley.fetch('/users/alice/conversations', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: `Old ${i}` }),
      });
    }
    // Counted from the server, so that one test's leftovers do not fail the next as well.
    const all = (await stored()).length;
    expect(all).toBeGreaterThan(50);
    await page.reload();
    const links = list().getByRole('list').first().getByRole('link');
    await links.nth(49).waitFor(); // the list comes a while after the page
    await expect.poll(() => links.count()).toBe(50);
    // Pressed twice (a double-click, or a slow network), the next page comes once.
    await list().getByRole('button', { name: 'More conversations' }).dblclick();
    await expect.poll(() => links.count(), MOVED).toBe(all);
    await page.waitForTimeout(300);
    expect(await links.count()).toBe(all);
    expect(await list().getByRole('button', { name: 'More conversations' }).count()).toBe(0);

    const before = (await stored()).length;
    // Pressed again before the list has the new conversation (its loads held back here, as
    // a slow network does), nothing more happens: a second one was made.
    const held = await holdResponses(page, /\/users\/alice\/conversations\?limit=/);
    let fresh = '';
    try {
      await page.getByRole('button', { name: 'New conversation' }).click();
      await page.getByRole('heading', { level: 1, name: 'New conversation' }).waitFor();
      fresh = idOf();
      // Ready for the first question; the window's title names the conversation.
      await expect.poll(() => page.evaluate('document.activeElement.id')).toBe('message');
      await expect.poll(() => page.title()).toBe('New conversation · Parley');
      await page.getByRole('button', { name: 'New conversation' }).click();
      await page.waitForTimeout(300);
      expect(idOf()).toBe(fresh);
      expect((await stored()).length).toBe(before + 1);
    } finally {
      await held.release();
    }
    // Once the list has it, the unused conversation is opened again rather than another made.
    await page.getByRole('button', { name: 'New conversation' }).click();
    await page.waitForTimeout(300);
    expect(idOf()).toBe(fresh);
    expect((await stored()).length).toBe(before + 1);
  });

  it('starts another conversation when asked right after a question the list has not caught up with', async () => {
    // The conversation open now is unused, and listed so. On a slow network the list still
    // shows it unused when "New conversation" is pressed right after a question in it: its
    // loads are held back until then.
    const asked = idOf();
    const held = await holdResponses(page, /\/users\/alice\/conversations\?limit=/);
    try {
      // Pressed here, "New conversation" opens this unused one again, and loads the list
      // again: until that load came, the press below did nothing (seen at 1500 ms latency).
      await page.getByRole('button', { name: 'New conversation' }).click();
      await page.waitForTimeout(300);
      expect(idOf()).toBe(asked);
      llm.enqueue(reply.text('Asked and answered.'));
      await send('A question the list does not know of yet');
      await lastAnswer().getByText('Asked and answered.').waitFor();
      await page.getByRole('button', { name: 'New conversation' }).click();
      await expect.poll(idOf, { timeout: 10_000 }).not.toBe(asked);
      await expect.poll(() => page.locator('.turn').count()).toBe(0);
    } finally {
      // Released whatever happened, so that a failure here does not fail the next test too.
      await held.release();
    }
    await expect
      .poll(async () => (await stored()).find((c) => c.id === asked)?.title)
      .toBe('A question the list does not know of yet');
  });

  it('takes a title of 60 emoji and a search of 200, counted in characters as the server does', async () => {
    // An input's maxlength counts UTF-16 units: 60 of them held only 30 emoji, and a model's
    // title of 60 emoji could not be edited and saved again.
    await messageBox().waitFor();
    await expect.poll(idOf, MOVED).not.toBe('');
    llm.enqueue(reply.text('Smiling back.'));
    await send('A title of emoji, please');
    const id = idOf();
    const rename = async (title: string) => {
      await page.getByRole('button', { name: 'Rename' }).click();
      await page.getByRole('textbox', { name: 'Title' }).fill(title);
      await page.getByRole('button', { name: 'Save' }).click();
    };
    const sixty = '😀'.repeat(60);
    await rename(sixty);
    await page.getByRole('heading', { level: 1, name: sixty }).waitFor();
    await expect.poll(async () => (await stored()).find((c) => c.id === id)?.title).toBe(sixty);
    // One more is the server's to refuse, in its words.
    await rename(`${sixty}😀`);
    await page.getByRole('alert').getByText('must be at most 60 characters').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('heading', { level: 1, name: sixty }).waitFor();

    const searchBox = page.getByRole('searchbox', { name: 'Search conversations' });
    await searchBox.fill('😀'.repeat(200));
    expect(await searchBox.inputValue()).toBe('😀'.repeat(200));
    await searchBox.fill('');
  });

  it('shows the new conversation starting, not the one left, while a slow network makes it', async () => {
    // On a slow network the conversation left stayed on screen, its message box live, until
    // the new one was made: a question asked meanwhile went to the one left (or, cut off by
    // the move, nowhere), and the page then showed the new one empty.
    llm.enqueue(reply.text('Answered in the one left.'));
    await send('A question before starting another');
    const left = idOf();
    const made = await holdResponses(page, /\/users\/alice\/conversations$/, 'POST');
    const log = page.getByRole('log', { name: 'Conversation' });
    try {
      await page.getByRole('button', { name: 'New conversation' }).click();
      // At once, before the new one exists: the turns left go, and the wait is said.
      await expect.poll(() => log.getByText('Answered in the one left.').count()).toBe(0);
      await log.getByRole('status').getByText('Starting a new conversation…').waitFor();
      expect(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled()).toBe(true);
      await messageBox().fill('The first question of the new one');
      await messageBox().press('Enter');
      await page.waitForTimeout(300);
      expect(await page.locator('.bubble.user').count()).toBe(0);
    } finally {
      await made.release();
    }
    await expect.poll(idOf, MOVED).not.toBe(left);
    await page.getByRole('heading', { level: 1, name: 'New conversation' }).waitFor();
    // The words typed meanwhile are still there, and go to the new conversation.
    expect(await messageBox().inputValue()).toBe('The first question of the new one');
    llm.enqueue(reply.text('Answered in the new one.'));
    await messageBox().press('Enter');
    await lastAnswer().getByText('Answered in the new one.').waitFor();
    const turns = async (id: string) => {
      const response = await parley.fetch(`/users/alice/conversations/${id}?limit=20`);
      return ((await response.json()) as { turns: Array<{ question: string }> }).turns.map(
        (turn) => turn.question,
      );
    };
    // The one left may hold earlier tests' questions too: only the question meant for the
    // new one must not be among its turns.
    const leftTurns = await turns(left);
    expect(leftTurns).toContain('A question before starting another');
    expect(leftTurns).not.toContain('The first question of the new one');
    expect(await turns(idOf())).toEqual(['The first question of the new one']);
  });

  // Last two: "Chat" moves to the current conversation, which the cases above do not expect.
  it('keeps the draft when "Chat" is followed from a conversation', async () => {
    await messageBox().fill('Half a thought');
    // "Chat" opens the current conversation once the list has loaded (`#/chat`, then its
    // address): the page on screen stays meanwhile, and the draft with it.
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.waitForURL(ADDRESS);
    await expect.poll(() => messageBox().inputValue()).toBe('Half a thought');
    await messageBox().fill('');
  });

  it('keeps a question sent while "Chat" looks for the current conversation, the one on screen', async () => {
    // "Chat" keeps the conversation on screen until the list says which is current. When that
    // was the one on screen, it was opened again: cleared, loaded afresh, and a question sent
    // meanwhile cut off; one still on its way (a slow network) was gone, its answer never shown.
    await expect.poll(idOf, MOVED).not.toBe('');
    const shown = idOf();
    const listed = await holdResponses(page, /\/users\/alice\/conversations\?limit=/);
    let send = () => {};
    const sent = new Promise<void>((resolve) => {
      send = resolve;
    });
    // The question leaves the page only once the list has answered.
    await page.route('**/chat', async (route) => {
      await sent;
      await route.continue().catch(() => {}); // cut off by the page
    });
    try {
      await page.getByRole('link', { name: 'Chat' }).click();
      await page.waitForURL(/#\/chat$/);
      llm.enqueue(reply.text('Answered after all.'));
      await messageBox().fill('Sent while Chat looked');
      await messageBox().press('Enter');
      await question().getByText('Sent while Chat looked').waitFor();
      await listed.release();
      await page.waitForURL(ADDRESS);
      await page.waitForTimeout(300); // the page acting on its address
    } finally {
      send();
      await listed.release();
    }
    expect(idOf()).toBe(shown);
    await lastAnswer().getByText('Answered after all.').waitFor(MOVED);
    expect(await question().textContent()).toContain('Sent while Chat looked');
    await page.unroute('**/chat');
  });
});

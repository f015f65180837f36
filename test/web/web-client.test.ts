import { readFile, stat, writeFile } from 'node:fs/promises';
import type { Browser, BrowserContext, Locator, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import {
  englishContext,
  holdResponses,
  launchChromium,
  seriousViolations,
  signIn,
} from './browser.ts';

const TOKEN = 'browser-admin-token';
const PDF = new URL('../../../shared/data/pdfs/tracemonkey.pdf', import.meta.url);
const SCREENSHOT = new URL('../../docs/web-client-chat.png', import.meta.url);
/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const words = (n: number, prefix = 'word') =>
  Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`).join(' ');

/**
 * The web client in a real Chromium against a real Parley (embedded engine) and the fake
 * model. Controls are found by role and name, as a screen-reader user finds them.
 */
describe('the web client in Chromium', () => {
  let llm: FakeLlmServer;
  let vision: FakeLlmServer;
  let parley: RunningParley;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let key: string;

  beforeAll(async () => {
    browser = await launchChromium(); // fails loudly without Chromium
    llm = await startFakeLlmServer();
    vision = await startFakeLlmServer();
    parley = await startParley({
      env: {
        API_TOKEN: TOKEN,
        LLM_BASE_URL: llm.url,
        LLM_MAX_RETRIES: '0',
        // These tests chat more than the default 20 times a minute.
        LIMIT_CHATS_PER_MINUTE: '1000',
        VISION_ENABLED: 'true',
        VISION_MODEL_ID: 'fake-vision',
        VISION_BASE_URL: vision.url,
      },
    });
    const created = await parley.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'alice' }),
    });
    ({ key } = (await created.json()) as { key: string });
    context = await englishContext(browser);
    page = await context.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
    await llm?.close();
    await vision?.close();
  });

  const messageBox = () => page.getByRole('textbox', { name: 'Message' });
  const answers = () => page.locator('.bubble.assistant');
  const lastAnswer = () => answers().last();
  const history = async () => {
    const response = await parley.fetch('/users/alice/history?limit=50');
    return (
      (await response.json()) as {
        turns: Array<{
          run_id: string;
          question: string;
          answer: string;
          interrupted: boolean;
          feedback: { score: number; comment: string | null } | null;
        }>;
      }
    ).turns;
  };
  /**
   * Follows "Chat" and waits for the page it opens: the current conversation at its own
   * address (`#/c/<id>`), reached once the list has loaded. Focusing the message box before
   * then focused the box of the page being left, which is removed: under load the keyboard
   * test's words went nowhere and its Enter sent nothing.
   */
  const openChat = async () => {
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.waitForURL(/#\/c\//);
    await messageBox().waitFor();
  };
  /** Sends a message and waits until its turn is on screen. */
  const send = async (text: string) => {
    const turns = await page.locator('.bubble.user').count();
    await messageBox().fill(text);
    await messageBox().press('Enter');
    await page.locator('.bubble.user').nth(turns).waitFor();
  };
  /** Whether `text` lies wholly above the conversation's visible area (scrolled past). */
  const above = async (text: Locator) => {
    const line = await text.boundingBox();
    const view = await page.getByRole('log', { name: 'Conversation' }).boundingBox();
    return !!line && !!view && line.y + line.height <= view.y;
  };
  /** Waits until no answer is streaming. */
  const waitForIdle = async () => {
    await page.locator('.bubble.assistant[aria-busy="true"]').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor();
  };

  it('signs in with a key, and the sign-in page has no serious accessibility violation', async () => {
    await page.goto(parley.url);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('API key').fill('pk_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await messageBox().waitFor();
    const cookies = await context.cookies();
    const session = cookies.find((cookie) => cookie.name === 'parley_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(await page.evaluate('document.cookie')).toBe(''); // scripts cannot read it
    for (const name of [
      'Chat',
      'Documents',
      'Reminders',
      'Automations',
      'Memories',
      'Graph',
      'Profile',
    ]) {
      expect(await page.getByRole('link', { name }).count(), name).toBe(1);
    }
    expect(await page.getByRole('link', { name: 'Admin' }).count()).toBe(0);
  });

  it('shows the answer while the stream is still open', async () => {
    llm.enqueue(reply.text(words(30), { chunks: 30, delayMs: 100 }));
    await send('Count for me');
    await lastAnswer().locator('.md').getByText('word3', { exact: false }).waitFor();
    // Part of the answer is on screen and the stream has not ended: Stop is still offered.
    const partial = (await lastAnswer().textContent()) ?? '';
    expect(partial).not.toContain('word30');
    expect(await page.getByRole('button', { name: 'Stop', exact: true }).isVisible()).toBe(true);
    await waitForIdle();
    expect(await lastAnswer().textContent()).toContain('word30');
  });

  it('keeps the newest words of a long answer in view while it streams', async () => {
    const lines = Array.from({ length: 80 }, (_, i) => `Line ${i + 1} of the answer.`);
    // The answer holds after line 40 until the checks mid-stream are done, however slow the
    // machine: they must see it still streaming.
    let resume = () => {};
    const held = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const pace = async (written: string) => {
      if (written.includes('Line 40 of the answer.')) await held;
    };
    llm.enqueue(reply.text(lines.join('\n\n'), { chunks: 80, delayMs: 40, pace }));
    await send('Write eighty lines');
    const log = page.getByRole('log', { name: 'Conversation' });
    /** Whether the answer's last line drawn so far is inside the conversation's visible area. */
    const newestInView = async () => {
      const box = await log.boundingBox();
      const line = await lastAnswer().locator('.md p').last().boundingBox();
      return !!box && !!line && line.y >= box.y && line.y + line.height <= box.y + box.height;
    };
    await lastAnswer().getByText('Line 40 of the answer.', { exact: true }).waitFor();
    expect(await lastAnswer().getAttribute('aria-busy')).toBe('true'); // still streaming
    expect(await newestInView()).toBe(true);
    expect(await lastAnswer().getByText('Line 1 of the answer.').isVisible()).toBe(true);
    expect(await above(lastAnswer().getByText('Line 1 of the answer.', { exact: true }))).toBe(
      true,
    ); // scrolled past
    resume();
    await waitForIdle();
    expect(await lastAnswer().locator('.md p').last().textContent()).toBe('Line 80 of the answer.');
    expect(await newestInView()).toBe(true);
    // The next question and answer show below it, in view too.
    llm.enqueue(reply.text('Last words.'));
    await send('One more');
    await waitForIdle();
    expect(await lastAnswer().locator('.md p').last().textContent()).toBe('Last words.');
    expect(await newestInView()).toBe(true);
  });

  it('keeps the partial answer on Stop, and a reload shows it from the history', async () => {
    llm.enqueue(reply.text(words(60, 'slow'), { chunks: 60, delayMs: 100 }));
    await send('Tell me a long story');
    await lastAnswer().locator('.md').getByText('slow4', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await waitForIdle();
    const kept = (await lastAnswer().locator('.md').textContent()) ?? '';
    expect(kept).toContain('slow4');
    expect(kept).not.toContain('slow60');
    expect(await lastAnswer().textContent()).toContain('Stopped');
    await llm.waitForClientClose();
    // The server stores the interrupted turn once it sees the client go.
    await expect
      .poll(async () => (await history())[0]?.interrupted, { timeout: 10_000 })
      .toBe(true);

    await page.reload();
    await messageBox().waitFor();
    await page.locator('.bubble.user').getByText('Tell me a long story').waitFor();
    const reloaded = (await lastAnswer().locator('.md').textContent()) ?? '';
    expect(reloaded).toContain('slow4');
    // The earlier turn too (its question also names the conversation, in the list and heading).
    expect(await page.locator('.bubble.user').getByText('Count for me').count()).toBe(1);
    expect(await lastAnswer().textContent()).toContain('Stopped');
  });

  it('shows the model’s HTML and javascript: links as text: nothing runs, no element is made', async () => {
    llm.enqueue(
      reply.text(
        'Look: <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script> and ' +
          '[x](javascript:window.__xss=3) and **bold** and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |',
        { chunks: 5 },
      ),
    );
    await send('Be naughty');
    await waitForIdle();
    const answer = lastAnswer().locator('.md');
    expect(await answer.locator('img, script, iframe, [onerror]').count()).toBe(0);
    expect(await answer.locator('a').count()).toBe(0);
    expect(await answer.locator('strong').count()).toBe(1);
    expect(await answer.locator('table').count()).toBe(1);
    expect(await answer.textContent()).toContain('<img src=x onerror=');
    expect(await page.evaluate('window.__xss')).toBeUndefined();
  });

  it('sends 👍 with the answer’s run_id to /feedback', async () => {
    llm.enqueue(reply.text('A fine answer.'));
    await send('Rate me');
    await waitForIdle();
    const posted = page.waitForRequest((request) => request.url().endsWith('/feedback'));
    await lastAnswer().getByRole('button', { name: 'Good answer' }).click();
    const body = JSON.parse((await posted).postData() ?? '{}') as { run_id: string; score: number };
    const turn = (await history()).find((t) => t.question === 'Rate me');
    expect(body).toMatchObject({ run_id: turn?.run_id, score: 1 });
    // Pressed once stored: the request seen above may still be on its way (a slow network).
    await lastAnswer().getByRole('button', { name: 'Good answer', pressed: true }).waitFor();
    expect((await history())[0]?.feedback?.score).toBe(1);
    // A comment can follow.
    await lastAnswer().getByRole('textbox', { name: 'Comment (optional)' }).fill('clear');
    await lastAnswer().getByRole('button', { name: 'Send comment' }).click();
    await lastAnswer().getByRole('status').filter({ hasText: 'Thanks' }).waitFor();
  });

  it('takes a comment of 4000 emoji, counted in characters as the server does', async () => {
    // An input's maxlength counts UTF-16 units: 4000 of them held only 2000 emoji.
    llm.enqueue(reply.text('Rate me in pictures.'));
    await send('Rate me in emoji');
    await waitForIdle();
    await lastAnswer().getByRole('button', { name: 'Good answer' }).click();
    await lastAnswer().getByRole('status').filter({ hasText: 'Thanks' }).waitFor();
    const comment = lastAnswer().getByRole('textbox', { name: 'Comment (optional)' });
    const sendComment = lastAnswer().getByRole('button', { name: 'Send comment' });
    const rated = async () =>
      (await history()).find((t) => t.question === 'Rate me in emoji')?.feedback?.comment;
    const full = '👍'.repeat(4000);
    await comment.fill(full);
    await sendComment.click();
    await expect.poll(rated).toBe(full);
    // One more is the server's to refuse, in its words; the stored comment stays.
    await comment.fill(`${full}👍`);
    await sendComment.click();
    await lastAnswer().getByRole('status').getByText('comment: Too big').waitFor();
    expect(await rated()).toBe(full);
  });

  it('lets nothing be typed or saved on the profile before the stored one is shown', async () => {
    // On a slow network the stored profile came after the user had typed, and replaced it;
    // a save before it came cleared the stored time zone.
    await parley.fetch('/users/alice/profile', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ display_name: 'Alice Stored', timezone: 'Asia/Seoul' }),
    });
    const held = await holdResponses(page, /\/users\/alice\/profile$/);
    const name = page.getByRole('textbox', { name: 'Display name' });
    try {
      await page.getByRole('link', { name: 'Profile' }).click();
      await name.waitFor();
      expect(await name.isDisabled()).toBe(true);
      expect(await page.getByRole('combobox', { name: 'Timezone' }).isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: 'Save' }).first().isDisabled()).toBe(true);
    } finally {
      await held.release();
    }
    await expect.poll(() => name.inputValue()).toBe('Alice Stored');
    expect(await name.isEnabled()).toBe(true);
    expect(await page.getByRole('combobox', { name: 'Timezone' }).inputValue()).toBe('Asia/Seoul');
    await parley.fetch('/users/alice/profile', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ display_name: null, timezone: null }),
    });
    await openChat();
  });

  it('says when the profile could not be loaded, and loads it again on "Try again"', async () => {
    // The form waits for the stored profile; when that load failed, it stayed disabled for
    // good, with no way but a reload of the whole page to ask again.
    await parley.fetch('/users/alice/profile', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ display_name: 'Alice Stored', timezone: 'Asia/Seoul' }),
    });
    const profileUrl = /\/users\/alice\/profile$/;
    const name = page.getByRole('textbox', { name: 'Display name' });
    const alert = page.getByRole('alert').filter({ hasText: 'Could not load your profile' });
    const tryAgain = page.getByRole('button', { name: 'Try again' });
    // The server answers 503 (a database gone away), then the network drops the request.
    const failures = [
      (route: Route) => route.fulfill({ status: 503, json: { detail: 'Service Unavailable' } }),
      (route: Route) => route.abort('internetdisconnected'),
    ];
    let failed = 0;
    for (const [i, fail] of failures.entries()) {
      await page.route(profileUrl, async (route) => {
        if (route.request().method() !== 'GET') return route.fallback();
        await fail(route);
        failed += 1;
      });
      if (i === 0) await page.getByRole('link', { name: 'Profile' }).click();
      else await tryAgain.click(); // tried again, and failed again: still said, still offered
      await expect.poll(() => failed).toBe(i + 1);
      await alert.waitFor({ timeout: 10_000 });
      await tryAgain.waitFor({ timeout: 10_000 });
      expect(await name.isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: 'Save' }).first().isDisabled()).toBe(true);
      await page.unroute(profileUrl);
    }
    await tryAgain.click();
    await expect.poll(() => name.inputValue()).toBe('Alice Stored');
    expect(await name.isEnabled()).toBe(true);
    expect(await page.getByRole('combobox', { name: 'Timezone' }).inputValue()).toBe('Asia/Seoul');
    expect(await alert.count()).toBe(0);
    expect(await tryAgain.count()).toBe(0);
    await parley.fetch('/users/alice/profile', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ display_name: null, timezone: null }),
    });
    await openChat();
  });

  it('takes a display name of 100 emoji, counted in characters as the server does', async () => {
    // An input's maxlength counts UTF-16 units: 100 of them held only 50 emoji.
    await page.getByRole('link', { name: 'Profile' }).click();
    // The stored profile, once it comes, fills the field: type after it.
    await page.waitForLoadState('networkidle');
    const name = page.getByRole('textbox', { name: 'Display name' });
    const save = page.getByRole('button', { name: 'Save' });
    const stored = async () => {
      const response = await parley.fetch('/users/alice/profile');
      return ((await response.json()) as { display_name: string | null }).display_name;
    };
    const hundred = '🙂'.repeat(100);
    await name.fill(hundred);
    await save.click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    expect(await stored()).toBe(hundred);
    await page.reload();
    await expect.poll(() => name.inputValue()).toBe(hundred);
    // One more is the server's to refuse, in its words; the stored name stays.
    await name.fill(`${hundred}🙂`);
    await save.click();
    await page.getByRole('status').getByText('display_name: Too big').waitFor();
    expect(await stored()).toBe(hundred);
    // Back to no name, and to the chat the next cases expect.
    await name.fill('');
    await save.click();
    await expect.poll(stored).toBeNull();
    await openChat();
  });

  it('sends an attached image to the vision model', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'analyze_image', args: { question: 'What is it?' } }]),
      reply.text('It is a tiny picture.'),
    );
    vision.enqueue(reply.text('one white pixel'));
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach image' }).click();
    await (await chooser).setFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: PNG });
    await page.getByRole('img', { name: 'Attached image' }).waitFor();
    await send('What is in this picture?');
    await waitForIdle();
    expect(await lastAnswer().textContent()).toContain('It is a tiny picture.');
    const sent = JSON.stringify(vision.chats[0]?.body.messages);
    expect(sent).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
  });

  it('never sends text an input method is still composing when Enter is pressed', async () => {
    const before = llm.chats.length;
    await messageBox().fill('');
    await messageBox().focus();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Input.imeSetComposition', { text: '한', selectionStart: 1, selectionEnd: 1 });
    // Enter while composing: Chromium reports keyCode 229 and isComposing.
    await cdp.send('Input.dispatchKeyEvent', {
      type: 'rawKeyDown',
      windowsVirtualKeyCode: 229,
      key: 'Enter',
      code: 'Enter',
    });
    await cdp.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'Enter', code: 'Enter' });
    await cdp.send('Input.insertText', { text: '한' }); // the input method commits
    await page.waitForTimeout(300);
    expect(llm.chats.length).toBe(before);
    expect(await messageBox().inputValue()).toBe('한');
    // Enter after composing sends it.
    llm.enqueue(reply.text('안녕하세요'));
    const turns = await page.locator('.bubble.user').count();
    await messageBox().press('Enter');
    await page.locator('.bubble.user').nth(turns).waitFor();
    await waitForIdle();
    expect(llm.chats.length).toBe(before + 1);
    expect(await lastAnswer().textContent()).toContain('안녕하세요');
    expect(await page.locator('.bubble.user').last().textContent()).toContain('한');
  });

  it('shows a stream error in words with a way to retry', async () => {
    llm.enqueue(reply.error(500), reply.text('Second time lucky.'));
    await send('Try hard');
    await waitForIdle();
    const alert = lastAnswer().getByRole('alert');
    expect(await alert.textContent()).toContain('The answer failed');
    await alert.getByRole('button', { name: 'Retry' }).click();
    await lastAnswer().getByText('Second time lucky.').waitFor();
    await waitForIdle();
    // The retry is another version of the failed turn: the model sees the question once.
    const sent = JSON.stringify(llm.chats.at(-1)?.body.messages);
    expect(sent.split('Try hard').length - 1).toBe(1);
  });

  it('retries a failed answer with the image that was attached to it', async () => {
    llm.enqueue(reply.error(500));
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach image' }).click();
    await (await chooser).setFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: PNG });
    await send('What colour is this pixel?');
    await waitForIdle();
    const visionCalls = vision.chats.length;
    llm.enqueue(
      reply.toolCalls([{ name: 'analyze_image', args: { question: 'Which colour?' } }]),
      reply.text('It is white.'),
    );
    vision.enqueue(reply.text('a white pixel'));
    await lastAnswer().getByRole('alert').getByRole('button', { name: 'Retry' }).click();
    await lastAnswer().getByText('It is white.').waitFor();
    await waitForIdle();
    expect(vision.chats.length).toBe(visionCalls + 1);
    const sent = JSON.stringify(vision.chats.at(-1)?.body.messages);
    expect(sent).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
    const question = page.locator('.bubble.user').last();
    // The picture itself still shows beside the question, not a broken image.
    const thumbnail = question.getByRole('img', { name: 'Attached image' });
    await expect
      .poll(() =>
        thumbnail.evaluate(
          (img: { complete: boolean; naturalWidth: number }) => img.complete && img.naturalWidth,
        ),
      )
      .toBe(1);
    // The composer's attachment was used up by the first send.
    expect(await page.locator('.composer').getByRole('img').count()).toBe(0);
  });

  it('offers 👍/👎 on an answer that was stopped, and rates it by its run_id', async () => {
    // Five words (one a chunk, after the role's), then nothing: the answer cannot end before
    // Stop, however slow the machine.
    llm.enqueue(reply.text(words(60, 'halt'), { stallAfter: 6 }));
    await send('Say a lot, I will stop you');
    await lastAnswer().locator('.md').getByText('halt3', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await waitForIdle();
    expect(await lastAnswer().textContent()).toContain('Stopped');
    await expect
      .poll(async () => (await history())[0]?.interrupted, { timeout: 10_000 })
      .toBe(true);
    const posted = page.waitForRequest((request) => request.url().endsWith('/feedback'));
    await lastAnswer().getByRole('button', { name: 'Bad answer' }).click();
    const body = JSON.parse((await posted).postData() ?? '{}') as { run_id: string; score: number };
    const turn = (await history()).find((t) => t.question === 'Say a lot, I will stop you');
    expect(body).toMatchObject({ run_id: turn?.run_id, score: 0 });
    await lastAnswer().getByRole('status').filter({ hasText: 'Thanks' }).waitFor();
    await expect.poll(async () => (await history())[0]?.feedback?.score).toBe(0);
  });

  it('offers no 👍/👎 on an answer stopped before its first word, but does once words came', async () => {
    const rating = (answer: Locator) => answer.getByRole('button', { name: /^(Good|Bad) answer$/ });
    // The model sends its headers and then nothing: no word ever comes.
    llm.enqueue(reply.stall());
    const chats = llm.chats.length;
    // The run's id reaches the page in the response's headers, before any word: Stop only
    // after it came, so an answer that kept it would offer the rating.
    const started = page.waitForResponse((response) => response.url().endsWith('/chat'));
    await send('Stop before you start');
    expect(await (await started).headerValue('x-parley-run-id')).toBeTruthy();
    await expect.poll(() => llm.chats.length).toBe(chats + 1);
    await lastAnswer().getByText('Writing…').waitFor();
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await waitForIdle();
    const stoppedEarly = answers().nth((await answers().count()) - 1);
    expect(await stoppedEarly.textContent()).toContain('Stopped');
    expect(await rating(stoppedEarly).count()).toBe(0);

    // Stopped after some words, the answer can be rated.
    // Five words, then a stall: it cannot end before Stop, however slow the machine.
    llm.enqueue(reply.text(words(60, 'later'), { stallAfter: 6 }));
    await send('Say a few words, then I stop you');
    await lastAnswer().locator('.md').getByText('later2', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await waitForIdle();
    expect(await lastAnswer().textContent()).toContain('Stopped');
    expect(await rating(lastAnswer()).count()).toBe(2);
    // The earlier one still offers none.
    expect(await rating(stoppedEarly).count()).toBe(0);
  });

  it('opens a long conversation at its newest turn', async () => {
    for (let i = 1; i <= 6; i++) {
      const lines = Array.from({ length: 40 }, (_, n) => `Turn ${i}, line ${n + 1}.`);
      llm.enqueue(reply.text(lines.join('\n\n')));
      const chat = await parley.fetch('/chat', {
        method: 'POST',
        token: null,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: `Long question ${i}` }),
      });
      await chat.text();
    }
    await page.reload();
    await lastAnswer().getByText('Turn 6, line 40.', { exact: true }).waitFor();
    const log = page.getByRole('log', { name: 'Conversation' });
    await expect
      .poll(async () => {
        const box = await log.boundingBox();
        const line = await lastAnswer().getByText('Turn 6, line 40.').boundingBox();
        return !!box && !!line && line.y >= box.y && line.y + line.height <= box.y + box.height;
      })
      .toBe(true);
    expect(await above(page.getByText('Turn 6, line 1.', { exact: true }))).toBe(true);
  });

  it('has no serious accessibility violation on any page, and takes the README’s screenshot', async () => {
    await openChat();
    expect(await seriousViolations(page)).toEqual([]);
    // Other conversations, for the screenshot's list: one pinned, one older.
    for (const [title, pinned] of [
      ['Sourdough timing', false],
      ['Busan trip in May', true],
    ] as const) {
      const made = await parley.fetch('/users/alice/conversations', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title }),
      });
      const { id } = (await made.json()) as { id: string };
      if (pinned) {
        await parley.fetch(`/users/alice/conversations/${id}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ pinned }),
        });
      }
    }
    // "New conversation" starts another (the current one, so /history is empty) and keeps
    // the old ones, listed. Its heading says it is open: /history was empty already (the
    // conversations made above are current in turn), so on a slow network the question below
    // was typed into the conversation left while the new one was still being made.
    await page.getByRole('button', { name: 'New conversation' }).click();
    await page.getByRole('heading', { level: 1, name: 'New conversation' }).waitFor();
    expect((await history()).length).toBe(0);
    expect(await page.locator('.turn').count()).toBe(0);
    const conversations = page.getByRole('navigation', { name: 'Conversations' });
    await conversations.getByRole('link', { name: 'Count for me' }).waitFor();
    llm.enqueue(
      reply.text(
        'Here is a plan for **Saturday**:\n\n1. Pick up the dry cleaning\n2. Call 민수 about dinner\n' +
          '3. Back up the photos:\n\n```sh\nrsync -a ~/Photos /mnt/backup/\n```\n\n' +
          'Sources:\n- notes/weekend.md',
        { chunks: 12 },
      ),
    );
    await send('What should I do this weekend?');
    await waitForIdle();
    // Streamed in 12 pieces and drawn block by block, it is still one list and one code block.
    const plan = lastAnswer().locator('.md');
    // The answer's bubble appears only once the request is answered: wait for its last words,
    // as a reader would, not just for "not busy" (true before the bubble exists).
    await plan.getByText('notes/weekend.md').waitFor();
    expect(await plan.locator('ol > li').count()).toBe(3);
    expect(await plan.locator('pre code').textContent()).toBe('rsync -a ~/Photos /mnt/backup/\n');
    expect(await plan.locator('ul > li').textContent()).toBe('notes/weekend.md');
    await conversations.getByRole('link', { name: 'What should I do this weekend?' }).waitFor();
    expect(await conversations.getByRole('link').allTextContents()).toEqual([
      '📌Busan trip in May',
      'What should I do this weekend?',
      'Sourdough timing',
      'Count for me',
    ]);
    const shot = await page.screenshot({ type: 'png' });
    expect(shot.length).toBeLessThan(200 * 1024);
    await writeFile(SCREENSHOT, shot);
    for (const name of ['Documents', 'Reminders', 'Automations', 'Memories', 'Graph', 'Profile']) {
      await page.getByRole('link', { name }).click();
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await seriousViolations(page), name).toEqual([]);
    }
  });

  it('uploads a PDF with a progress bar and a processing state, then lists it', async () => {
    // A shared document, uploaded by the administrator: Alice sees it, labelled, not deletable.
    const shared = multipartBody([
      { name: 'file', filename: 'handbook.txt', data: 'Office rules.' },
    ]);
    const ingested = await parley.fetch('/ingest', {
      method: 'POST',
      headers: { 'content-type': shared.contentType },
      body: new Uint8Array(shared.body),
    });
    expect(ingested.status).toBe(200);
    await page.getByRole('link', { name: 'Documents' }).click();
    const chooser = page.waitForEvent('filechooser');
    await page.getByText('Choose files').click();
    await (await chooser).setFiles({
      name: 'tracemonkey.pdf',
      mimeType: 'application/pdf',
      buffer: await readFile(PDF),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByRole('list', { name: 'Sources' }).getByText('tracemonkey.pdf').waitFor({
      timeout: 90_000,
    });
    expect(await page.getByRole('status').filter({ hasText: 'Added' }).count()).toBe(1);
    const sources = page.getByRole('list', { name: 'Sources' });
    const own = sources.getByRole('listitem').filter({ hasText: 'tracemonkey.pdf' });
    expect(await own.getByRole('button', { name: 'Delete tracemonkey.pdf' }).count()).toBe(1);
    expect(await own.textContent()).not.toContain('Shared');
    const handbook = sources.getByRole('listitem').filter({ hasText: 'handbook.txt' });
    expect(await handbook.textContent()).toContain('Shared');
    expect(await handbook.getByRole('button').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('is usable 360 px wide', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await openChat();
    for (const control of [messageBox(), page.getByRole('button', { name: 'Send', exact: true })]) {
      const box = await control.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= 360).toBe(true);
    }
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
    llm.enqueue(reply.text('Small screens are fine.'));
    await send('Phone?');
    await waitForIdle();
    expect(await lastAnswer().textContent()).toContain('Small screens are fine.');
    await page.setViewportSize({ width: 1000, height: 720 });
  });

  it('works from the keyboard alone, with a visible focus', async () => {
    await openChat();
    await messageBox().focus();
    await page.keyboard.type('Keyboard only');
    llm.enqueue(reply.text('Typed and sent.'));
    await page.keyboard.press('Enter');
    await page.getByText('Typed and sent.').waitFor();
    await waitForIdle();
    await page.keyboard.press('Tab'); // to "Attach image"
    const outline = await page.evaluate(
      'getComputedStyle(document.activeElement).outlineStyle + " " + document.activeElement.textContent',
    );
    expect(outline).toBe('solid Attach image');
  });

  it('signs out: the session ends on the server, the old cookie gets 401', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'parley_session');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    const response = await parley.fetch('/users/alice/history', {
      token: null,
      headers: { cookie: `parley_session=${cookie?.value}` },
    });
    expect(response.status).toBe(401);
  });

  it('shows the admin pages to the administrator, who can issue a key', async () => {
    const admin = await browser.newContext({ locale: 'en-US' });
    const adminPage = await admin.newPage();
    await signIn(adminPage, parley.url, TOKEN);
    await adminPage.getByRole('link', { name: 'Admin' }).click();
    await adminPage.getByRole('heading', { name: 'alice' }).waitFor();
    expect(await seriousViolations(adminPage)).toEqual([]);
    await adminPage.getByLabel('User id').fill('bob');
    await adminPage.getByRole('button', { name: 'Create user' }).click();
    const issued = adminPage.getByRole('status').filter({ hasText: 'shown only once' });
    expect(await issued.locator('code').textContent()).toMatch(/^pk_/);
    await adminPage.getByRole('heading', { name: 'bob' }).waitFor();
    // The administrator deletes shared documents (and sees no user's private ones).
    await adminPage.getByRole('link', { name: 'Documents' }).click();
    const sources = adminPage.getByRole('list', { name: 'Sources' });
    const handbook = sources.getByRole('listitem').filter({ hasText: 'handbook.txt' });
    await handbook.waitFor();
    expect(await handbook.textContent()).toContain('Shared');
    expect(await sources.getByText('tracemonkey.pdf').count()).toBe(0);
    await handbook.getByRole('button', { name: 'Delete handbook.txt' }).click();
    await handbook.waitFor({ state: 'detached' });
    await admin.close();
  });

  it('speaks Korean to a Korean browser', async () => {
    const korean = await browser.newContext({ locale: 'ko-KR' });
    const koPage = await korean.newPage();
    await koPage.goto(parley.url);
    await koPage.getByRole('button', { name: '로그인' }).waitFor();
    expect(await koPage.evaluate('document.documentElement.lang')).toBe('ko');
    await korean.close();
  });

  it('keeps the screenshot in the README small', async () => {
    expect((await stat(SCREENSHOT)).size).toBeLessThan(200 * 1024);
  });
});

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { holdAt } from '../support/resumable.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { englishContext, launchChromium, signIn } from './browser.ts';

const TOKEN = 'resume-admin-token';
const words = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`).join(' ');

/**
 * The web client's answers outlive the page (issue 32): a reload mid-answer streams on where
 * it was, a second tab on the same conversation shows it streaming, and Stop works from
 * either. Real Chromium, real Parley on each engine (a resumed listener follows the run
 * through its stored events, woken by the engine's notifications), the fake model held
 * mid-answer.
 */
describe.each(ENGINES)(
  'the web client follows an answer across reloads and tabs, %s engine',
  (engine) => {
    let storage: EngineEnv;
    let llm: FakeLlmServer;
    let parley: RunningParley;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let key: string;

    beforeAll(async () => {
      storage = await engineEnv(engine);
      browser = await launchChromium();
      llm = await startFakeLlmServer();
      parley = await startParley({
        env: { ...storage.env, API_TOKEN: TOKEN, LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0' },
      });
      const created = await parley.fetch('/admin/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'rita' }),
      });
      ({ key } = (await created.json()) as { key: string });
      context = await englishContext(browser);
      page = await context.newPage();
      await signIn(page, parley.url, key);
      await messageBox(page).waitFor();
    });
    afterAll(async () => {
      await browser?.close();
      await parley?.stop();
      await llm?.close();
      await storage?.cleanup();
    });

    const messageBox = (on: Page) => on.getByRole('textbox', { name: 'Message' });
    const lastAnswer = (on: Page) => on.locator('.bubble.assistant').last();
    const send = async (text: string) => {
      await messageBox(page).fill(text);
      await messageBox(page).press('Enter');
    };
    const idle = async (on: Page) => {
      await on.locator('.bubble.assistant[aria-busy="true"]').waitFor({ state: 'detached' });
      await on.getByRole('button', { name: 'Send', exact: true }).waitFor();
    };

    it('streams on where it was after a reload mid-answer', async () => {
      const text = words(40, 'reload');
      const hold = holdAt((_, written) => written.includes('reload10 '));
      llm.enqueue(reply.text(text, { chunks: 40, pace: hold.pace }));
      await send('Count through a reload');
      await hold.reached;
      await lastAnswer(page).getByText('reload9', { exact: false }).waitFor();

      await page.reload();
      await messageBox(page).waitFor();
      // The question, and the answer so far, streaming (Stop offered, the answer busy).
      await page.locator('.bubble.user').getByText('Count through a reload').waitFor();
      await lastAnswer(page).getByText('reload9', { exact: false }).waitFor();
      expect(await lastAnswer(page).getAttribute('aria-busy')).toBe('true');
      expect(await page.getByRole('button', { name: 'Stop', exact: true }).isVisible()).toBe(true);
      hold.release();
      await idle(page);
      expect((await lastAnswer(page).locator('.md').textContent())?.trim()).toBe(text);
      // Once: the question and its answer are shown one time each.
      expect(await page.locator('.bubble.user').getByText('Count through a reload').count()).toBe(
        1,
      );
    });

    it('shows another device, which shares nothing with this browser, the answer streaming', async () => {
      const text = words(40, 'phone');
      const hold = holdAt((_, written) => written.includes('phone6 '));
      llm.enqueue(reply.text(text, { chunks: 40, pace: hold.pace }));
      await send('Count on my phone too');
      await hold.reached;
      await lastAnswer(page).getByText('phone5', { exact: false }).waitFor();

      // Its own profile (no storage in common), signed in with the same key, at the same address.
      const phone = await englishContext(browser, { width: 390, height: 800 });
      const other = await phone.newPage();
      await signIn(other, page.url(), key);
      await other.locator('.bubble.user').getByText('Count on my phone too').waitFor();
      await lastAnswer(other).getByText('phone5', { exact: false }).waitFor();
      expect(await lastAnswer(other).getAttribute('aria-busy')).toBe('true');

      hold.release();
      await Promise.all([idle(page), idle(other)]);
      for (const device of [page, other]) {
        expect((await lastAnswer(device).locator('.md').textContent())?.trim()).toBe(text);
        expect(
          await device.locator('.bubble.user').getByText('Count on my phone too').count(),
        ).toBe(1);
      }
      await phone.close();
    });

    it('shows a second tab the answer streaming, and Stop there stops it in both', async () => {
      const text = words(60, 'tab');
      const hold = holdAt((_, written) => written.includes('tab8 '));
      llm.enqueue(reply.text(text, { chunks: 60, pace: hold.pace }));
      await send('Count in two tabs');
      await hold.reached;
      await lastAnswer(page).getByText('tab7', { exact: false }).waitFor();

      const second = await context.newPage();
      await second.goto(page.url());
      await second.locator('.bubble.user').getByText('Count in two tabs').waitFor();
      await lastAnswer(second).getByText('tab7', { exact: false }).waitFor();
      expect(await lastAnswer(second).getAttribute('aria-busy')).toBe('true');

      await second.getByRole('button', { name: 'Stop', exact: true }).click();
      await Promise.all([idle(page), idle(second)]);
      hold.release();
      for (const tab of [page, second]) {
        const shown = (await lastAnswer(tab).locator('.md').textContent()) ?? '';
        expect(shown).toContain('tab7');
        expect(shown).not.toContain('tab60');
        expect(await lastAnswer(tab).textContent()).toContain('Stopped');
      }
      const history = (await (await parley.fetch('/users/rita/history')).json()) as {
        turns: { question: string; interrupted: boolean }[];
      };
      expect(history.turns.find((turn) => turn.question === 'Count in two tabs')).toMatchObject({
        interrupted: true,
      });
      await second.close();
    });
  },
);

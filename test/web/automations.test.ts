import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/automation-ticks.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';
import { englishContext, launchChromium, seriousViolations, signIn } from './browser.ts';

/**
 * The Automations page in a real Chromium against a real Parley (embedded engine), the fake
 * model and the fake Bot API: made, paused, resumed, run now, its unread mark, deleted.
 * Controls are found by role and name, as a screen-reader user finds them.
 */
describe('the Automations page in Chromium', () => {
  let stack: ReminderStack;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    stack = await startReminderStack('embedded', { start: '2030-06-03T06:00:00Z' });
    const created = await call(stack.parley, 'POST', '/admin/users', { user_id: 'alice' });
    const context = await englishContext(browser);
    page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await signIn(page, stack.parley.url, created.body.key);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  const item = () => page.getByRole('main').getByRole('listitem');
  const navLink = () =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: /^Automations/ });

  it('makes, pauses, resumes, runs now, marks unread and deletes an automation', async () => {
    await navLink().click();
    await page.getByRole('heading', { name: 'Automations' }).waitFor();
    await page.getByText('No automations yet').waitFor();

    await page.getByRole('button', { name: 'New automation' }).click();
    const form = page.getByRole('form', { name: 'New automation' });
    await form.getByLabel('What to ask the assistant').fill('Summarise my day');
    await form.getByLabel('Repeat').selectOption({ label: 'On chosen days' });
    await form.getByRole('checkbox', { name: 'Wed' }).check();
    await form.getByLabel('Time').fill('07:30');
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByRole('button', { name: 'Save' }).click();
    await item().getByText('every Monday and Wednesday at 07:30 (UTC)').waitFor();
    expect(await item().getByRole('strong').textContent()).toBe('Summarise my day');

    await item().getByRole('button', { name: 'Pause' }).click();
    await item().getByText('Paused').waitFor();
    await item().getByRole('button', { name: 'Resume' }).click();
    await item().getByRole('button', { name: 'Pause' }).waitFor();
    const [stored] = (await call(stack.parley, 'GET', '/users/alice/automations')).body
      .automations as { id: string; status: string }[];
    expect(stored?.status).toBe('active');

    stack.llm.enqueue(reply.text('Your **day** is free.'));
    await item().getByRole('button', { name: 'Run now' }).click();
    await page.getByRole('status').getByText('Asked for').waitFor();
    await waitFor(async () => {
      const runs = await call(stack.parley, 'GET', `/users/alice/automations/${stored?.id}/runs`);
      return runs.body.runs[0]?.status === 'done';
    }, 60_000);
    // The unread mark: beside the page's link and on the automation, once the page looks again.
    await page.reload();
    await navLink().filter({ hasText: '1' }).waitFor();
    expect(await navLink().getAttribute('aria-current')).toBe('page');
    expect((await navLink().textContent())?.replace(/\s+/g, ' ')).toContain('1 new result');
    await item().getByText('1 new result').waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // Its conversation holds the answer; opening it clears the mark.
    await item().getByRole('link', { name: 'Open its conversation' }).click();
    await page.locator('.bubble.assistant').getByText('is free.').waitFor();
    expect(await page.locator('.bubble.assistant').last().innerHTML()).toContain(
      '<strong>day</strong>',
    );
    await waitFor(async () => (await navLink().textContent())?.trim() === 'Automations', 10_000);

    await navLink().click();
    await item().getByRole('button', { name: 'Delete automation' }).click();
    await page.getByText('No automations yet').waitFor();
    expect((await call(stack.parley, 'GET', '/users/alice/automations')).body.automations).toEqual(
      [],
    );
    stack.llm.assertNoUnexpected();
    stack.telegram.assertNoUnexpected();
  });

  it('takes a name of 100 emoji and a prompt of 4000, counted in characters as the server does', async () => {
    // An input's maxlength counts UTF-16 units: a name of 100 held only 50 emoji, a prompt
    // of 4000 only 2000.
    await navLink().click();
    await page.getByRole('button', { name: 'New automation' }).click();
    const form = page.getByRole('form', { name: 'New automation' });
    const name = '🌄'.repeat(100);
    const prompt = '🌅'.repeat(4000);
    await form.getByLabel('Time').fill('07:30');
    // One more character in the name is the server's to refuse, in its words.
    await form.getByLabel('What to ask the assistant').fill(prompt);
    await form.getByLabel('Name (optional)').fill(`${name}🌅`);
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').getByText('name: Too big').waitFor();
    await form.getByLabel('Name (optional)').fill(name);
    await form.getByRole('button', { name: 'Save' }).click();
    await item().getByRole('strong').getByText(name, { exact: true }).waitFor();
    const [stored] = (await call(stack.parley, 'GET', '/users/alice/automations')).body
      .automations as { name: string; prompt: string }[];
    expect(stored).toMatchObject({ name, prompt });
  });
});

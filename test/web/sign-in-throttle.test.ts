import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { launchChromium } from './browser.ts';

/**
 * Its own server: after this test the browser's address may not sign in for a minute, which
 * would stop every other browser test.
 */
describe('the sign-in page in Chromium, after too many wrong keys', () => {
  let parley: RunningParley;
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
    parley = await startParley({ env: { API_TOKEN: 'throttle-admin-token' } });
  });
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
  });

  it('tells the person to wait, in words, and does not let even the right key in meanwhile', async () => {
    const page = await browser.newPage({ locale: 'en-US' });
    await page.goto(parley.url);
    const key = page.getByLabel('API key');
    const signIn = page.getByRole('button', { name: 'Sign in' });
    for (let i = 0; i < 10; i++) {
      await key.fill(`pk_wrong${i}`);
      const answered = page.waitForResponse((r) => r.url().endsWith('/session'));
      await signIn.click();
      expect((await answered).status()).toBe(401);
    }
    await key.fill('throttle-admin-token');
    await signIn.click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Too many failed sign-ins from here. Wait a minute' })
      .waitFor();
    expect(await page.getByRole('textbox', { name: 'Message' }).count()).toBe(0);
  });
});

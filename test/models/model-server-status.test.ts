import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { launchChromium } from '../web/browser.ts';

interface Health {
  status: string;
  model: { source: string; state: string; reason?: string };
}

/**
 * A model server (LLM_BASE_URL) that goes away and comes back, as an operator meets it:
 * `/health` said `ready` of a server where nothing listened, and nothing named the setting.
 * Now the first request that finds nobody there makes it `unreachable` with the reason (once
 * in the log), the web client shows why, and the first request answered makes it `ready`
 * again. The server is not probed: what it learns comes from the chats themselves.
 */
describe.each(ENGINES)(
  'a model server that cannot be used (gone, or refusing Parley), on the %s engine',
  (engine) => {
    let llm: FakeLlmServer;
    let proxy: TcpProxy;
    let storage: EngineEnv;
    let parley: RunningParley;
    let baseUrl: string;

    beforeAll(async () => {
      llm = await startFakeLlmServer();
      const upstream = new URL(llm.url);
      proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
      // Credentials in the URL, as some hosted servers take them: never shown.
      baseUrl = `http://parley:s3cret-in-url@127.0.0.1:${proxy.port}${upstream.pathname}`;
      storage = await engineEnv(engine);
      parley = await startParley({
        env: {
          ...storage.env,
          LLM_BASE_URL: baseUrl,
          LLM_MODEL: 'fake-chat',
          LLM_MAX_RETRIES: '0',
        },
      });
    });
    afterAll(async () => {
      await parley?.stop();
      await proxy?.close();
      await llm?.close();
      await storage?.cleanup();
    });

    const health = async () => {
      const response = await parley.fetch('/health');
      expect(response.status).toBe(200); // a model server down takes no replica out of rotation
      return (await response.json()) as Health;
    };
    const ask = async (user: string) =>
      readChat(
        await parley.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hello', user_id: user }),
        }),
      );

    it('says so in /health, the log and the web client, and recovers with the next answer', async () => {
      llm.enqueue(reply.text('First.'));
      expect((await ask('one')).text).toBe('First.');
      expect((await health()).model).toEqual({ source: 'server', state: 'ready' });

      await proxy.cut();
      for (const user of ['two', 'three']) {
        expect((await ask(user)).error?.code).toBe('model_unreachable');
      }
      const down = await health();
      expect(down.status).toBe('ok');
      const shown = `http://127.0.0.1:${proxy.port}${new URL(llm.url).pathname}`;
      expect(down.model).toEqual({
        source: 'server',
        state: 'unreachable',
        reason:
          `Nothing answers at LLM_BASE_URL (${shown}): the connection was refused. ` +
          'Start the model server, or set LLM_BASE_URL to where it listens.',
      });
      // Once, however many chats fail, naming the setting; never the URL's credentials.
      await parley.settled();
      const warnings = parley.logs.filter((line) =>
        line.msg.startsWith('the model server (LLM_BASE_URL) cannot be reached'),
      );
      expect(warnings).toEqual([expect.objectContaining({ code: 'ECONNREFUSED', url: shown })]);
      expect(parley.output()).not.toContain('s3cret-in-url');

      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await page.goto(parley.url);
        const alert = page.getByRole('region', { name: 'Model server' }).getByRole('alert');
        await alert.waitFor({ timeout: 10_000 });
        expect(await alert.textContent()).toBe(
          `The model server cannot be reached: ${down.model.reason}`,
        );

        await proxy.restore();
        llm.enqueue(reply.text('Back.'));
        expect((await ask('four')).text).toBe('Back.');
        expect((await health()).model).toEqual({ source: 'server', state: 'ready' });
        await parley.waitForLog(
          (line) => line.msg === 'the model server (LLM_BASE_URL) answers again',
        );
        // The page asks again every few seconds while it shows the alert.
        await alert.waitFor({ state: 'detached', timeout: 15_000 });
      } finally {
        await browser.close();
      }
      llm.assertNoUnexpected();
    });

    it.each([
      {
        what: 'a key it does not take',
        env: (llm: FakeLlmServer) => ({ LLM_BASE_URL: llm.url, LLM_API_KEY: 'not-the-key' }),
        status: 401,
        fix: 'check LLM_API_KEY.',
      },
      {
        what: 'a base URL without the API path',
        env: (llm: FakeLlmServer) => ({
          LLM_BASE_URL: new URL(llm.url).origin,
          LLM_API_KEY: 'the-key',
        }),
        status: 404,
        fix: 'it does not serve LLM_MODEL ("fake-chat"), or LLM_BASE_URL lacks the API\'s path (such as /v1).',
      },
    ])('says it refuses requests for $what, naming the setting', async ({ env, status, fix }) => {
      const guarded = await startFakeLlmServer({ apiKey: 'the-key' });
      const refusing = await startParley({
        env: { ...storage.env, ...env(guarded), LLM_MODEL: 'fake-chat', LLM_MAX_RETRIES: '0' },
      });
      try {
        const chat = await refusing.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hello', user_id: 'refused' }),
        });
        expect((await readChat(chat)).error?.code).toBe('model_error');
        const { model } = (await (await refusing.fetch('/health')).json()) as Health;
        expect(model).toEqual({
          source: 'server',
          state: 'refusing',
          reason: expect.stringMatching(/^The model server at LLM_BASE_URL/),
        });
        expect(model.reason).toContain(`answers HTTP ${status}: ${fix}`);
        expect(model.reason).toContain(new URL(env(guarded).LLM_BASE_URL).host);
        await refusing.waitForLog(
          (line) =>
            line.msg.startsWith('the model server (LLM_BASE_URL) refuses requests') &&
            line.status === String(status),
        );
      } finally {
        await refusing.stop();
        await guarded.close();
      }
    });
  },
);

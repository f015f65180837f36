import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type FakeFileServer, serveFile } from '../support/fake-file-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { buildTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';

const ANSWER = 'Ready when you are.';
const SIGNATURE = 'sig-0f3a-never-shown';

interface Health {
  model: { state: string; reason?: string };
}

/**
 * LLM_MODEL may be a presigned URL of a private GGUF (its signature in the query): whoever
 * reads it can download the file. `/health` needs no token, and every user sees a chat's
 * error: neither, nor the log, shows the query (nor a user or password in the URL).
 */
describe.each(ENGINES)('a signed model URL on the %s engine', (engine) => {
  let storage: EngineEnv | undefined;
  let host: FakeFileServer | undefined;
  let parley: RunningParley | undefined;
  afterEach(async () => {
    await parley?.stop();
    parley = undefined;
    await host?.close();
    host = undefined;
  });
  afterAll(async () => {
    await storage?.cleanup();
  });

  const start = async (llmModel: string) => {
    storage ??= await engineEnv(engine);
    parley = await startParley({
      env: { ...storage.env, LLM_MODEL: llmModel, LLM_THREADS: '1', EMBEDDINGS_PROVIDER: 'none' },
    });
    return parley;
  };
  const health = async (running: RunningParley) =>
    (await (await running.fetch('/health')).json()) as Health;
  const waitForModel = async (running: RunningParley, state: string) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const model = (await health(running)).model;
      if (model.state === state) return model;
      if (Date.now() > deadline) throw new Error(`model still ${JSON.stringify(model)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const ask = async (running: RunningParley) =>
    readChat(
      await running.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello?', user_id: 'signed-url-user' }),
      }),
    );

  it('downloads through the signed URL, and never shows its signature', async () => {
    host = await serveFile(buildTinyGguf({ script: ANSWER }));
    const running = await start(`${host.url}?X-Amz-Signature=${SIGNATURE}`);
    await waitForModel(running, 'ready');
    const chat = await ask(running);
    expect(chat.text).toBe(ANSWER);
    await running.settled();
    expect(running.output()).toContain('model download finished');
    expect(running.output()).not.toContain(SIGNATURE);
  });

  it('says why the model cannot be had without showing the signature or a password', async () => {
    host = await serveFile(buildTinyGguf({ script: ANSWER }));
    const url = new URL(host.url);
    url.username = 'reader';
    url.password = 'pw-never-shown';
    url.search = `?X-Amz-Signature=${SIGNATURE}`;
    const running = await start(url.href);
    const failed = await waitForModel(running, 'failed');
    expect(failed.reason).toMatch(/^The embedded model could not be obtained from http:\/\/127/);
    const chat = await ask(running);
    expect(chat.error?.code).toBe('model_not_configured');
    await running.settled();
    for (const shown of [failed.reason ?? '', chat.error?.message ?? '', running.output()]) {
      expect(shown).not.toContain(SIGNATURE);
      expect(shown).not.toContain('pw-never-shown');
    }
  });
});

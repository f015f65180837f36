import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { file, leftoverUploads } from '../support/ingest-client.ts';
import { multipartBody } from '../support/multipart.ts';
import { sendOverRawSocket } from '../support/raw-http.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

const TIMEOUT_MS = 1_500;

// A client that stops sending must not hold a connection, or an upload's file, for ever.
describe.each(ENGINES)('REQUEST_TIMEOUT_MS on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;

  beforeAll(async () => {
    setup = await engineSetup(engine, { REQUEST_TIMEOUT_MS: String(TIMEOUT_MS) });
    llm = setup.llm;
    parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('answers a JSON body that stops arriving with 408 and closes the connection', async () => {
    const started = Date.now();
    const replies = await sendOverRawSocket(
      parley.url,
      [
        {
          head: 'POST /chat HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n',
          body: Buffer.from('{"message": "hel'),
        },
      ],
      { untilClosed: true },
    );
    expect(replies.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(replies.text).toContain(
      '{"detail":"The request did not arrive in time (REQUEST_TIMEOUT_MS); send it again."}',
    );
    expect(replies.closedByServer).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(llm.chats).toHaveLength(0);
  });

  it("answers a stalled /v1/chat/completions body with 408 in OpenAI's error shape, and closes", async () => {
    const started = Date.now();
    const replies = await sendOverRawSocket(
      parley.url,
      [
        {
          head: 'POST /v1/chat/completions HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n',
          body: Buffer.from('{"model": "parley", "messages": [{"role": "user", "content": "hel'),
        },
      ],
      { untilClosed: true },
    );
    expect(replies.text).toMatch(/^HTTP\/1\.1 408 /);
    const body = replies.text.slice(replies.text.indexOf('\r\n\r\n') + 4);
    expect(JSON.parse(body)).toEqual({
      error: {
        message: 'The request did not arrive in time (REQUEST_TIMEOUT_MS); send it again.',
        type: 'invalid_request_error',
        param: null,
        code: 'request_timeout',
      },
    });
    expect(replies.closedByServer).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(llm.chats).toHaveLength(0);
  });

  it('answers an upload that stalls with 408, closes, and removes its partial file', async () => {
    const { body, contentType } = multipartBody([
      file('stalled.txt', Buffer.alloc(1024 * 1024, 'a')),
    ]);
    const replies = await sendOverRawSocket(
      parley.url,
      [
        {
          head: `POST /ingest HTTP/1.1\r\nHost: parley\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
          body: body.subarray(0, 256 * 1024),
        },
      ],
      { untilClosed: true },
    );
    expect(replies.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(replies.closedByServer).toBe(true);
    await waitFor(() => leftoverUploads(parley).length === 0);
    expect((await parley.fetch('/health')).status).toBe(200);
  });

  it('lets an answer stream for longer than the limit: it only bounds receiving the request', async () => {
    llm.enqueue(reply.text('one two three four five six seven eight', { chunks: 8, delayMs: 350 }));
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'count slowly', user_id: 'slow-reader' }),
    });
    const stream = await readChat(response);
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('one two three four five six seven eight');
    expect(stream.ended).toBe(true);
  });

  it('lets a /v1 completion stream for longer than the limit', async () => {
    llm.enqueue(reply.text('one two three four five six seven eight', { chunks: 8, delayMs: 350 }));
    // Development mode (no API_TOKEN): any key is the administrator, acting for `user`.
    const client = new OpenAI({ baseURL: `${parley.url}/v1`, apiKey: 'dev', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'count slowly' }],
      stream: true,
      user: 'slow-client',
    });
    let text = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish ??= chunk.choices[0]?.finish_reason;
    }
    expect(text).toBe('one two three four five six seven eight');
    expect(finish).toBe('stop');
  });
});

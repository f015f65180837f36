import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

describe.each(ENGINES)('an unexpected server-side failure on the %s engine', (engine) => {
  let setup: EngineSetup;
  let dataDir: string;
  let parley: RunningParley;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    setup = await engineSetup(engine, { LLM_MODEL: 'fake-chat' });
    ({ llm, dataDir } = setup);
    // Break the schema under a stopped server (the embedded engine is locked while one runs):
    // a real fault, not a client mistake. Migrations do not recreate what they already ran.
    const database = await openDatabase(
      { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: setup.env.DATABASE_URL },
      pino({ level: 'silent' }),
    );
    await database.db.$client.query('DROP TABLE chunks, documents');
    await database.close();
    parley = await startParley({
      dataDir,
      env: setup.env,
    });
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('is a generic 500 with the request id; the cause and stack are only in the log', async () => {
    const response = await parley.fetch('/documents', { headers: { 'x-request-id': 'req-500' } });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      detail: 'Internal Server Error',
      request_id: 'req-500',
    });
    expect(response.headers.get('x-request-id')).toBe('req-500');

    // The log line travels through the child's stdout pipe: it may trail the response.
    const logged = () =>
      parley.logs.find((line) => line.msg === 'unhandled error' && line.reqId === 'req-500');
    await expect.poll(() => logged()).toBeDefined();
    const err = JSON.stringify(logged()?.err);
    expect(err).toContain('"code":"42P01"'); // undefined_table
    expect(err).toContain('document-repository.ts'); // where it happened
    expect((await parley.fetch('/health')).status).toBe(200); // and the service carries on
  });

  it('tells the model only that a tool failed; the cause is in the log as codes', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'search_documents', args: { query: 'private-query-5c1e' } }]),
      reply.text('I could not search your documents just now.'),
    );
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'what did my lease say?', user_id: 'broken-tool' }),
    });
    const stream = await readChat(response);
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('I could not search your documents just now.');

    // What the model was sent back (and so could repeat to the user): no SQL, no table.
    const toolMessage = llm.chats
      .at(-1)
      ?.body.messages.find((message: { role: string }) => message.role === 'tool');
    const told = String(toolMessage?.content);
    expect(told).toContain('The tool failed (tool_failed): try again later, or answer without it.');
    for (const internal of ['chunks', 'does not exist', 'select', 'Failed query']) {
      expect(told).not.toContain(internal);
    }

    const logged = () => parley.logs.find((line) => line.msg === 'tool failed unexpectedly');
    await expect.poll(() => logged()).toBeDefined();
    expect(logged()).toMatchObject({ tool: 'search_documents', code: 'tool_failed' });
    expect(JSON.stringify(logged()?.err)).toContain('"code":"42P01"'); // undefined_table
    expect(parley.output()).not.toContain('private-query-5c1e');
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
});

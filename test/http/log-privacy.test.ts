import OpenAI, { type APIError } from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { type ChatStream, readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, type Reply, reply } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { expectNoSecrets as expectNoSecretsIn } from '../support/log-secrets.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Users' words (their messages, the profile facts in the system prompt, tool inputs, the
 * model's answers, feedback comments) never reach the log, at any level, on any error path:
 * errors are logged as kinds, codes and causes. Only the verbosity flags log content, and they
 * are off here while the log level is the chattiest there is.
 */
describe.each(ENGINES)('the log on the %s engine, at level trace', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  let dataDir: string;
  const user = 'private-user';
  const start = async () => {
    parley = await startParley({
      dataDir,
      env: {
        ...setup.env,
        LLM_CHUNK_TIMEOUT_MS: '1000',
        LOG_LEVEL: 'trace',
      },
    });
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    ({ llm, dataDir } = setup);
    await start();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  /** Everything printed holds no secret marker; on failure, shows where one was. */
  const expectNoSecrets = () => expectNoSecretsIn(parley.output());

  const ask = async (message: string): Promise<ChatStream> =>
    readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: user }),
      }),
    );

  it('holds no user content after every model, tool and storage failure', async () => {
    // A profile fact: from now on every model request carries it in the system prompt.
    llm.enqueue(
      reply.toolCalls([{ name: 'update_profile', args: { facts: { code: 'secret-fact-c1' } } }]),
      reply.text('secret-answer-a1'),
    );
    expect((await ask('secret-question-q1')).error).toBeUndefined();

    const failures: Array<[string, Reply, string]> = [
      ['q400', reply.error(400, { message: 'echo: secret-upstream-e400' }), 'model_error'],
      ['q429', reply.error(429, { message: 'echo: secret-upstream-e429' }), 'model_error'],
      ['q500', reply.error(500, { message: 'echo: secret-upstream-e500' }), 'model_error'],
      [
        'qcut',
        reply.text('secret-answer-cut-x', { chunks: 4, disconnectAfter: 2 }),
        'model_unreachable',
      ],
      ['qstall', reply.text('secret-answer-stall', { chunks: 4, stallAfter: 1 }), 'model_timeout'],
      [
        'qbad',
        reply.text('secret-answer-bad', { chunks: 3, malformedAfter: 1 }),
        'model_bad_response',
      ],
    ];
    for (const [name, upstream, code] of failures) {
      llm.enqueue(upstream);
      const stream = await ask(`secret-question-${name}`);
      expect(stream.error?.code, name).toBe(code);
      expect(llm.chats.at(-1)?.body.messages[0]?.content, name).toContain('secret-fact-c1');
    }

    // Tools that fail: input the tool refuses (it quotes the input), and one that throws.
    llm.enqueue(
      reply.toolCalls([
        { name: 'set_reminder', args: { title: 'secret-title-t1', date: 'not-a-date' } },
      ]),
      reply.toolCalls([
        { name: 'set_reminder', args: { title: 'secret-title-t2', date: '2000-01-01' } },
      ]),
      reply.text('secret-answer-after-tools'),
    );
    const tools = await ask('secret-question-tools');
    expect(tools.error).toBeUndefined();
    const toolResults = llm.chats
      .at(-1)
      ?.body.messages.filter((m) => m.role === 'tool')
      .map((m) => JSON.stringify(m.content));
    expect(toolResults?.join()).toMatch(/past/); // the model was told why, the log is not

    // A tool input Postgres cannot store (U+0000): the tool fails, the turn is still kept.
    llm.enqueue(
      reply.toolCalls([
        { name: 'set_reminder', args: { title: 'secret-title-\u0000-t3', date: '2099-01-01' } },
      ]),
      reply.text('secret-answer-nul'),
    );
    expect((await ask('secret-question-nul')).error).toBeUndefined();

    const feedback = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        run_id: '00000000-0000-4000-8000-000000000000',
        score: 1,
        comment: 'secret-comment-f1',
      }),
    });
    expect(feedback.status).toBe(404);

    const output = parley.output();
    expect(output).toContain('chat failed'); // the failures were logged, only without content
    expect(output).toContain('"status":429');
    expectNoSecrets();
  });

  it('holds no user content after /v1 completions, answered or failed', async () => {
    // Development mode (no API_TOKEN): any bearer is the administrator, acting for `user`.
    const client = new OpenAI({ baseURL: `${parley.url}/v1`, apiKey: 'dev', maxRetries: 0 });
    const messages = (name: string): OpenAI.Chat.Completions.ChatCompletionMessageParam[] => [
      { role: 'system', content: `secret-v1-system-${name}` },
      { role: 'user', content: `secret-v1-earlier-${name}` },
      { role: 'assistant', content: `secret-v1-history-${name}` },
      { role: 'user', content: `secret-v1-question-${name}` },
    ];
    const ask = (name: string) =>
      client.chat.completions.create({ model: 'parley', user, messages: messages(name) });
    const askStreamed = async (name: string) => {
      const stream = await client.chat.completions.create({
        model: 'parley',
        user,
        messages: messages(name),
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => {
          throw new Error('expected the completion to fail');
        },
        (error: unknown) => error as APIError,
      );

    llm.enqueue(reply.text('secret-v1-answer-ok'));
    expect((await ask('ok')).choices[0]?.message.content).toBe('secret-v1-answer-ok');
    llm.enqueue(reply.text('secret-v1-answer-streamed'));
    expect(await askStreamed('streamed')).toBe('secret-v1-answer-streamed');

    // Failing before any answer (non-streamed): the status, code and cause are logged.
    llm.enqueue(reply.error(500, { message: 'echo: secret-v1-upstream-e500' }));
    expect((await failure(ask('e500'))).code).toBe('model_error');
    llm.enqueue(reply.text('secret-v1-answer-stall', { chunks: 4, stallAfter: 1 }));
    expect((await failure(ask('stall'))).code).toBe('model_timeout');
    // Failing mid-stream: the error chunk, the partial answer kept in the run.
    llm.enqueue(reply.text('secret-v1-answer-cut-x', { chunks: 4, disconnectAfter: 2 }));
    expect((await failure(askStreamed('cut'))).code).toBe('model_unreachable');
    llm.enqueue(reply.text('secret-v1-answer-bad', { chunks: 3, malformedAfter: 1 }));
    expect((await failure(askStreamed('bad'))).code).toBe('model_bad_response');
    // Refused requests: nothing reaches the model.
    const tools = await failure(
      client.chat.completions.create({
        model: 'parley',
        user,
        messages: messages('tools'),
        tools: [{ type: 'function', function: { name: 'secret-v1-tool', parameters: {} } }],
      }),
    );
    expect(tools.status).toBe(400);
    const nul = await failure(
      client.chat.completions.create({
        model: 'parley',
        user,
        messages: [{ role: 'user', content: 'secret-v1-question-\u0000-nul' }],
      }),
    );
    expect(nul.status).toBe(400);

    // The failures were logged, by code.
    for (const code of [
      'model_error',
      'model_timeout',
      'model_unreachable',
      'model_bad_response',
    ]) {
      await parley.waitForLog((line) => line.msg === 'chat failed' && line.code === code);
    }
    await parley.settled();
    expectNoSecrets();
  });

  it('holds no user content after conversations are searched, renamed, read and exported', async () => {
    llm.enqueue(reply.text('secret-answer-conversation'));
    const stream = await ask('secret-question-conversation');
    expect(stream.error).toBeUndefined();
    const search = await parley.fetch(
      `/users/${user}/conversations/search?q=${encodeURIComponent('secret-question')}`,
    );
    expect(((await search.json()) as { results: unknown[] }).results.length).toBeGreaterThan(0);
    const { conversations } = (await (
      await parley.fetch(`/users/${user}/conversations`)
    ).json()) as { conversations: { id: string }[] };
    const id = conversations[0]?.id as string;
    const renamed = await parley.fetch(`/users/${user}/conversations/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'secret-title' }),
    });
    expect(renamed.status).toBe(200);
    expect((await parley.fetch(`/users/${user}/conversations/${id}`)).status).toBe(200);
    expect((await parley.fetch(`/users/${user}/conversations/${id}/export`)).status).toBe(200);
    await parley.settled();
    expectNoSecrets();
  });

  it('holds no user content after a document is ingested, listed and deleted', async () => {
    // The source (the uploaded file's name by default) is part of the path that deletes it.
    const source = 'secret-file-name d1.txt';
    const ingested = await ingest(parley, [file(source, 'secret-document-text about d1')]);
    expect(ingested.status).toBe(200);
    expect(ingested.body.source).toBe(source);
    expect((await parley.fetch('/documents')).status).toBe(200);
    // An upload with a key and a session cookie: the multipart plugin logs the headers it
    // hands its parser, at trace.
    const { body, contentType } = multipartBody([file('d3.txt', 'about d3')]);
    const withSecrets = await parley.fetch('/ingest', {
      method: 'POST',
      headers: {
        'content-type': contentType,
        authorization: 'Bearer secret-bearer-key',
        cookie: 'other_app_session=secret-session-cookie',
      },
      body,
    });
    expect(withSecrets.status).toBe(200);
    const deleted = await parley.fetch(`/documents/${encodeURIComponent(source)}`, {
      method: 'DELETE',
    });
    expect(deleted.status).toBe(200);
    const gone = await parley.fetch('/documents/secret-file-name-d2.txt', { method: 'DELETE' });
    expect(gone.status).toBe(404);
    await parley.settled();
    expect(parley.output()).toContain('/documents/*'); // the request was logged, by its route
    expectNoSecrets();
  });

  it('holds no user content when the database refuses to store a turn', async () => {
    // Break the schema under a stopped Parley: the statement that stores the turn then fails,
    // and the database driver's error quotes that statement's parameters.
    await parley.stop();
    const database = await openDatabase(
      { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: setup.env.DATABASE_URL },
      pino({ level: 'silent' }),
    );
    await database.db.$client.query('ALTER TABLE chat_runs RENAME TO chat_runs_gone');
    await database.close();
    await start();

    llm.enqueue(reply.text('secret-answer-db'));
    const stream = await ask('secret-question-db');
    expect(stream.error?.code).toBe('internal_error');
    // Recording the failed run comes after the end events, and fails the same way.
    await expect.poll(() => parley.output()).toContain('could not record the chat turn');
    expect(parley.output()).toContain('"code":"42P01"'); // undefined_table: the cause, without the words
    expectNoSecrets();
  });
});

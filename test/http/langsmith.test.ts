import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_ENDINGS, OVERSIZED_BYTES, oversizedAnswers } from '../support/body-endings.ts';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import {
  type FakeLangSmithServer,
  startFakeLangSmithServer,
} from '../support/fake-langsmith-server.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { expectNoSecrets } from '../support/log-secrets.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * On each engine: feedback waits for LangSmith in the job engine's queue, which each engine
 * keeps in its own database.
 */
describe.each(ENGINES)('tracing and feedback with LangSmith configured, %s engine', (engine) => {
  let storage: EngineEnv;
  let llm: FakeLlmServer;
  let langsmith: FakeLangSmithServer;
  let parley: RunningParley;

  const chat = async (message: string, userId: string) =>
    readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: userId }),
      }),
    );
  const sendFeedback = (body: Record<string, unknown>) =>
    parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    storage = await engineEnv(engine);
    llm = await startFakeLlmServer();
    langsmith = await startFakeLangSmithServer({ apiKey: 'ls-test-key' });
    parley = await startParley({
      env: {
        ...storage.env,
        LLM_BASE_URL: llm.url,
        LLM_MAX_RETRIES: '0',
        LANGSMITH_API_KEY: 'ls-test-key',
        LANGSMITH_ENDPOINT: langsmith.url,
        LANGSMITH_PROJECT: 'parley-tests',
        FEEDBACK_RETRY_MS: '200',
      },
    });
  });
  afterAll(async () => {
    await parley?.stop();
    await llm?.close();
    await langsmith?.close();
    await storage?.cleanup();
  });

  it('traces a chat under its run_id, with model and tool calls as child runs', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], {
        usage: { prompt: 30, completion: 5 },
      }),
      reply.text('You have no reminders.'),
    );
    const stream = await chat('what are my reminders?', 'traced');
    expect(stream.text).toBe('You have no reminders.');
    const runId = stream.runId as string;

    const root = await langsmith.waitForRun(
      (run) => run.id === runId && run.end_time !== undefined,
      10_000,
    );
    expect(root).toMatchObject({
      name: 'parley-chat',
      run_type: 'chain',
      session_name: 'parley-tests',
    });
    expect(root.inputs).toMatchObject({ message: 'what are my reminders?', user_id: 'traced' });
    expect(root.outputs).toMatchObject({ answer: 'You have no reminders.' });

    await langsmith.waitForRun(
      (run) => run.parent_run_id === runId && run.run_type === 'tool',
      10_000,
    );
    await expect
      .poll(
        () =>
          [...langsmith.runs.values()].filter(
            (run) => run.parent_run_id === runId && run.run_type === 'llm',
          ).length,
        {
          timeout: 10_000,
        },
      )
      .toBe(2);
    const tool = [...langsmith.runs.values()].find(
      (run) => run.parent_run_id === runId && run.run_type === 'tool',
    );
    expect(tool).toMatchObject({ name: 'list_reminders', trace_id: runId });
    langsmith.assertNoUnexpected();
  });

  it("traces an MCP server's tool call as a tool run of the chat", async () => {
    const everything = fileURLToPath(
      import.meta.resolve('@modelcontextprotocol/server-everything/dist/index.js'),
    );
    const created = await parley.fetch('/admin/mcp-servers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transport: 'stdio',
        name: 'everything',
        command: process.execPath,
        args: [everything, 'stdio'],
        trusted: true,
      }),
    });
    const { id } = (await created.json()) as { id: string };
    await parley.fetch(`/admin/mcp-servers/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
    llm.enqueue(
      reply.toolCalls([{ name: 'everything__get-sum', args: { a: 20, b: 22 } }]),
      reply.text('42.'),
    );
    const stream = await chat('20 + 22?', 'mcp-traced');
    expect(stream.text).toBe('42.');
    const tool = await langsmith.waitForRun(
      (run) =>
        run.parent_run_id === stream.runId && run.run_type === 'tool' && run.end_time !== undefined,
      10_000,
    );
    expect(tool).toMatchObject({ name: 'everything__get-sum', trace_id: stream.runId });
    expect(JSON.stringify(tool.outputs)).toContain('The sum of 20 and 22 is 42.');
    // Off the request's path: the server stays enabled for no other test of this file.
    await parley.fetch(`/admin/mcp-servers/${id}`, { method: 'DELETE' });
  });

  // Before the first feedback, the client reads `GET /info`; refused, it printed the answer,
  // which a proxy may make a quote of the request: the API key. Error answers reach the client
  // without their body now. First of this file's feedback: later ones find /info read.
  it('prints nothing of a refused answer that quotes the request, its key included', async () => {
    const infoReads = () => langsmith.requests.filter((r) => r.path === '/info').length;
    const readBefore = infoReads();
    langsmith.refuseEchoingNext('info');
    llm.enqueue(reply.text('rate me (quoted)'));
    const stream = await chat('hello quoted', 'quoted');
    const response = await sendFeedback({ run_id: stream.runId, score: 1 });
    const { feedback_id } = (await response.json()) as { feedback_id: string };

    await langsmith.waitForFeedback((item) => item.id === feedback_id, 10_000);
    await parley.settled();
    expectNoSecrets(parley.output(), ['ls-test-key']);
    expect(infoReads()).toBeGreaterThan(readBefore); // the refusal was met
  });

  it('forwards feedback to LangSmith with the run id', async () => {
    llm.enqueue(reply.text('rate me'));
    const stream = await chat('hello', 'rater');
    const response = await sendFeedback({
      run_id: stream.runId,
      score: 0.5,
      comment: '괜찮아요',
      key: 'helpfulness',
    });
    expect(response.status).toBe(200);
    const { feedback_id } = (await response.json()) as { feedback_id: string };

    const received = await langsmith.waitForFeedback((item) => item.id === feedback_id, 10_000);
    expect(received).toMatchObject({
      run_id: stream.runId,
      key: 'helpfulness',
      score: 0.5,
      comment: '괜찮아요',
    });
  });

  it('keeps feedback during a LangSmith outage and delivers it later, without failing the request', {
    timeout: 60_000,
  }, async () => {
    llm.enqueue(reply.text('rate me later'));
    const stream = await chat('hello again', 'patient');
    // The client's own five attempts fail; the outbox's retry then gets through.
    langsmith.failNext('feedback', 5, 503);

    const started = Date.now();
    const response = await sendFeedback({ run_id: stream.runId, score: 1 });
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1_000);
    const { feedback_id } = (await response.json()) as { feedback_id: string };

    const received = await langsmith.waitForFeedback((item) => item.id === feedback_id, 40_000);
    expect(received).toMatchObject({ run_id: stream.runId, key: 'user_score', score: 1 });
    await parley.settled();
    const retries = parley.logs.filter(
      (line) => line.msg === 'background job failed; will retry' && line.id === feedback_id,
    );
    expect(retries.map((line) => [line.job, line.attempts, line.errorKind])).toEqual([
      ['feedback_forward', 1, 'http_503'],
    ]);
  });

  // A 200 whose body is cut, half, stalled past the client's 10 s, or a proxy's HTML 502:
  // LangSmith ends holding the feedback once (a create whose answer was lost and is sent
  // again meets its own id: 409, then an update), and the log has no body.
  it.each(BODY_ENDINGS)(
    'delivers feedback once when LangSmith’s answer is %s',
    { timeout: 60_000 },
    async (ending) => {
      llm.enqueue(reply.text(`rate me (${ending})`));
      const stream = await chat(`hello ${ending}`, `ending-${ending}`);
      langsmith.endNextFeedback(ending);
      const response = await sendFeedback({ run_id: stream.runId, score: 0 });
      expect(response.status).toBe(200);
      const { feedback_id } = (await response.json()) as { feedback_id: string };
      const received = await langsmith.waitForFeedback((item) => item.id === feedback_id, 40_000);
      expect(received).toMatchObject({ run_id: stream.runId, key: 'user_score', score: 0 });
      if (ending.startsWith('cut-') || ending === 'stall-mid-body') {
        // The answer never came whole: the create is sent again, meets its id, and updates.
        await expect
          .poll(() => langsmith.feedbackUpdates.some((update) => update.id === feedback_id), {
            timeout: 30_000,
          })
          .toBe(true);
      }
      await parley.settled();
      expect(langsmith.feedback.filter((item) => item.id === feedback_id)).toHaveLength(1);
      expect(parley.output()).not.toContain('Bad Gateway');
    },
  );

  // An answer far larger than a feedback object, as fast as Parley reads: it was read whole.
  // Read up to 1 MiB, then Parley hangs up: the feedback is delivered once, as after a cut.
  it('reads a feedback answer over its bound no further, and delivers the feedback once', {
    timeout: 60_000,
  }, async () => {
    llm.enqueue(reply.text('rate me (oversized)'));
    const stream = await chat('hello oversized', 'ending-oversized');
    const answers = oversizedAnswers.length;
    langsmith.endNextFeedback('oversized');
    const response = await sendFeedback({ run_id: stream.runId, score: 0 });
    expect(response.status).toBe(200);
    const { feedback_id } = (await response.json()) as { feedback_id: string };
    const received = await langsmith.waitForFeedback((item) => item.id === feedback_id, 40_000);
    expect(received).toMatchObject({ run_id: stream.runId, key: 'user_score', score: 0 });
    const sent = oversizedAnswers[answers];
    await sent?.done;
    expect(sent?.closedEarly).toBe(true);
    expect(sent?.written).toBeLessThan(OVERSIZED_BYTES / 4);
    await expect
      .poll(() => langsmith.feedbackUpdates.some((update) => update.id === feedback_id), {
        timeout: 30_000,
      })
      .toBe(true);
    await parley.settled();
    expect(langsmith.feedback.filter((item) => item.id === feedback_id)).toHaveLength(1);
  });
});

/**
 * LangSmith's validation errors quote what was sent (a proxy in front of it may echo anything),
 * and the client printed such an answer to stderr itself when it refused a trace: the chat's
 * question and answer, past the log and its rules. Parley now logs the refusal as its status,
 * and nothing of the trace is printed. The endpoint carries credentials, as a proxy's may, and
 * is logged without them. One engine: neither sending a trace nor the log at start touches
 * storage (feedback, which does, is tested on both above).
 */
describe('LangSmith behind an endpoint with credentials, refusing a trace with an answer that quotes it', () => {
  const password = 'endpoint-password-never-shown';
  let langsmith: FakeLangSmithServer;
  let stack: EngineStack;

  beforeAll(async () => {
    langsmith = await startFakeLangSmithServer({ apiKey: 'ls-test-key' });
    const endpoint = new URL(langsmith.url);
    endpoint.username = 'parley';
    endpoint.password = password;
    stack = await startEngineStack('embedded', {
      LANGSMITH_API_KEY: 'ls-test-key',
      LANGSMITH_ENDPOINT: endpoint.href,
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await langsmith?.close();
  });

  it('logs which upload was refused, with its status, and prints nothing of the chat', async () => {
    langsmith.refuseEchoingNext('runs', 20);
    stack.llm.enqueue(reply.text('The secret-answer.'));
    const stream = await stack.chat('refused', 'What is the secret-question?');
    expect(stream.text).toBe('The secret-answer.');

    await expect
      .poll(() => langsmith.requests.filter((r) => r.path.startsWith('/runs')).length, {
        timeout: 10_000,
      })
      .toBeGreaterThan(0);
    await stack.parley.settled(1_000);
    expectNoSecrets(stack.parley.output());
    const refused = await stack.parley.waitForLog(
      (line) => line.msg === 'LangSmith: could not send the run',
    );
    expect(refused).toMatchObject({
      runId: stream.runId,
      errorKind: 'http_422',
      err: { status: 422 },
    });
    expect(langsmith.runs.size).toBe(0);
  });

  it('logs the endpoint without its user or password', async () => {
    const started = await stack.parley.waitForLog(
      (line) => line.msg === 'tracing chats to LangSmith',
    );
    expect(started.endpoint).toBe(`${langsmith.url}/`);
    expectNoSecrets(stack.parley.output(), [password]);
  });
});

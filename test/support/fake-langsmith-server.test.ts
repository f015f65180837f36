import { randomUUID } from 'node:crypto';
import { Client, RunTree } from 'langsmith';
import { traceable } from 'langsmith/traceable';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type FakeLangSmithServer,
  type FakeLangSmithServerOptions,
  startFakeLangSmithServer,
} from './fake-langsmith-server.ts';

let server: FakeLangSmithServer | undefined;

async function start(options?: FakeLangSmithServerOptions) {
  server = await startFakeLangSmithServer(options);
  return { fake: server, client: new Client({ apiUrl: server.url, apiKey: 'test' }) };
}

afterEach(async () => {
  try {
    server?.assertNoUnexpected();
  } finally {
    await server?.close();
    server = undefined;
  }
});

/** A parent run with one child, traced the way application code would trace them. */
async function traceAnswer(client: Client) {
  const retrieve = traceable(async (query: string) => [`doc about ${query}`], {
    name: 'retrieve',
    run_type: 'retriever',
    client,
    tracingEnabled: true,
  });
  const answer = traceable(
    async (question: string) => ({ answer: `${(await retrieve(question)).length} document` }),
    {
      name: 'answer',
      run_type: 'chain',
      client,
      tracingEnabled: true,
      project_name: 'parley-test',
    },
  );
  const output = await answer('cats');
  await client.awaitPendingTraceBatches();
  return output;
}

describe('fake LangSmith server driven by the langsmith client', () => {
  it('receives createFeedback as POST /feedback after the client reads /info', async () => {
    const { fake, client } = await start();
    const runId = randomUUID();
    await client.createFeedback(runId, 'user_score', { score: 1, comment: 'good' });

    expect(fake.feedback).toMatchObject([
      { run_id: runId, key: 'user_score', score: 1, comment: 'good', via: '/feedback' },
    ]);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /info',
      'POST /feedback',
    ]);
    expect(fake.requests[1]?.headers['x-api-key']).toBe('test');
  });

  it('assembles a traced parent and child run from compressed multipart batches', async () => {
    const { fake, client } = await start();
    expect(await traceAnswer(client)).toEqual({ answer: '1 document' });

    const runs = [...fake.runs.values()];
    const parent = runs.find((run) => run.name === 'answer');
    const child = runs.find((run) => run.name === 'retrieve');
    expect(parent).toMatchObject({
      run_type: 'chain',
      session_name: 'parley-test',
      inputs: { input: 'cats' },
      outputs: { answer: '1 document' },
    });
    expect(parent?.trace_id).toBe(parent?.id);
    expect(parent?.end_time).toBeDefined();
    expect(child).toMatchObject({
      run_type: 'retriever',
      parent_run_id: parent?.id,
      trace_id: parent?.id,
      outputs: { outputs: ['doc about cats'] },
    });
    const ingests = fake.requests.filter((r) => r.path === '/runs/multipart');
    expect(ingests.length).toBeGreaterThan(0);
    expect(ingests.every((r) => r.headers['content-encoding'] === 'zstd')).toBe(true);
  });

  it('reads uncompressed multipart batches when /info allows no compression', async () => {
    const { fake, client } = await start({
      info: { instance_flags: { gzip_body_enabled: false, zstd_compression_enabled: false } },
    });
    await traceAnswer(client);
    expect([...fake.runs.values()].map((run) => run.name).sort()).toEqual(['answer', 'retrieve']);
    const ingests = fake.requests.filter((r) => r.path === '/runs/multipart');
    expect(ingests.some((r) => r.headers['content-encoding'] === undefined)).toBe(true);
  });

  it('records the post and the patch of a hand-built RunTree', async () => {
    const { fake, client } = await start();
    const root = new RunTree({ name: 'chat', run_type: 'chain', client, tracingEnabled: true });
    root.inputs = { message: '안녕' };
    await root.postRun();
    await client.awaitPendingTraceBatches();
    await root.end({ answer: '안녕하세요' });
    await root.patchRun();
    await client.awaitPendingTraceBatches();

    const run = fake.runs.get(root.id);
    expect(run?.operations).toEqual(['post', 'patch']);
    expect(run).toMatchObject({
      name: 'chat',
      inputs: { message: '안녕' },
      outputs: { answer: '안녕하세요' },
    });
    expect(run?.parent_run_id).toBeUndefined();
  });

  it('takes POST /runs and PATCH /runs/:id from a client without auto-batching', async () => {
    const { fake } = await start();
    const client = new Client({ apiUrl: fake.url, apiKey: 'test', autoBatchTracing: false });
    const root = new RunTree({ name: 'unbatched', run_type: 'llm', client, tracingEnabled: true });
    await root.postRun();
    await root.end({ text: 'done' });
    await root.patchRun();

    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /runs',
      `PATCH /runs/${root.id}`,
    ]);
    expect(fake.runs.get(root.id)).toMatchObject({
      operations: ['post', 'patch'],
      run_type: 'llm',
      outputs: { text: 'done' },
    });
  });

  it('batches feedback that names its trace into /runs/multipart', async () => {
    const { fake, client } = await start();
    const runId = randomUUID();
    await client.createFeedback(runId, 'user_score', { score: 0, traceId: runId });
    await client.awaitPendingTraceBatches();
    expect(fake.feedback).toMatchObject([{ run_id: runId, score: 0, via: '/runs/multipart' }]);
  });

  it('honours LANGSMITH_ENDPOINT and LANGSMITH_API_KEY', async () => {
    const { fake } = await start({ apiKey: 'from-env' });
    const saved = { endpoint: process.env.LANGSMITH_ENDPOINT, key: process.env.LANGSMITH_API_KEY };
    process.env.LANGSMITH_ENDPOINT = fake.url;
    process.env.LANGSMITH_API_KEY = 'from-env';
    try {
      await new Client().createFeedback(randomUUID(), 'user_score', { score: 1 });
    } finally {
      restoreEnv('LANGSMITH_ENDPOINT', saved.endpoint);
      restoreEnv('LANGSMITH_API_KEY', saved.key);
    }
    expect(fake.feedback).toHaveLength(1);
  });
});

describe('fake LangSmith server: one feedback per id', () => {
  it('applies updateFeedback as PATCH /feedback/{id} to the feedback created under that id', async () => {
    const { fake, client } = await start();
    const runId = randomUUID();
    const feedbackId = randomUUID();
    await client.createFeedback(runId, 'user_score', { score: 1, feedbackId });
    await client.updateFeedback(feedbackId, { score: 0 });
    expect(fake.feedback).toMatchObject([{ id: feedbackId, run_id: runId, score: 0 }]);
    expect(fake.feedbackUpdates).toEqual([{ id: feedbackId, score: 0 }]);
  });

  it('refuses a second create of one id with 409, keeping one feedback', async () => {
    const { fake, client } = await start();
    const feedbackId = randomUUID();
    await client.createFeedback(randomUUID(), 'user_score', { score: 1, feedbackId });
    await expect(
      client.createFeedback(randomUUID(), 'user_score', { score: 0, feedbackId }),
    ).rejects.toMatchObject({ status: 409 });
    expect(fake.feedback).toMatchObject([{ id: feedbackId, score: 1 }]);
    expect(fake.duplicateCreates).toBe(1);
  });

  it('records an update of a feedback it never received, answering 404', async () => {
    const { fake, client } = await start();
    await expect(client.updateFeedback(randomUUID(), { score: 1 })).rejects.toThrow(/404/);
    expect(fake.unexpected).toMatchObject([
      { method: 'PATCH', reason: expect.stringMatching(/never created/) },
    ]);
    fake.unexpected.length = 0;
  });
});

describe('fake LangSmith server failures', () => {
  it('injects a 503 the client retries through', async () => {
    const { fake, client } = await start();
    fake.failNext('feedback', 1, 503);
    await client.createFeedback(randomUUID(), 'user_score', { score: 1 });
    expect(fake.requests.filter((r) => r.path === '/feedback')).toHaveLength(2);
    expect(fake.feedback).toHaveLength(1);
  });

  it('injects a 4xx the client gives up on at once', async () => {
    const { fake, client } = await start();
    fake.failNext('feedback', 1, 400);
    await expect(client.createFeedback(randomUUID(), 'user_score', { score: 1 })).rejects.toThrow(
      /400/,
    );
    expect(fake.feedback).toEqual([]);
  });

  it('refuses with a 422 that quotes the request, as LangSmith’s validation errors do', async () => {
    const { fake } = await start();
    const client = new Client({ apiUrl: fake.url, apiKey: 'test', autoBatchTracing: false });
    fake.refuseEchoingNext('runs');
    const run = { name: 'quoted', run_type: 'chain', inputs: { question: 'quote me' } };
    await expect(client.createRun(run)).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('quote me'),
    });
    expect(fake.runs.size).toBe(0);
  });

  it('records unknown paths, answering 404', async () => {
    const { fake } = await start();
    const response = await fetch(`${fake.url}/sessions?name=parley`);
    expect([response.status, await response.json()]).toMatchObject([
      404,
      { detail: expect.any(String) },
    ]);
    expect(fake.unexpected).toEqual([
      { method: 'GET', path: '/sessions', reason: 'no such route' },
    ]);
    expect(() => fake.assertNoUnexpected()).toThrow(/1 unexpected request/);
    fake.unexpected.length = 0;
  });

  it('rejects a multipart run the real API could not place in a trace', async () => {
    const { fake } = await start();
    const body = new FormData();
    body.append(
      'post.run-1',
      new Blob(['{"id":"run-1","name":"orphan"}'], { type: 'application/json' }),
    );
    const response = await fetch(`${fake.url}/runs/multipart`, { method: 'POST', body });
    expect(response.status).toBe(422);
    expect(fake.unexpected.map((u) => u.reason)).toEqual([
      'post of run run-1 without trace_id or dotted_order',
    ]);
    fake.unexpected.length = 0;
  });

  it('waits for a run that arrives in a background batch', async () => {
    const { fake, client } = await start();
    const run = new RunTree({ name: 'late', run_type: 'tool', client, tracingEnabled: true });
    await run.postRun();
    expect((await fake.waitForRun((r) => r.name === 'late')).id).toBe(run.id);
    await client.awaitPendingTraceBatches();
  });
});

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

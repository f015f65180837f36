import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OVERSIZED_BYTES, oversizedAnswers } from '../support/body-endings.ts';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * An embeddings server (EMBEDDINGS_PROVIDER=openai) that answers a batch with far more than a
 * batch's vectors can be, as fast as Parley reads: Parley read it whole into memory (for as
 * long as EMBEDDINGS_TIMEOUT_MS let it, gigabytes at loopback speed). It reads up to the bound
 * (~7 MiB for 32 texts), hangs up, and the batch is asked again, as after a cut answer. On
 * both engines, each with pgvector.
 */
describe.each(ENGINES)('an embeddings answer over its bound, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: Awaited<ReturnType<typeof engineSetup>>;
  let parley: RunningParley;

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_BASE_URL: llm.url,
        EMBEDDINGS_MODEL: 'fake-embed',
        EMBEDDINGS_MAX_RETRIES: '0',
        EMBEDDINGS_RETRY_MS: '200',
        EMBEDDINGS_TIMEOUT_MS: '60000',
      },
    });
    await parley.waitForLog((line) => line.msg === 'database ready');
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('is not read past its bound; the batch is asked again and the document embedded', async () => {
    await parley.settled();
    const text = 'The oversized pelican weighs anchors beside the grey harbour.';
    const from = parley.logs.length;
    const answers = oversizedAnswers.length;
    llm.endEmbeddings('oversized');
    const answer = await ingest(parley, [file('oversized.txt', text)]);
    expect(answer).toMatchObject({ status: 200, body: { chunks: 1 } });
    await parley.waitForLog(
      (line) => line.msg === 'chunks embedded' && parley.logs.indexOf(line) >= from,
    );
    const calls = llm.embeddingsCalls.filter((call) => call.input.includes(text));
    expect(calls.map((call) => call.outcome)).toEqual(['client-closed', 'answered']);
    // Parley hung up once past its bound, long before the end.
    const sent = oversizedAnswers[answers];
    await sent?.done;
    expect(sent?.closedEarly).toBe(true);
    expect(sent?.written).toBeLessThan(OVERSIZED_BYTES / 4);
    const failed = await parley.waitForLog(
      (line) =>
        line.msg === 'background job failed; will retry' && parley.logs.indexOf(line) >= from,
    );
    expect(JSON.stringify(failed)).toContain('upstream_answer_too_large');
    await parley.settled();
    expect(parley.output()).not.toContain('pelican');
    expect(parley.output()).not.toContain('"embedding"');
  }, 60_000);
});

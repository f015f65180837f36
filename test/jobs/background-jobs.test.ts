import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { failedJobs } from '../support/failed-jobs.ts';
import {
  type FakeLangSmithServer,
  startFakeLangSmithServer,
} from '../support/fake-langsmith-server.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { counted } from '../support/prometheus.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'jobs-admin-token';
const LANGSMITH_KEY = 'ls-jobs-key';
/** The shortest lease Parley takes, so the test of a killed process waits seconds. */
const LEASE_SECONDS = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Background jobs as an administrator sees them: one that will never go through is kept as
 * failed, listed by GET /admin/jobs and counted in /metrics; one that fails for a while is
 * retried until it goes through, once; one whose process died mid-job is done by another.
 *
 * The engines run side by side (each has its own fake model, LangSmith, storage and
 * processes): most of each one's time is spent waiting for retries and leases. Within an
 * engine the tests run in turn (`concurrent: false`), as they share its server and fakes.
 */
describe.each(ENGINES)('background jobs on the %s engine', { concurrent: true }, (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let langsmith: FakeLangSmithServer;
  let parley: RunningParley;
  const env = () => ({
    ...setup.env,
    API_TOKEN: TOKEN,
    METRICS_ENABLED: 'true',
    LANGSMITH_API_KEY: LANGSMITH_KEY,
    LANGSMITH_ENDPOINT: langsmith.url,
    FEEDBACK_RETRY_MS: '200',
    JOB_LEASE_SECONDS: String(LEASE_SECONDS),
  });

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    langsmith = await startFakeLangSmithServer({ apiKey: LANGSMITH_KEY });
    parley = await startParley({ dataDir: setup.dataDir, env: env() });
  }, 120_000);
  afterAll(async () => {
    await parley?.stop();
    await langsmith?.close();
    await setup?.cleanup();
  });

  /** A chat (so there is a run to rate), then feedback on it; resolves with the feedback id. */
  const rate = async (on: RunningParley, userId: string, comment: string) => {
    llm.enqueue(reply.text('an answer to rate'));
    const chat = await readChat(
      await on.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello', user_id: userId }),
      }),
    );
    const response = await on.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: chat.runId, score: 0, comment }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { feedback_id: string }).feedback_id;
  };
  const metrics = async () => (await parley.fetch('/metrics')).text();
  const sendsOf = (feedbackId: string) =>
    langsmith.requests.filter(
      (r) => r.path === '/feedback' && (r.body as { id?: string } | undefined)?.id === feedbackId,
    ).length;

  it('keeps feedback LangSmith refuses (400) as failed: listed for the administrator with its error kind, never its words, and counted', {
    concurrent: false,
  }, async () => {
    const before = await metrics();
    langsmith.failNext('feedback', 1, 400);
    const feedbackId = await rate(parley, 'refused-user', 'a private remark 6b1f');

    await expect
      .poll(async () => (await failedJobs(parley)).jobs.find((job) => job.id === feedbackId), {
        timeout: 20_000,
      })
      .toEqual({
        kind: 'feedback_forward',
        id: feedbackId,
        user_id: 'refused-user',
        attempts: 1,
        error_kind: 'http_400',
        failed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
    const after = await metrics();
    const buried = { job: 'feedback_forward', outcome: 'buried' };
    expect(
      counted(after, 'parley_jobs_total', buried) - counted(before, 'parley_jobs_total', buried),
    ).toBe(1);

    // Never tried again: a retry would come within FEEDBACK_RETRY_MS (200 ms).
    await sleep(1_500);
    expect(sendsOf(feedbackId)).toBe(1);
    expect(langsmith.feedback.some((f) => f.id === feedbackId)).toBe(false);
    const { text } = await failedJobs(parley);
    expect(text).not.toContain('6b1f');
    expect(parley.output()).not.toContain('6b1f');
  });

  it('retries feedback while LangSmith answers 503, never buries it, and delivers it once LangSmith is back', {
    concurrent: false,
    timeout: 90_000,
  }, async () => {
    const before = await metrics();
    // The LangSmith client's own five attempts fail; the runner's next attempt goes through.
    langsmith.failNext('feedback', 5, 503);
    const feedbackId = await rate(parley, 'patient-user', 'later');

    await langsmith.waitForFeedback((f) => f.id === feedbackId, 60_000);
    await parley.settled(1_000);
    expect(langsmith.feedback.filter((f) => f.id === feedbackId)).toHaveLength(1);
    expect((await failedJobs(parley)).jobs.some((job) => job.id === feedbackId)).toBe(false);
    const after = await metrics();
    const delta = (outcome: string) =>
      counted(after, 'parley_jobs_total', { job: 'feedback_forward', outcome }) -
      counted(before, 'parley_jobs_total', { job: 'feedback_forward', outcome });
    expect([delta('failed'), delta('buried'), delta('done')]).toEqual([1, 0, 1]);
    const retried = parley.logs.find(
      (line) => line.msg === 'background job failed; will retry' && line.id === feedbackId,
    );
    expect(retried).toMatchObject({ job: 'feedback_forward', attempts: 1, errorKind: 'http_503' });
  });

  it('forwards a burst of ratings, more than a sweep reads a page, each once and without waiting for the next sweep', {
    concurrent: false,
    timeout: 120_000,
  }, async () => {
    // More rows than one page of the sweep (500): a sweep that read one page left the rest
    // to the interval's sweep, 30 s later (the default lease, which this process keeps).
    const RATINGS = 520;
    const { JOB_LEASE_SECONDS: _, ...defaults } = env();
    const parley = await startParley({ env: defaults });
    try {
      const runIds: string[] = [];
      for (let i = 0; i < 52; i++) {
        llm.enqueue(reply.text('an answer to rate'));
        const chat = await readChat(
          await parley.fetch('/chat', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ message: 'hello', user_id: `burst-${i}` }),
          }),
        );
        runIds.push(chat.runId as string);
      }
      const ids: string[] = [];
      // The first send is slow, so that every rating is stored before the first is forwarded
      // (feedback is sent one at a time): the rows pile up beyond a page.
      langsmith.slowNext('feedback', 5_000);
      const started = Date.now();
      for (let i = 0; i < RATINGS; i += 20) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, j) =>
            parley.fetch('/feedback', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ run_id: runIds[(i + j) % runIds.length], score: 1 }),
            }),
          ),
        );
        for (const answer of answers) {
          expect(answer.status).toBe(200);
          ids.push(((await answer.json()) as { feedback_id: string }).feedback_id);
        }
      }
      const wanted = new Set(ids);
      await expect
        .poll(() => langsmith.feedback.filter((f) => wanted.has(f.id ?? '')).length, {
          timeout: 25_000,
        })
        .toBe(RATINGS);
      expect(Date.now() - started).toBeLessThan(25_000);
      expect(Date.now() - started).toBeGreaterThan(4_000); // the slow send did hold the others
      await parley.settled(1_000);
      expect(new Set(langsmith.feedback.map((f) => f.id)).size).toBe(langsmith.feedback.length);
    } finally {
      await parley.stop();
    }
  });

  it('lists failed jobs for the administrator only, with state=failed and a limit of 1 to 500', {
    concurrent: false,
  }, async () => {
    for (const query of [
      '',
      '?state=running',
      '?state=failed&limit=0',
      '?state=failed&limit=501',
    ]) {
      expect((await parley.fetch(`/admin/jobs${query}`)).status, query).toBe(422);
    }
    const created = await parley.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'jobs-curious' }),
    });
    const { key } = (await created.json()) as { key: string };
    expect((await parley.fetch('/admin/jobs?state=failed', { token: key })).status).toBe(403);
    // Two refused feedbacks, one after the other: the limit keeps the newest.
    const refused = async (comment: string) => {
      langsmith.failNext('feedback', 1, 400);
      const id = await rate(parley, 'refused-twice', comment);
      await expect
        .poll(async () => (await failedJobs(parley)).jobs.some((job) => job.id === id), {
          timeout: 20_000,
        })
        .toBe(true);
      return id;
    };
    await refused('first');
    const newer = await refused('second');
    expect((await failedJobs(parley)).jobs.length).toBeGreaterThanOrEqual(2);
    const { jobs } = await failedJobs(parley, '&limit=1');
    expect(jobs.map((job) => job.id)).toEqual([newer]);
  });

  it('delivers feedback whose process was killed mid-send from another process after the lease, exactly once', {
    concurrent: false,
    timeout: 180_000,
  }, async () => {
    // The suite's process is the one killed (this is its last test), and its heir, on the
    // same storage, is the suite's process from then on.
    const taker = parley;
    const held = langsmith.holdNext('feedback');
    const feedbackId = await rate(taker, 'orphan-user', 'kept');
    expect(((await held) as { id?: string }).id).toBe(feedbackId);
    const heldAt = Date.now();
    await taker.stop('SIGKILL');

    const heir = await startParley({ dataDir: setup.dataDir, env: env() });
    parley = heir; // stopped after the suite
    await langsmith.waitForFeedback((f) => f.id === feedbackId, 60_000);
    // Not before the dead process's claim ran out (it was taken just before the send).
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 1_000);
    await heir.settled(1_000);
    expect(langsmith.feedback.filter((f) => f.id === feedbackId)).toHaveLength(1);
    expect(heir.logs.filter((line) => line.job === 'feedback_forward' && line.level >= 40)).toEqual(
      [],
    );
  });
});

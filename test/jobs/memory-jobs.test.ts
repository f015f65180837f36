import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { failedJobs } from '../support/failed-jobs.ts';
import {
  type ChatCompletionRequest,
  type FakeLlmServer,
  type Reply,
  reply,
} from '../support/fake-llm-server.ts';
import { counted } from '../support/prometheus.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'memory-jobs-admin-token';
/** The shortest lease Parley takes, so the test of a killed process waits seconds. */
const LEASE_SECONDS = 10;

const isDecision = (body: ChatCompletionRequest) => body.response_format !== undefined;

/**
 * Memory decisions as background jobs on the job engine, as the administrator and the user
 * see them: one that keeps failing is tried five times, then given up (listed by GET
 * /admin/jobs, counted in /metrics, never asked again); one whose process was killed while
 * the model was deciding is decided by the next process once the lease has run out, once.
 *
 * The engines run side by side (each has its own fake model, storage and processes): most of
 * each one's time is spent waiting for back-offs and leases. Within an engine the tests run in
 * turn (`concurrent: false`), as they share its data directory and fake model.
 */
describe.each(ENGINES)('memory decision jobs on the %s engine', { concurrent: true }, (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let dataDir: string;
  /** The suite's running process on `dataDir`, once a test leaves one for the next. */
  let running: RunningParley | undefined;
  /** How the fake model answers a decision, by a word of the exchange. */
  const decisions = new Map<string, () => Reply>();
  /** When each scripted decision was asked, by its word. */
  const asked: { word: string; at: number }[] = [];
  const env = () => ({
    ...setup.env,
    API_TOKEN: TOKEN,
    METRICS_ENABLED: 'true',
    EMBEDDINGS_PROVIDER: 'none',
    CONV_RAG_ENABLED: 'true',
    MEMORY_RETRY_MS: '1000',
    JOB_LEASE_SECONDS: String(LEASE_SECONDS),
  });

  beforeAll(async () => {
    setup = await engineSetup(engine);
    ({ llm, dataDir } = setup);
    llm.respond((body) => {
      if (!isDecision(body)) return undefined;
      const exchange = JSON.stringify(body.messages);
      const scripted = [...decisions].find(([word]) => exchange.includes(word));
      if (!scripted) return reply.text(JSON.stringify({ remember: false }));
      asked.push({ word: scripted[0], at: Date.now() });
      return scripted[1]();
    });
  }, 120_000);
  afterAll(async () => {
    await running?.stop();
    await setup?.cleanup();
  });

  const decisionsAbout = (word: string) => asked.filter((a) => a.word === word);
  const chat = async (parley: RunningParley, userId: string, message: string) => {
    llm.enqueue(reply.text('Noted.'));
    const stream = await readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: userId }),
      }),
    );
    expect(stream.text).toBe('Noted.');
    return stream.runId as string;
  };
  const metric = async (parley: RunningParley, outcome: string) =>
    counted(await (await parley.fetch('/metrics')).text(), 'parley_jobs_total', {
      job: 'memory_decision',
      outcome,
    });

  it('gives a decision that keeps failing up after its fifth try: listed without its words, counted, never asked again', {
    concurrent: false,
    timeout: 180_000,
  }, async () => {
    const parley = await startParley({ dataDir, env: env() });
    try {
      decisions.set('kayak', () => reply.error(500));
      const runId = await chat(parley, 'paddler', 'My kayak is the red one, code 5521-private.');
      const given = await parley.waitForLog(
        // Retries after 1, 2, 4, 8 s, each up to twice that (jitter).
        (line) => line.msg === 'background job failed for good' && line.id === runId,
        90_000,
      );
      expect(given).toMatchObject({ job: 'memory_decision', attempts: 5, errorKind: 'http_500' });
      // Four retries, spaced out (1, 2, 4, 8 s at the least: whole seconds, doubling), each
      // when it is due: by twice its back-off (the jitter's end), not at the worker's next
      // 5 s poll after that.
      const asked = decisionsAbout('kayak');
      expect(asked).toHaveLength(5);
      const gaps = asked.slice(1).map((c, i) => c.at - (asked[i]?.at ?? 0));
      expect(gaps.every((gap, i) => gap >= 2 ** i * 1000 - 250)).toBe(true);
      expect(
        gaps.every((gap, i) => gap <= 2 ** (i + 1) * 1000 + 2_000),
        `gaps ${gaps}`,
      ).toBe(true);

      const { text, jobs } = await failedJobs(parley);
      expect(jobs.find((job) => job.id === runId)).toMatchObject({
        kind: 'memory_decision',
        user_id: 'paddler',
        attempts: 5,
        error_kind: 'http_500',
      });
      expect(text).not.toContain('kayak');
      expect(await metric(parley, 'buried')).toBe(1);
      expect(await metric(parley, 'failed')).toBe(4);

      // Given up means given up: nothing asks again, not a sweep, not a restart.
      await parley.stop();
      const again = await startParley({ dataDir, env: env() });
      running = again; // left running: the next test's process
      await again.settled(3_000);
      expect(decisionsAbout('kayak')).toHaveLength(5);
      expect(again.output()).not.toContain('5521-private');
      expect(parley.output()).not.toContain('5521-private');
    } finally {
      await parley.stop();
    }
  });

  it('decides an exchange whose process was killed mid-decision on the next process, after the lease, once', {
    concurrent: false,
    timeout: 120_000,
  }, async () => {
    let stalled = true;
    decisions.set('glacier', () =>
      stalled
        ? reply.stall()
        : reply.text(JSON.stringify({ remember: true, memory: 'The user hiked a glacier.' })),
    );
    // The process the last test left running, if it did: any process on the data will do.
    const taker = running ?? (await startParley({ dataDir, env: env() }));
    running = undefined;
    let heir: RunningParley | undefined;
    try {
      const runId = await chat(taker, 'hiker', 'I hiked the glacier yesterday.');
      await expect.poll(() => decisionsAbout('glacier').length, { timeout: 15_000 }).toBe(1);
      const killedAt = Date.now();
      await taker.stop('SIGKILL');
      stalled = false;

      heir = await startParley({ dataDir, env: env() });
      const decided = await heir.waitForLog(
        (line) => line.msg === 'memory decided' && line.runId === runId,
        60_000,
      );
      expect(decided.remembered).toBe(true);
      // Not before the dead process's hold ran out (its heartbeat stopped with it).
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 1_000);
      await heir.settled(3_000);
      expect(decisionsAbout('glacier')).toHaveLength(2);
      const memories = await heir.fetch('/users/hiker/memories');
      const { memories: kept } = (await memories.json()) as { memories: { text: string }[] };
      expect(kept.map((m) => m.text)).toEqual(['The user hiked a glacier.']);
      expect(heir.logs.filter((l) => l.job === 'memory_decision' && l.level >= 40)).toEqual([]);
    } finally {
      await heir?.stop();
      await taker.stop('SIGKILL');
    }
  });
});

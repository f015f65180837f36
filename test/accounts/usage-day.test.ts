import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * "today" in `GET /users/{user_id}/usage` (and in the token limit) is the user's timezone's
 * day. Usage cannot be driven by Parley's test clock (PARLEY_TEST_CLOCK_FILE moves reminders
 * only: a run's `started_at` is the process's real time and "today" is the database's
 * `now()`), so the test does not move time. Instead it places runs in time: before the
 * server starts, it stores runs at the exact instant each user's local day began and one
 * second before it, computed here from the wall clock with Intl (an oracle independent of
 * Parley's SQL). The users are on both sides of the date line (UTC+14 and UTC−12, 26 hours
 * apart, so their "today" never is the same day) plus one with no timezone of their own
 * (DEFAULT_TIMEZONE, UTC+5:45). A day taken in UTC, in the server's zone, in the default zone
 * for everyone, or with the boundary excluded counts a different set of runs, whatever the
 * time of the run: each run has its own power of two of tokens, so the sum says exactly
 * which runs were counted. Only a local midnight passing during the test could change the
 * answer; the expectation is then recomputed and the usage read again.
 */

const ADMIN = 'usage-day-admin-token';
const DEFAULT_TIMEZONE = 'Asia/Kathmandu';
const USERS = {
  kiri: 'Pacific/Kiritimati', // UTC+14
  baker: 'Etc/GMT+12', // UTC−12 (the sign of Etc/ names is POSIX's)
  plain: undefined, // no timezone set: DEFAULT_TIMEZONE
} as const;

const dayOf = (instant: number, timezone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: timezone }).format(instant);

/** The instant the local day that holds `now` began, found by bisection on the local date. */
function startOfLocalDay(now: number, timezone: string): number {
  const today = dayOf(now, timezone);
  let before = now - 50 * 3_600_000; // surely an earlier local day
  let within = now;
  while (within - before > 1) {
    const middle = Math.floor((before + within) / 2);
    if (dayOf(middle, timezone) === today) within = middle;
    else before = middle;
  }
  return within;
}

const timezoneOf = (user: keyof typeof USERS) => USERS[user] ?? DEFAULT_TIMEZONE;

describe.each(ENGINES)("usage's today is the user's day on the %s engine", (engine) => {
  let parley: RunningParley;
  let llm: FakeLlmServer;
  let storage: EngineEnv;
  let dataDir: string;
  /** Every seeded run's instant and tokens; every user gets all of them. */
  const runs: { at: number; tokens: number }[] = [];

  beforeAll(async () => {
    storage = await engineEnv(engine);
    llm = await startFakeLlmServer();
    dataDir = mkdtempSync(join(tmpdir(), 'parley-usage-day-'));
    const now = Date.now();
    let tokens = 1;
    for (const user of Object.keys(USERS) as (keyof typeof USERS)[]) {
      const midnight = startOfLocalDay(now, timezoneOf(user));
      for (const at of [midnight - 1_000, midnight]) {
        runs.push({ at, tokens });
        tokens *= 2;
      }
    }
    await seed(
      { dataDir, databaseUrl: storage.env.DATABASE_URL },
      {
        runs: Object.keys(USERS).flatMap((userId) =>
          runs.map((run) => ({
            id: randomUUID(),
            userId,
            startedAt: new Date(run.at),
            // Input and output both count: split each run's tokens between them.
            inputTokens: Math.floor(run.tokens / 2),
            outputTokens: run.tokens - Math.floor(run.tokens / 2),
          })),
        ),
      },
    );
    parley = await startParley({
      dataDir,
      env: {
        API_TOKEN: ADMIN,
        LLM_BASE_URL: llm.url,
        EMBEDDINGS_PROVIDER: 'none',
        DEFAULT_TIMEZONE,
        TZ: 'UTC',
        ...storage.env,
      },
      token: ADMIN,
    });
    for (const [user, timezone] of Object.entries(USERS)) {
      if (!timezone) continue;
      const set = await parley.fetch(`/users/${user}/profile`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ timezone }),
      });
      expect(set.status).toBe(200);
    }
  });
  afterAll(async () => {
    await parley?.stop();
    await llm?.close();
    await storage?.cleanup();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const expectedTokens = (user: keyof typeof USERS) => {
    const midnight = startOfLocalDay(Date.now(), timezoneOf(user));
    return runs.filter((run) => run.at >= midnight).reduce((sum, run) => sum + run.tokens, 0);
  };

  it.each(Object.keys(USERS) as (keyof typeof USERS)[])(
    "counts for %s exactly the runs started since midnight in the user's timezone",
    async (user) => {
      const read = async () =>
        (await (await parley.fetch(`/users/${user}/usage`)).json()) as { tokens_today: number };
      let expected = expectedTokens(user);
      let usage = await read();
      const after = expectedTokens(user);
      if (after !== expected) {
        // A local midnight passed while reading: read again on the new day.
        expected = after;
        usage = await read();
      }
      // The run at midnight itself belongs to today; the one a second before does not.
      expect(expected).toBeGreaterThan(0);
      expect(usage.tokens_today).toBe(expected);
    },
  );

  it('tells the two sides of the date line apart', () => {
    // Sanity of the fixture: the users' days differ, so one shared day could not pass.
    expect(expectedTokens('kiri')).not.toBe(expectedTokens('baker'));
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * "today" in `GET /users/{user_id}/usage` (and in the token limit) is the user's timezone's
 * day. This test does not move Parley's test clock (PARLEY_TEST_CLOCK_FILE moves "today", but
 * a run's `started_at` is the process's real time; usage-clock-change.test.ts moves it to the
 * days the clocks change). Instead it places runs in time: before the
 * server starts, it stores runs at the exact instant each user's local day began and one
 * second before it, computed here from the wall clock with Intl (an oracle independent of
 * Parley's SQL). The users are on both sides of the date line (UTC+14 and UTC−12, 26 hours
 * apart, so their "today" never is the same day) plus one with no timezone of their own
 * (DEFAULT_TIMEZONE, UTC+5:45). A day taken in UTC, in the server's zone, in the default zone
 * for everyone, or with the boundary excluded counts a different set of runs, whatever the
 * time of the run: each run has its own power of two of tokens, so the sum says exactly
 * which runs were counted. Ingestion is placed the same way (bytes on the user's local
 * yesterday, today and tomorrow), and a key over its day's tokens must be told to come back
 * at the user's next local midnight. Only a local midnight passing during the suite could
 * change the answers, so a suite that would start within SUITE_SPAN_MS of one of the users'
 * midnights first waits it out (three instants a day; the wait is at most that span).
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

/** Longer than the suite takes from seeding to its last read, on a loaded machine. */
const SUITE_SPAN_MS = 5 * 60_000;

/** Waits until no user's next local midnight falls within SUITE_SPAN_MS. */
async function clearOfMidnights(): Promise<void> {
  const now = Date.now();
  const next = Math.min(
    ...(Object.keys(USERS) as (keyof typeof USERS)[]).map(
      (user) => startOfLocalDay(now, timezoneOf(user)) + 86_400_000,
    ),
  );
  if (next - now < SUITE_SPAN_MS) await new Promise((r) => setTimeout(r, next - now + 1_000));
}

/** The date `days` after a YYYY-MM-DD date. */
const addDays = (day: string, days: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
const MB = 1024 * 1024;
/** Bytes ingested on the user's local yesterday, today and tomorrow (as seeded). */
const INGESTED = { [-1]: 1 * MB, 0: 2 * MB, 1: 4 * MB } as Record<number, number>;

describe.each(ENGINES)("usage's today is the user's day on the %s engine", (engine) => {
  let parley: RunningParley;
  let setup: EngineSetup;
  /** Every seeded run's instant and tokens; every user gets all of them. */
  const runs: { at: number; tokens: number }[] = [];
  /** Each user's ingestion per seeded day. */
  const ingested: Record<string, Record<string, number>> = {};
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    await clearOfMidnights();
    setup = await engineSetup(engine);
    const { dataDir } = setup;
    const now = Date.now();
    let tokens = 1;
    for (const user of Object.keys(USERS) as (keyof typeof USERS)[]) {
      const midnight = startOfLocalDay(now, timezoneOf(user));
      for (const at of [midnight - 1_000, midnight]) {
        runs.push({ at, tokens });
        tokens *= 2;
      }
    }
    for (const user of Object.keys(USERS) as (keyof typeof USERS)[]) {
      const today = dayOf(now, timezoneOf(user));
      ingested[user] = Object.fromEntries(
        [-1, 0, 1].map((offset) => [addDays(today, offset), INGESTED[offset] as number]),
      );
    }
    await seed(
      { dataDir, databaseUrl: setup.env.DATABASE_URL },
      {
        ingestUsage: Object.entries(ingested).flatMap(([userId, days]) =>
          Object.entries(days).map(([day, bytes]) => ({ userId, day, bytes })),
        ),
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
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        DEFAULT_TIMEZONE,
        TZ: 'UTC',
      },
      token: ADMIN,
    });
    for (const [user, timezone] of Object.entries(USERS)) {
      // An account whose key may spend 1 token a day: already used up by the seeded runs.
      const created = await parley.fetch('/admin/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: user }),
      });
      expect(created.status).toBe(201);
      keys[user] = ((await created.json()) as { key: string }).key;
      const limited = await parley.fetch(`/admin/users/${user}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ limits: { tokens_per_day: 1, chats_per_minute: 0 } }),
      });
      expect(limited.status).toBe(200);
      if (!timezone) continue;
      const set = await parley.fetch(`/users/${user}/profile`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ timezone }),
      });
      expect(set.status).toBe(200);
    }
  }, SUITE_SPAN_MS + 180_000);
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  const expectedTokens = (user: keyof typeof USERS) => {
    const midnight = startOfLocalDay(Date.now(), timezoneOf(user));
    return runs.filter((run) => run.at >= midnight).reduce((sum, run) => sum + run.tokens, 0);
  };

  it.each(Object.keys(USERS) as (keyof typeof USERS)[])(
    "counts for %s exactly the runs started since midnight in the user's timezone",
    async (user) => {
      const usage = (await (await parley.fetch(`/users/${user}/usage`)).json()) as {
        tokens_today: number;
      };
      const expected = expectedTokens(user);
      // The run at midnight itself belongs to today; the one a second before does not.
      expect(expected).toBeGreaterThan(0);
      expect(usage.tokens_today).toBe(expected);
    },
  );

  it.each(Object.keys(USERS) as (keyof typeof USERS)[])(
    "counts for %s the bytes ingested on the user's own today",
    async (user) => {
      const usage = (await (await parley.fetch(`/users/${user}/usage`)).json()) as {
        ingest_mb_today: number;
      };
      const want = ingested[user]?.[dayOf(Date.now(), timezoneOf(user))];
      expect(want).toBe(2 * MB);
      expect(usage.ingest_mb_today).toBe(2);
    },
  );

  it.each(Object.keys(USERS) as (keyof typeof USERS)[])(
    "tells %s to come back at midnight in the user's timezone once today's tokens are used up",
    async (user) => {
      const before = Date.now();
      const refused = await parley.fetch('/chat', {
        method: 'POST',
        token: keys[user] as string,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'more?' }),
      });
      const after = Date.now();
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { detail: string }).detail).toContain('1 model tokens');
      // These timezones keep no summer time: the next local midnight is 24 h after the last.
      const midnight = startOfLocalDay(after, timezoneOf(user)) + 86_400_000;
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(Math.floor((midnight - after) / 1000) - 2);
      expect(retryAfter).toBeLessThanOrEqual(Math.ceil((midnight - before) / 1000) + 2);
      expect(setup.llm.chats).toHaveLength(0);
    },
  );

  it('tells the two sides of the date line apart', () => {
    // Sanity of the fixture: the users' days differ, so one shared day could not pass.
    expect(expectedTokens('kiri')).not.toBe(expectedTokens('baker'));
  });
});

import { randomUUID } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * "Resets at midnight in your timezone" on the two days a year the clocks change, when a
 * local day is 25 or 23 hours long. The service's test clock (PARLEY_TEST_CLOCK_FILE) is set
 * to 23:30 in Berlin on each of those days; a user whose day's tokens are used up must be
 * told to come back in 30 minutes, at the next local midnight. (Taken as 24 hours after the
 * day began, the wait was −30 minutes, sent as `Retry-After: 1`, on the day summer time ends,
 * and 90 minutes on the day it starts.) Each user's runs are seeded at the instant their
 * local day began and one second before, so the usage also shows where that day starts.
 */

const ADMIN = 'usage-clock-change-admin-token';
const TIMEZONE = 'Europe/Berlin';

const DAYS = {
  // Summer time ends at 03:00 CEST (01:00Z): the day began at 00:00 CEST.
  'summer time ends': {
    user: 'autumn',
    dayStarts: '2026-10-24T22:00:00Z',
    at: '2026-10-25T22:30:00Z', // 23:30 CET
  },
  // Summer time starts at 02:00 CET (01:00Z): the day began at 00:00 CET.
  'summer time starts': {
    user: 'spring',
    dayStarts: '2027-03-27T23:00:00Z',
    at: '2027-03-28T21:30:00Z', // 23:30 CEST
  },
} as const;
/** From 23:30 to the next local midnight, either day. */
const HALF_AN_HOUR_S = 30 * 60;

describe.each(ENGINES)('the daily limit across a clock change on the %s engine', (engine) => {
  let parley: RunningParley;
  let setup: EngineSetup;
  let clockFile: string;
  const keys: Record<string, string> = {};
  const setClock = (iso: string) => {
    writeFileSync(`${clockFile}.tmp`, iso);
    renameSync(`${clockFile}.tmp`, clockFile); // never a half-written file
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    const { dataDir } = setup;
    clockFile = join(dataDir, 'test-clock');
    setClock(new Date().toISOString());
    await seed(
      { dataDir, databaseUrl: setup.env.DATABASE_URL },
      {
        runs: Object.values(DAYS).flatMap(({ user, dayStarts }) => [
          // One token the second before the local day began (yesterday), two at its start.
          {
            id: randomUUID(),
            userId: user,
            startedAt: new Date(Date.parse(dayStarts) - 1_000),
            inputTokens: 1,
            outputTokens: 0,
          },
          {
            id: randomUUID(),
            userId: user,
            startedAt: new Date(dayStarts),
            inputTokens: 1,
            outputTokens: 1,
          },
        ]),
      },
    );
    parley = await startParley({
      dataDir,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        PARLEY_TEST_CLOCK_FILE: clockFile,
        TZ: 'UTC',
      },
      token: ADMIN,
    });
    for (const { user } of Object.values(DAYS)) {
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
        body: JSON.stringify({ limits: { tokens_per_day: 2, chats_per_minute: 0 } }),
      });
      expect(limited.status).toBe(200);
      const set = await parley.fetch(`/users/${user}/profile`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ timezone: TIMEZONE }),
      });
      expect(set.status).toBe(200);
    }
  }, 180_000);
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it.each(Object.keys(DAYS) as (keyof typeof DAYS)[])(
    'on the day %s, tells a user at 23:30 to come back in 30 minutes',
    async (day) => {
      const { user, at } = DAYS[day];
      setClock(at);
      const usage = (await (
        await parley.fetch(`/users/${user}/usage`, { token: keys[user] as string })
      ).json()) as { tokens_today: number };
      expect(usage.tokens_today).toBe(2); // the run at the day's start, not the one before

      const refused = await parley.fetch('/chat', {
        method: 'POST',
        token: keys[user] as string,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'one more?' }),
      });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { detail: string }).detail).toContain(
        'resets at midnight in your timezone',
      );
      // The test clock stands still: the wait is exact.
      expect(Number(refused.headers.get('retry-after'))).toBe(HALF_AN_HOUR_S);
      expect(setup.llm.chats).toHaveLength(0);
    },
  );
});

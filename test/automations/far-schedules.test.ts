import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/automation-ticks.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Schedules whose first run lies thousands of years ahead passed every check: they never run,
 * take one of the user's automation places, and their `next_run_at` came back as
 * "+010000-01-01T07:59:00.000Z", which is no RFC 3339 date-time a client can read.
 */
describe.each(ENGINES)('automation schedules far ahead on the %s engine', (engine) => {
  let parley: RunningParley;
  let storage: EngineEnv;
  const api = (method: string, path: string, body?: unknown) => call(parley, method, path, body);

  beforeAll(async () => {
    storage = await engineEnv(engine);
    parley = await startParley({
      dataDir: mkdtempSync(join(tmpdir(), 'parley-far-schedules-')),
      env: { API_TOKEN: 'far-admin', EMBEDDINGS_PROVIDER: 'none', ...storage.env },
    });
  }, 180_000);
  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
  });

  it('refuses a first run more than 100 years ahead, on creating and on changing', async () => {
    const year = new Date().getUTCFullYear();
    const far = [
      { type: 'once', date: '9999-12-31', time: '23:59' },
      { type: 'once', date: `${year + 101}-01-01`, time: '08:00' },
      { type: 'every', hours: 2, starts_at: '9999-12-31T23:59:59-12:00' },
    ];
    for (const schedule of far) {
      const refused = await api('POST', '/users/far/automations', {
        prompt: 'Say hello',
        schedule,
        timezone: 'America/Los_Angeles',
      });
      expect(refused, JSON.stringify(schedule)).toMatchObject({
        status: 422,
        body: { detail: expect.stringContaining('100 years') },
      });
    }
    expect((await api('GET', '/users/far/automations')).body.automations).toEqual([]);

    // Within the limit, and a start long past (it runs from its next step), are taken.
    const near = await api('POST', '/users/far/automations', {
      prompt: 'Say hello',
      schedule: { type: 'once', date: `${year + 99}-06-01`, time: '08:00' },
    });
    expect(near.status, JSON.stringify(near.body)).toBe(201);
    expect(near.body.next_run_at).toMatch(/^\d{4}-/);
    const old = await api('POST', '/users/far/automations', {
      prompt: 'Say hello',
      schedule: { type: 'every', hours: 2, starts_at: '0001-01-01T00:00:00Z' },
    });
    expect(old.status, JSON.stringify(old.body)).toBe(201);

    const changed = await api('PATCH', `/users/far/automations/${near.body.id}`, {
      schedule: far[0],
    });
    expect(changed).toMatchObject({
      status: 422,
      body: { detail: expect.stringContaining('100 years') },
    });
    const kept = await api('GET', '/users/far/automations');
    expect(kept.body.automations.map((a: { next_run_at: string }) => a.next_run_at)).toEqual(
      expect.arrayContaining([near.body.next_run_at]),
    );
  });
});

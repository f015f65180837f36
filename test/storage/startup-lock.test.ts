import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryStartupRace, serverStartupSerializer } from '../../src/storage/startup-lock.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';

const silent = pino({ level: 'silent' });

describe('the start-up turn of replicas on one PostgreSQL database', () => {
  let database: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query('CREATE TABLE seen (key text PRIMARY KEY)');
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  it('lets one replica at a time run its start-up work, the others waiting their turn', async () => {
    const events: string[] = [];
    const turn = (name: string) =>
      serverStartupSerializer(
        database.url,
        silent,
      )(async () => {
        events.push(`${name} begins`);
        await new Promise((resolve) => setTimeout(resolve, 150));
        events.push(`${name} ends`);
        return name;
      });
    const results = await Promise.all([turn('a'), turn('b'), turn('c')]);
    expect(results).toEqual(['a', 'b', 'c']);
    // No turn begins before the one before it has ended.
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i]?.endsWith('begins')).toBe(true);
      expect(events[i + 1]).toBe(`${events[i]?.split(' ')[0]} ends`);
    }
  });

  it('releases the turn when the work fails', async () => {
    const serialize = serverStartupSerializer(database.url, silent);
    await expect(serialize(() => Promise.reject(new Error('broken start')))).rejects.toThrow(
      'broken start',
    );
    await expect(serialize(async () => 'next')).resolves.toBe('next');
  });

  it('tries a step again when it lost a race for a catalog object, and it then succeeds', async () => {
    await client.query("INSERT INTO seen VALUES ('taken')");
    let attempts = 0;
    const result = await retryStartupRace(
      'test step',
      async () => {
        attempts++;
        // The first try collides as a replica's DDL does with another's (a unique violation).
        await client.query('INSERT INTO seen VALUES ($1)', [attempts === 1 ? 'taken' : 'free']);
        return attempts;
      },
      silent,
    );
    expect(result).toBe(2);
  });

  it('fails at once on any other error, and after its last try on a race', async () => {
    let attempts = 0;
    await expect(
      retryStartupRace(
        'test step',
        async () => {
          attempts++;
          await client.query('SELEC 1');
        },
        silent,
      ),
    ).rejects.toMatchObject({ code: '42601' });
    expect(attempts).toBe(1);

    attempts = 0;
    await expect(
      retryStartupRace(
        'test step',
        async () => {
          attempts++;
          await client.query("INSERT INTO seen VALUES ('taken')");
        },
        silent,
        3,
      ),
    ).rejects.toMatchObject({ code: '23505' });
    expect(attempts).toBe(3);
  });
});

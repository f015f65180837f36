import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

describe('an unexpected server-side failure', () => {
  let database: TestDatabase;
  let parley: RunningParley;

  beforeAll(async () => {
    database = await createTestDatabase();
    parley = await startParley({ env: { DATABASE_URL: database.url } });
  });
  afterAll(async () => {
    await parley?.stop();
    await database?.drop();
  });

  it('is a generic 500 with the request id; the stack is only in the log', async () => {
    // Break the schema under the running server: a real fault, not a client mistake.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query('DROP TABLE chunks, documents');
    await client.end();

    const response = await parley.fetch('/documents', { headers: { 'x-request-id': 'req-500' } });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      detail: 'Internal Server Error',
      request_id: 'req-500',
    });
    expect(response.headers.get('x-request-id')).toBe('req-500');

    // The log line travels through the child's stdout pipe: it may trail the response.
    const logged = () =>
      parley.logs.find((line) => line.msg === 'unhandled error' && line.reqId === 'req-500');
    await expect.poll(() => JSON.stringify(logged()?.err ?? null)).toContain('documents');
    expect((await parley.fetch('/health')).status).toBe(200); // and the service carries on
  });
});

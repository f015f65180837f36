import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { followerWaits } from '../support/resumable.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

/** The smallest DB_REPLY_TIMEOUT_MS: how long a silent connection is waited for. */
const REPLY_TIMEOUT_MS = 1_000;

/**
 * A network partition that drops one replica's packets (neither answered nor closed, as a
 * failover leaves them; through a proxy, so the server other tests share is not touched)
 * silences the connection on which it LISTENs for other replicas' runs. That connection only
 * listens: unless the replica asks it something, it never finds out, and its listeners of
 * runs generated elsewhere are left to their once-a-second poll for good.
 */
describe('resumable answers after a silent partition', () => {
  let llm: FakeLlmServer;
  let database: TestDatabase;
  let proxy: TcpProxy;
  let holder: RunningParley;
  let follower: RunningParley;

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    database = await createTestDatabase();
    const real = new URL(database.url);
    proxy = await startTcpProxy(real.hostname, Number(real.port || 5432));
    const proxied = new URL(database.url);
    proxied.port = String(proxy.port);
    const env = {
      LLM_BASE_URL: llm.url,
      LLM_MAX_RETRIES: '0',
      DB_REPLY_TIMEOUT_MS: String(REPLY_TIMEOUT_MS),
    };
    // Only the follower's traffic goes through the proxy: the holder hears it asking to be
    // stored at the fast pace, whatever the follower's LISTEN connection does.
    [holder, follower] = await Promise.all([
      startParley({ env: { ...env, DATABASE_URL: database.url }, startTimeoutMs: 180_000 }),
      startParley({ env: { ...env, DATABASE_URL: proxied.toString() }, startTimeoutMs: 180_000 }),
    ]);
  }, 240_000);
  afterAll(async () => {
    await Promise.allSettled([holder?.stop(), follower?.stop()]);
    await proxy?.close();
    await llm?.close();
    await database?.drop();
  });

  it('a listener on the partitioned replica is woken by notifications again, not by its poll', async () => {
    // Every connection the follower has goes silent for good; new ones reach the server.
    proxy.silence();
    // Its keep-alive query finds out within 5 s and the reply timeout, and it listens again
    // on a new connection. Waited for, not required: what a user sees is asserted below.
    await follower
      .waitForLog((line) => line.msg === 'listening for run notifications again', 12_000)
      .catch(() => undefined);
    await dropSilentPoolConnections(follower);

    const { expected, shown, waits, p75 } = await followerWaits(
      llm,
      () => chat(holder, 'partitioned'),
      (runId) => follower.fetch(`/users/partitioned/runs/${runId}/events`),
    );
    expect(shown).toBe(expected);
    // Woken by notifications: the holder's 50 ms flush and a read. By the poll: 750 ms at p75.
    expect(p75, `waits ${waits.join(', ')} ms`).toBeLessThan(500);
    // The fault did happen, and was seen as one.
    expect(
      follower.logs.some((line) => line.msg === 'run notifications lost; listening again'),
    ).toBe(true);
  }, 60_000);
});

const chat = (on: RunningParley, user: string) =>
  on.fetch('/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user_id: user, message: 'go', resumable: true }),
  });

/**
 * The follower's pooled connections went silent too: each fails the first query it is given,
 * after the reply timeout, and is dropped (what lifecycle.test.ts shows). Asked by more
 * requests at once than the pool holds (DB_POOL_MAX, 10), every idle one is given one; a
 * round answered whole leaves none behind, so the run below is not slowed by them.
 */
async function dropSilentPoolConnections(replica: RunningParley): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const statuses = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const response = await replica.fetch('/users/partitioned/history');
        await response.body?.cancel();
        return response.status;
      }),
    );
    if (statuses.every((status) => status === 200)) return;
  }
  throw new Error('the partitioned replica kept failing its requests');
}

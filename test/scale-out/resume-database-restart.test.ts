import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamReader } from '../support/chat-stream.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { holdAt, lastEventId, sseEvents, textOf } from '../support/resumable.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

/**
 * The database goes away in the middle of a resumable answer and comes back (every
 * connection cut, new ones refused, as in a restart; through a proxy, so the server other
 * tests share is not touched). The replica writing the answer keeps its events until it can
 * store them; a listener on another replica, whose notifications were lost with its
 * connection, reads on from its last event: every fragment arrives once, in order.
 */
describe('a resumable answer through a database restart', () => {
  let llm: FakeLlmServer;
  let database: TestDatabase;
  let proxy: TcpProxy;
  let writer: RunningParley;
  let reader: RunningParley;

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    database = await createTestDatabase();
    const real = new URL(database.url);
    proxy = await startTcpProxy(real.hostname, Number(real.port || 5432));
    const url = new URL(database.url);
    url.port = String(proxy.port);
    const env = { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', DATABASE_URL: url.toString() };
    [writer, reader] = await Promise.all([
      startParley({ env, startTimeoutMs: 180_000 }),
      startParley({ env, startTimeoutMs: 180_000 }),
    ]);
  }, 240_000);
  afterAll(async () => {
    await Promise.allSettled([writer?.stop(), reader?.stop()]);
    await proxy?.close();
    await llm?.close();
    await database?.drop();
  });

  it('a listener on another replica gets every fragment once', async () => {
    const text = Array.from({ length: 30 }, (_, i) => `w${i + 1}`).join(' ');
    // Held twice: before the cut (the listener has part of it), and once the model wrote more
    // while the database was away (until it is back).
    const first = holdAt((_, written) => written.includes('w5 '));
    const second = holdAt((_, written) => written.includes('w20 '));
    const pace = async (written: string) => {
      await first.pace(written);
      await second.pace(written);
    };
    llm.enqueue(reply.text(text, { chunks: 30, pace }));
    const response = await writer.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'restart', message: 'go', resumable: true }),
    });
    const runId = response.headers.get('x-parley-run-id') as string;
    await first.reached;
    const listening = await reader.fetch(`/users/restart/runs/${runId}/events`);
    const listener = streamReader(listening);
    const before = sseEvents(await listener.until((raw) => textOf(sseEvents(raw)).includes('w5')));

    await proxy.cut();
    first.release();
    await second.reached;
    // The model went on while the database was away: nothing of it could be stored.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await proxy.restore();
    second.release();

    const all = sseEvents(await listener.rest());
    const origin = sseEvents(await response.text());
    // Once each, in order: the ids count up by one, and the text is the whole answer.
    const ids = all.slice(0, -1).map((event) => event.id);
    expect(ids).toEqual(ids.map((_, index) => index + 1));
    expect(textOf(all)).toBe(text);
    expect(all.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId }),
      '[DONE]',
    ]);
    expect(lastEventId(before)).toBeGreaterThan(0);
    // The same stream as the replica writing it sent its own client.
    expect(all).toEqual(origin);
    // The fault did happen: a batch waited for the database, and the listener's replica lost
    // its notifications and listened again.
    await writer.waitForLog((line) => line.msg === 'run events not stored yet; trying again');
    await reader.waitForLog((line) => line.msg === 'run notifications lost; listening again');
  }, 120_000);
});

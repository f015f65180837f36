import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/** Keeps the event loop busy for `ms`, as a long synchronous piece of work would. */
function holdEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy on purpose
  }
}

/**
 * /health's database check answers `unreachable` only for a database that did not answer in
 * time. A database that answered while this process's event loop was held by other work (a
 * large answer stored, a big document parsed) past the check's deadline has answered: the
 * check read the timer first and said 503, and a load balancer would take the replica out.
 */
describe.each(ENGINES)('the database check on the %s engine', (engine) => {
  let open: OpenTestDatabase;
  beforeAll(async () => {
    open = await openTestDatabase(engine);
  }, 120_000);
  afterAll(async () => {
    await open?.close();
  });

  it('says ok when the answer came while the event loop was held past the deadline', async () => {
    expect(await open.database.check()).toBe('ok'); // a connection is open and idle
    // Held once the check's SELECT 1 is on its way (its connection was handed out in this
    // turn; the query is sent before the next), for four times the check's deadline.
    open.database.db.$client.once('acquire', () => setImmediate(() => holdEventLoop(400)));
    expect(await open.database.check(100)).toBe('ok');
  });
});

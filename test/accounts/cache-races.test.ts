import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../../src/accounts/account-service.ts';
import { defaultLimits } from '../../src/accounts/limits.ts';
import { UsageLimits } from '../../src/accounts/usage-limits.ts';
import { parseConfig } from '../../src/config.ts';
import { AccountRepository } from '../../src/storage/account-repository.ts';
import { DocumentRepository } from '../../src/storage/document-repository.ts';
import { UsageRepository } from '../../src/storage/usage-repository.ts';
import { UserDataRepository } from '../../src/storage/user-data-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/**
 * A key's lookup or a user's limits read that is under way while this replica changes the key,
 * the account or its limits has read the database before the change: it may be answered with
 * what it read, but must not be cached, or the next request (within the cache's second) would
 * get the old limits, or a revoked or deleted key, back. The race is made deterministic by
 * holding one repository call's answer (read from the real database) until the change is done.
 * Both caches' clocks are frozen, so nothing cached ever expires here: whether a request read
 * the database again is never down to how long the machine took, and every read of the
 * database is counted.
 */

type Method = 'findKey' | 'limitsOf';

/**
 * The real repository, but the next call of a method armed with `hold` waits for `release`;
 * `calls` counts the calls of `findKey` and `limitsOf` (each one a read of the database).
 */
function holdable(real: AccountRepository) {
  const armed = new Map<Method, { read: () => void; gate: Promise<void> }>();
  const calls: Record<Method, number> = { findKey: 0, limitsOf: 0 };
  const wrapped = new Proxy(real, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const method = property as Method;
      const counted = method in calls;
      const hold = armed.get(method);
      if (!hold) {
        if (!counted) return value.bind(target);
        return (...args: unknown[]) => {
          calls[method]++;
          return value.apply(target, args);
        };
      }
      armed.delete(method);
      return async (...args: unknown[]) => {
        calls[method]++;
        const answer = await value.apply(target, args); // read now, from the database
        hold.read();
        await hold.gate;
        return answer;
      };
    },
  });
  return {
    repository: wrapped,
    calls,
    /** Arms `method`; `read` resolves once the held call has read, `release` lets it answer. */
    hold(method: Method) {
      let release = () => {};
      let read = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const done = new Promise<void>((resolve) => {
        read = resolve;
      });
      armed.set(method, { read, gate });
      return { read: done, release };
    },
  };
}

describe.each(ENGINES)('cached keys and limits during a change, on the %s engine', (engine) => {
  let opened: OpenTestDatabase | undefined;
  let held: ReturnType<typeof holdable>;
  let limits: UsageLimits;
  let accounts: AccountService;
  const defaults = defaultLimits(parseConfig({}));

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    const db = opened.database.db;
    held = holdable(new AccountRepository(db));
    // Wired as src/main.ts wires them.
    limits = new UsageLimits({
      usage: new UsageRepository(db),
      accounts: held.repository,
      defaults,
      applyToAdmin: false,
      defaultTimezone: 'UTC',
      elapsed: () => 0, // frozen: cached limits never expire
    });
    accounts = new AccountService({
      accounts: held.repository,
      userData: new UserDataRepository(db, new DocumentRepository(db)),
      defaults,
      logger: pino({ level: 'silent' }),
      onUserChanged: (userId) => limits.forget(userId),
      onLimitsRead: (userId, overrides) => limits.remember(userId, overrides),
      elapsed: () => 0, // frozen: cached keys never expire
    });
  }, 60_000);
  afterAll(() => opened?.close());

  it('does not cache a key looked up while it is revoked: the next request is refused', async () => {
    const { key, keyId } = await accounts.create('race-revoke');
    const lookup = held.hold('findKey');
    const during = accounts.authenticate(key);
    await lookup.read;
    await accounts.revokeKey(keyId);
    lookup.release();
    // The lookup under way read the key before it was revoked: it may let that one in.
    expect(await during).toMatchObject({ userId: 'race-revoke' });
    // The next reads the database again (the frozen cache would otherwise answer forever).
    const reads = held.calls.findKey;
    expect(await accounts.authenticate(key)).toBeUndefined();
    expect(held.calls.findKey).toBe(reads + 1);
  });

  it('does not cache a key looked up while its user is deleted: the next request is refused', async () => {
    const { key } = await accounts.create('race-delete');
    const lookup = held.hold('findKey');
    const during = accounts.authenticate(key);
    await lookup.read;
    await accounts.deleteUser('race-delete');
    lookup.release();
    expect(await during).toMatchObject({ userId: 'race-delete' });
    const reads = held.calls.findKey;
    expect(await accounts.authenticate(key)).toBeUndefined();
    expect(held.calls.findKey).toBe(reads + 1);
  });

  it('does not pass on the old limits read with a key while the limits change', async () => {
    const { key } = await accounts.create('race-key-limits');
    const lookup = held.hold('findKey');
    const during = accounts.authenticate(key);
    await lookup.read;
    await accounts.setLimits('race-key-limits', { chats_per_minute: 7 });
    lookup.release();
    expect(await during).toMatchObject({ userId: 'race-key-limits' });
    // The old overrides read with the key must not be remembered as the user's limits.
    const reads = held.calls.limitsOf;
    expect((await limits.limitsOf('race-key-limits')).chats_per_minute).toBe(7);
    expect(held.calls.limitsOf).toBe(reads + 1);
  });

  it('does not cache limits read while they change: the next request reads the new ones', async () => {
    await accounts.create('race-limits');
    const read = held.hold('limitsOf');
    const during = limits.limitsOf('race-limits');
    await read.read;
    await accounts.setLimits('race-limits', { chats_per_minute: 3, tokens_per_day: 1234 });
    read.release();
    // The read under way answers what it read before the change…
    expect(await during).toEqual(defaults);
    // …but the next reads the database again and has the new limits.
    const reads = held.calls.limitsOf;
    expect(await limits.limitsOf('race-limits')).toEqual({
      ...defaults,
      chats_per_minute: 3,
      tokens_per_day: 1234,
    });
    expect(held.calls.limitsOf).toBe(reads + 1);
  });

  it('still caches a lookup nothing changed during', async () => {
    const { key } = await accounts.create('race-none');
    const keyReads = held.calls.findKey;
    const limitReads = held.calls.limitsOf;
    expect(await accounts.authenticate(key)).toMatchObject({ userId: 'race-none' });
    expect(held.calls.findKey).toBe(keyReads + 1);
    // The limits came with the key's lookup: no read of their own.
    expect(await limits.limitsOf('race-none')).toEqual(defaults);
    expect(held.calls.limitsOf).toBe(limitReads);
    // Changed behind the service's back (as another replica would): the caches still answer,
    // without reading the database.
    await opened?.database.db.$client.query(
      `UPDATE accounts SET limits = '{"chats_per_minute": 9}' WHERE user_id = 'race-none'`,
    );
    expect(await accounts.authenticate(key)).toMatchObject({ userId: 'race-none' });
    expect(await limits.limitsOf('race-none')).toEqual(defaults);
    expect(held.calls.findKey).toBe(keyReads + 1);
    expect(held.calls.limitsOf).toBe(limitReads);
  });
});

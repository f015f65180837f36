import { describe, expect, it } from 'vitest';
import { FailureThrottle } from '../../src/accounts/failure-throttle.ts';

describe('FailureThrottle', () => {
  const make = () => {
    let now = 1_000_000;
    const throttle = new FailureThrottle({ maxFailures: 3, windowMs: 60_000, now: () => now });
    return { throttle, advance: (ms: number) => (now += ms) };
  };

  it('lets an address try again once its oldest failure is a minute old', () => {
    const { throttle, advance } = make();
    throttle.failed('10.0.0.1');
    advance(20_000);
    throttle.failed('10.0.0.1');
    throttle.failed('10.0.0.1');
    expect(throttle.retryAfterSeconds('10.0.0.1')).toBe(40);
    expect(throttle.retryAfterSeconds('10.0.0.2')).toBeUndefined(); // another address
    advance(40_000);
    expect(throttle.retryAfterSeconds('10.0.0.1')).toBeUndefined();
    throttle.failed('10.0.0.1'); // two in the window again, then a third
    expect(throttle.retryAfterSeconds('10.0.0.1')).toBe(20);
  });

  it('answers the failures in the window, never more than the limit', () => {
    const { throttle, advance } = make();
    expect(throttle.failed('10.0.0.1')).toBe(1);
    expect(throttle.failed('10.0.0.1')).toBe(2);
    expect(throttle.failed('10.0.0.1')).toBe(3);
    expect(throttle.failed('10.0.0.1')).toBe(3);
    advance(60_000);
    expect(throttle.failed('10.0.0.1')).toBe(1);
  });

  it('remembers a bounded number of addresses, forgetting the longest quiet first', () => {
    const throttle = new FailureThrottle({ maxFailures: 1, windowMs: 60_000, maxAddresses: 10 });
    const first = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
    for (const address of first) throttle.failed(address);
    throttle.failed('a'); // a failed again: now the most recent
    throttle.failed('k'); // one address too many: trimmed to 90 %, the quietest first
    for (const address of ['b', 'c']) expect(throttle.retryAfterSeconds(address)).toBeUndefined();
    for (const address of ['a', 'd', 'j', 'k']) {
      expect(throttle.retryAfterSeconds(address), address).toBeGreaterThan(0);
    }
  });
});

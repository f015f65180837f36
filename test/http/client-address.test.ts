import { describe, expect, it } from 'vitest';
import { throttledAs } from '../../src/http/client-address.ts';

/** What the throttles count a client as, for every form a proxy may forward its address in. */
describe('the address a throttle counts', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['203.0.113.7:51234', '203.0.113.7'], // a proxy that appends the port
    ['::ffff:203.0.113.7', '203.0.113.7'], // IPv4 mapped into IPv6
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'], // the same /64
    ['[2001:db8:1:2::9]:443', '2001:db8:1:2::/64'],
    ['[2001:db8:1:3::9]', '2001:db8:1:3::/64'], // another /64
    ['fe80::1%eth0', 'fe80:0:0:0::/64'], // a zone id
  ])('%s as %s', (forwarded, counted) => {
    expect(throttledAs(forwarded)).toBe(counted);
  });

  it.each([[''], ['garbage'], ['unknown'], ['1.2.3.4.5'], ['x'.repeat(4000)]])(
    'anything else (%s) as one shared key, so it cannot start fresh counts or fill the table',
    (forwarded) => {
      expect(throttledAs(forwarded)).toBe('invalid');
    },
  );
});

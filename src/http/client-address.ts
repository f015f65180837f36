import ipaddr from 'ipaddr.js';

/**
 * Who a throttle counts: the client's address, except that an IPv6 client is its /64. One
 * customer of an ordinary provider holds a whole /64 (2^64 addresses), so counting single
 * addresses would give every guess its own fresh count, and fill the throttle's table so it
 * drops the ones that do wait. An IPv4 address mapped into IPv6 is its IPv4 address.
 */
export function throttledAs(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  return `${address.toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}

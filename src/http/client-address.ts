import ipaddr from 'ipaddr.js';

/**
 * Who a throttle counts: the client's address, except that an IPv6 client is its /64. One
 * customer of an ordinary provider holds a whole /64 (2^64 addresses), so counting single
 * addresses would give every guess its own fresh count, and fill the throttle's table so it
 * drops the ones that do wait. An IPv4 address mapped into IPv6 is its IPv4 address; a port
 * some proxies append (`1.2.3.4:80`, `[2001:db8::1]:443`) is not part of it, or every
 * connection would start a fresh count. Anything else a proxy forwarded is one shared key.
 */
export function throttledAs(ip: string): string {
  const bare = withoutPort(ip);
  if (!ipaddr.isValid(bare)) return 'invalid';
  const address = ipaddr.process(bare);
  if (address.kind() === 'ipv4') return address.toString();
  return `${address.toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}

const BRACKETED = /^\[([^\]]+)\](?::\d+)?$/;
const IPV4_WITH_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/;

function withoutPort(ip: string): string {
  return BRACKETED.exec(ip)?.[1] ?? IPV4_WITH_PORT.exec(ip)?.[1] ?? ip;
}

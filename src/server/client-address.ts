/**
 * The client's address behind a load balancer: `X-Forwarded-For` is read only on a connection
 * from an address the operator named as a trusted proxy (`--trusted-proxies`, docs/server.md),
 * never from anyone else, who could write any address there. Each trusted hop appends the address
 * it saw, so the list is read from the right: the first address that is not a trusted proxy is
 * the client. {@link PerAddressCount} keeps what `limits.connectionsPerAddress` bounds.
 */
import { BlockList, isIP } from 'node:net';
import { VoicewireError } from '../util/errors.js';

/** An IPv4 address as a dual-stack socket reports it (`::ffff:10.0.0.1`) is the IPv4 address. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

function family(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 4 ? 'ipv4' : 'ipv6';
}

/**
 * Checks one entry of a trusted-proxy list: an address (`10.0.0.5`, `::1`) or a CIDR block
 * (`10.0.0.0/8`, `fd00::/8`). Returns it as [address, prefix length].
 * @throws VoicewireError `INVALID_ARGUMENT` naming the entry.
 */
export function parseProxyEntry(entry: string): [string, number] {
  const [address = '', prefixText, ...rest] = entry.trim().split('/');
  const kind = isIP(address);
  const max = kind === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (kind === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= max)) {
    throw new VoicewireError('INVALID_ARGUMENT', `trusted proxy ${JSON.stringify(entry)} is not an IP address or CIDR block (10.0.0.5, 10.0.0.0/8, fd00::/8)`);
  }
  return [address, prefix];
}

/** The proxies whose `X-Forwarded-For` is honoured (an empty list: nobody's). */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly size: number;

  /** @param entries addresses and CIDR blocks, each checked by {@link parseProxyEntry}. */
  constructor(entries: readonly string[]) {
    for (const e of entries) {
      const [address, prefix] = parseProxyEntry(e);
      this.list.addSubnet(address, prefix, family(address));
    }
    this.size = entries.length;
  }

  /** Is `address` (a socket's remote address) a trusted proxy? */
  trusts(address: string): boolean {
    if (this.size === 0) return false;
    const a = plain(address);
    return isIP(a) !== 0 && this.list.check(a, family(a));
  }

  /**
   * The client's address of a request that came on a socket from `peer`: `peer` itself unless it
   * is trusted; then the rightmost `X-Forwarded-For` entry that is not a trusted proxy (all
   * trusted: the leftmost). An entry that is not an address ends the walk at the last address
   * known good: a trusted proxy wrote nothing past it.
   */
  clientAddress(peer: string, forwardedFor: string | string[] | undefined): string {
    let client = plain(peer);
    if (!this.trusts(client) || forwardedFor === undefined) return client;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i]!.trim());
      if (isIP(hop) === 0) return client;
      client = hop;
      if (!this.trusts(hop)) return client;
    }
    return client;
  }
}

/**
 * Open connections (or forwarded requests) per client address, at most `limit` each
 * (`limits.connectionsPerAddress`): the map holds only addresses with something open.
 */
export class PerAddressCount {
  private readonly open = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Counts one more for `address`; false (nothing counted) past the limit. */
  take(address: string): boolean {
    const count = (this.open.get(address) ?? 0) + 1;
    if (count > this.limit) return false;
    this.open.set(address, count);
    return true;
  }

  /** One of `address`'s ended. */
  release(address: string): void {
    const left = (this.open.get(address) ?? 1) - 1;
    if (left <= 0) this.open.delete(address);
    else this.open.set(address, left);
  }
}

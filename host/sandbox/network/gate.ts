// The one way to a destination, shared by the HTTP and SOCKS front doors: decide on the name,
// resolve it on the host, decide on every address, record the outcome, and connect only to the
// addresses that were checked (the lookup handed to net.connect returns them; nothing resolves twice).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIPv6, type LookupFunction } from 'node:net';
import { parseAddress } from './ip.ts';
import { decide, normalizeHost, type CompiledRules } from './rules.ts';

export type Gate = (dest: { host: string; port: number }) => Promise<Passage>;
export type Passage =
  | { kind: 'allowed'; host: string; port: number; lookup: LookupFunction }
  | { kind: 'denied'; host: string; port: number; rule: string; message: string }
  | { kind: 'unresolved'; host: string; port: number; message: string; cause: unknown };
export type Resolve = (host: string) => Promise<string[]>;
export type Recorder = (outcome: 'allowed' | 'denied', host: string, port: number) => void;

/** dns.lookup with every address, in the resolver's order. */
export function systemResolve(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, order: 'verbatim' }, (error, addresses: LookupAddress[]) => (error ? reject(error) : resolve(addresses.map((entry) => entry.address))));
  });
}

/** `host:port`, with IPv6 in brackets. */
export function hostPort(host: string, port: number): string {
  return `${isIPv6(host) ? `[${host}]` : host}:${port}`;
}

/** The text a denied program sees, in the HTTP body, the response header and the proxy's report. */
export function denialMessage(host: string, port: number, rule: string): string {
  return `blocked by ptc network policy: ${hostPort(host, port)} is not allowed (${rule})`;
}

/**
 * dns.lookup runs on libuv's thread pool (4 threads), which the host's file system calls share;
 * a program asking for many slow names at once must not take all of them.
 */
export const MAX_CONCURRENT_LOOKUPS = 2;

/** At most `limit` calls of `resolve` at once; the others wait their turn in order. */
function limited(resolve: Resolve, limit: number): Resolve {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (host) => {
    if (active < limit) active++;
    else await new Promise<void>((turn) => waiting.push(turn));
    try {
      return await resolve(host);
    } finally {
      // Hand the slot straight to the next waiter, so a newcomer cannot jump the queue.
      const next = waiting.shift();
      if (next === undefined) active--;
      else next();
    }
  };
}

export function createGate(rules: CompiledRules, unlimitedResolve: Resolve, record: Recorder): Gate {
  const resolve = limited(unlimitedResolve, MAX_CONCURRENT_LOOKUPS);
  return async (dest) => {
    const host = normalizeHost(dest.host) ?? dest.host;
    const { port } = dest;
    const deny = (rule: string): Passage => {
      record('denied', host, port);
      return { kind: 'denied', host, port, rule, message: denialMessage(host, port, rule) };
    };
    const early = decide(rules, { host, port }, []);
    if (!early.allowed) return deny(early.rule);
    let addresses: string[];
    if (parseAddress(host) !== undefined) addresses = [host];
    else {
      try {
        addresses = await resolve(host);
      } catch (cause) {
        record('allowed', host, port);
        const code = (cause as { code?: unknown }).code;
        return { kind: 'unresolved', host, port, cause, message: `ptc network proxy: cannot resolve ${host}${typeof code === 'string' ? ` (${code})` : ''}` };
      }
    }
    const final = decide(rules, { host, port }, addresses);
    if (!final.allowed) return deny(final.rule);
    if (addresses.length === 0) return deny('default: the name resolved to no usable address');
    record('allowed', host, port);
    return { kind: 'allowed', host, port, lookup: checkedLookup(addresses) };
  };
}

/** A lookup for net.connect that answers with the checked addresses and nothing else. */
function checkedLookup(addresses: string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: isIPv6(address) ? 6 : 4 }));
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, entries);
    else callback(null, entries[0]!.address, entries[0]!.family);
  }) as LookupFunction;
}

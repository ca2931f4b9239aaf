// IP literals as numbers, so rules and destinations compare by value: one spelling per address
// (`::ffff:127.0.0.1` is 127.0.0.1, `0:0::1` is `::1`) and CIDR containment by arithmetic.
import { isIPv4, isIPv6 } from 'node:net';

export type Address = { family: 4 | 6; value: bigint };
export type Range = { family: 4 | 6; base: bigint; prefix: number };

const BITS = { 4: 32, 6: 128 } as const;

/** The address a literal denotes (IPv4-mapped IPv6 becomes IPv4), or undefined for anything else. */
export function parseAddress(text: string): Address | undefined {
  if (isIPv4(text)) return { family: 4, value: text.split('.').reduce((sum, part) => (sum << 8n) | BigInt(Number(part)), 0n) };
  if (!isIPv6(text) || text.includes('%')) return undefined;
  const value = ipv6Value(text);
  if (value >> 32n === 0xffffn) return { family: 4, value: value & 0xffffffffn };
  return { family: 6, value };
}

function ipv6Value(text: string): bigint {
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) is two more hex groups (`::ffff:102:304`).
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail !== null) {
    const v4 = parseAddress(tail[1]!)!.value;
    text = `${text.slice(0, tail.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const parse = (part: string): bigint[] => (part === '' ? [] : part.split(':').map((group) => BigInt(`0x${group}`)));
  const [head, rest] = text.split('::') as [string, string | undefined];
  const front = parse(head);
  const back = rest === undefined ? [] : parse(rest);
  const groups = rest === undefined ? front : [...front, ...new Array<bigint>(8 - front.length - back.length).fill(0n), ...back];
  return groups.reduce((sum, group) => (sum << 16n) | group, 0n);
}

/** The canonical text of an address: dotted IPv4, or compressed lower-case IPv6. */
export function formatAddress(address: Address): string {
  if (address.family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join('.');
  const groups = [...Array(8).keys()].map((i) => ((address.value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // Compress the longest run of two or more zero groups (RFC 5952).
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at === -1) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.length).join(':')}`;
}

/** A CIDR such as `10.0.0.0/8` or `fe80::/10` (host bits must be zero), or undefined if malformed. */
export function parseRange(text: string): Range | undefined | 'host bits set' {
  const slash = text.indexOf('/');
  const address = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (address === undefined) return undefined;
  const bits = BITS[address.family];
  // A mapped IPv6 CIDR is counted in IPv6 bits: `::ffff:127.0.0.0/104` is 127.0.0.0/8.
  const mappedShift = address.family === 4 && isIPv6(text.slice(0, slash === -1 ? undefined : slash)) ? 96 : 0;
  const prefixText = slash === -1 ? String(bits + mappedShift) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText) - mappedShift;
  if (prefix < 0 || prefix > bits) return undefined;
  const range = { family: address.family, base: address.value, prefix };
  if (address.value !== (address.value & mask(range))) return 'host bits set';
  return range;
}

function mask(range: { family: 4 | 6; prefix: number }): bigint {
  const bits = BigInt(BITS[range.family]);
  return ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(range.prefix))) - 1n);
}

/** True when the range holds the address. */
export function inRange(range: Range, address: Address): boolean {
  return range.family === address.family && (address.value & mask(range)) === range.base;
}

/** True when every address of `inner` lies in `outer`. */
export function rangeWithin(inner: Range, outer: Range): boolean {
  return inner.family === outer.family && inner.prefix >= outer.prefix && (inner.base & mask(outer)) === outer.base;
}

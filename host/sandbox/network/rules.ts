// Network allowlist rules: parsed once (bad rules throw a TypeError naming the rule), then
// decide() answers for one destination and the addresses its name resolved to.
//
// A rule allows exactly what it names. A name rule (`api.example.com`, `*.example.com`) matches
// destinations written as names; an address rule (`10.1.2.3`, `[::1]:8080`, `192.168.0.0/16`)
// matches destinations written as addresses. So `localhost:8080` does not allow `127.0.0.1:8080`,
// nor the reverse. Every address a name resolves to is checked too: deny rules apply to it, and a
// loopback, link-local, metadata or unspecified address is refused unless a rule names it.
import { isIPv6 } from 'node:net';
import { formatAddress, inRange, parseAddress, parseRange, rangeWithin, type Address, type Range } from './ip.ts';
import { specialClasses, type SpecialClass } from './special.ts';

export type NetworkRules = { allow: string[]; deny?: string[] };

type Rule =
  | { text: string; kind: 'name'; name: string; port: number | undefined }
  | { text: string; kind: 'wildcard'; suffix: string; port: number | undefined }
  | { text: string; kind: 'range'; range: Range; port: number | undefined };

export type CompiledRules = { readonly allow: readonly Rule[]; readonly deny: readonly Rule[] };
export type Decision = { allowed: boolean; rule: string };

export const NOT_IN_ALLOWLIST = 'default: not in allowlist';
export const INVALID_HOST = 'default: not a valid host name or address';
export const NO_ADDRESS = 'default: the name resolved to no usable address';

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** Checks and compiles rules; throws a TypeError that quotes the bad rule and says why. */
export function parseNetworkRules(rules: NetworkRules): CompiledRules {
  if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) {
    throw new TypeError(`ptc network rules must be an object { allow: string[], deny?: string[] }, got ${describe(rules)}`);
  }
  for (const key of Object.keys(rules)) {
    if (key !== 'allow' && key !== 'deny') throw new TypeError(`ptc network rules: unknown field "${key}" (value ${describe((rules as Record<string, unknown>)[key])})`);
  }
  const compiled: CompiledRules = Object.freeze({ allow: parseList(rules.allow, 'allow'), deny: rules.deny === undefined ? [] : parseList(rules.deny, 'deny') });
  COMPILED.add(compiled);
  return compiled;
}

const COMPILED = new WeakSet<object>();

/** True for what parseNetworkRules returned (raw `{ allow }` lists have not been checked). */
export function isCompiledRules(value: unknown): value is CompiledRules {
  return typeof value === 'object' && value !== null && COMPILED.has(value);
}

function parseList(list: unknown, field: 'allow' | 'deny'): Rule[] {
  if (!Array.isArray(list)) throw new TypeError(`ptc network rules: ${field} must be an array of rules, got ${describe(list)}`);
  return list.map((text: unknown, index) => {
    if (typeof text !== 'string') throw new TypeError(`ptc network rules: ${field}[${index}] must be a string, got ${describe(text)}`);
    try {
      return parseRule(text);
    } catch (error) {
      throw new TypeError(`ptc network rules: ${field}[${index}] '${text}' ${(error as Error).message}`, { cause: error });
    }
  });
}

function parseRule(text: string): Rule {
  if (text === '') throw new Error('is empty');
  if (/\s/.test(text)) throw new Error('contains white space');
  if (text.includes('://')) throw new Error('is a URL; write the host and an optional port, as in api.example.com:443');
  const lower = text.toLowerCase();
  let host: string;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(lower);
  if (bracketed !== null) {
    [, host, portText] = bracketed as unknown as [string, string, string | undefined];
    if (!isIPv6(host.split('/')[0]!)) throw new Error('is not an IPv6 address in brackets');
  } else if (lower.startsWith('[')) {
    throw new Error('has an unclosed "[" (write IPv6 as [::1]:8080)');
  } else if (lower.split(':').length > 2) {
    // Bare IPv6, which cannot carry a port: `::1`, `fe80::/10`.
    host = lower;
  } else {
    const colon = lower.lastIndexOf(':');
    host = colon === -1 ? lower : lower.slice(0, colon);
    portText = colon === -1 ? undefined : lower.slice(colon + 1);
  }
  const port = portText === undefined ? undefined : parsePort(portText);
  if (host.includes('/') || parseAddress(host) !== undefined) {
    const range = parseRange(host);
    if (range === 'host bits set') throw new Error(`has address bits set past the prefix (the network is ${suggestNetwork(host)})`);
    if (range === undefined) throw new Error('is not a valid IP address or CIDR');
    return { text, kind: 'range', range, port };
  }
  if (host === '*') throw new Error('allows every host; use policy.network: true for an open network');
  if (host.startsWith('*.')) return { text, kind: 'wildcard', suffix: parseName(host.slice(2)), port };
  if (host.includes('*')) throw new Error('may use "*" only as a whole first label, as in *.example.com');
  return { text, kind: 'name', name: parseName(host), port };
}

function parsePort(text: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new Error(`has port '${text}', which is not a number from 1 to 65535`);
  return port;
}

function parseName(host: string): string {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name === '' || name.length > 253 || !name.split('.').every((label) => LABEL.test(label))) {
    throw new Error('is not a valid host name (letters, digits, "-" and "_" in dot-separated labels)');
  }
  if (/^\d+$/.test(name.split('.').at(-1)!)) throw new Error('is neither a host name nor a dotted IPv4 address');
  return name;
}

function suggestNetwork(host: string): string {
  const [address, prefix] = host.split('/') as [string, string];
  const parsed = parseAddress(address)!;
  const bits = parsed.family === 4 ? 32n : 128n;
  const maskBits = ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(Number(prefix)))) - 1n);
  return `${formatAddress({ family: parsed.family, value: parsed.value & maskBits })}/${prefix}`;
}

/**
 * The canonical form of a destination host as a program wrote it: a lower-case name without the
 * trailing dot, or an address in its canonical spelling (brackets removed, IPv4-mapped IPv6 as
 * IPv4); undefined when it is neither.
 */
export function normalizeHost(host: string): string | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const address = parseAddress(bare);
  if (address !== undefined) return formatAddress(address);
  try {
    return parseName(bare.toLowerCase());
  } catch {
    return undefined;
  }
}

/**
 * Whether `dest` may be reached, and the rule text that decided. `addresses` are what the name
 * resolved to, every one checked; pass [] before resolving to decide on the name alone (so a
 * denied name is never looked up). An address destination is its own address.
 */
export function decide(rules: CompiledRules, dest: { host: string; port: number }, addresses: string[]): Decision {
  const host = normalizeHost(dest.host);
  if (host === undefined) return { allowed: false, rule: INVALID_HOST };
  const literal = parseAddress(host);
  const resolved = literal !== undefined ? [literal] : addresses.map(parseAddress);
  if (resolved.some((address) => address === undefined)) return { allowed: false, rule: NO_ADDRESS };
  const checked = resolved as Address[];
  const at = { host, port: dest.port, literal };

  const denyRule = rules.deny.find((rule) => matchesDestination(rule, at) || (rule.kind === 'range' && portMatches(rule, at.port) && checked.some((address) => inRange(rule.range, address))));
  if (denyRule !== undefined) return { allowed: false, rule: denyRule.text };

  const allowRule = rules.allow.find((rule) => matchesDestination(rule, at));
  // A special name (localhost, the metadata names) is named only by a rule that lies inside it.
  const nameClass = literal === undefined ? specialClasses().find((special) => special.names.some((pattern) => nameMatches(pattern, host))) : undefined;
  const exempt = nameClass !== undefined && allowRule !== undefined && ruleInsideNames(allowRule, nameClass) ? nameClass : undefined;
  if (nameClass !== undefined && exempt === undefined) return { allowed: false, rule: nameClass.reason };
  for (const address of checked) {
    const special = specialClasses().find((candidate) => candidate.ranges.some((range) => inRange(range, address)));
    if (special === undefined || special === exempt) continue;
    if (!rules.allow.some((rule) => namesSpecialAddress(rule, special, address, at.port))) return { allowed: false, rule: special.reason };
  }
  if (allowRule === undefined) return { allowed: false, rule: NOT_IN_ALLOWLIST };
  return { allowed: true, rule: allowRule.text };
}

function portMatches(rule: Rule, port: number): boolean {
  return rule.port === undefined || rule.port === port;
}

function nameMatches(pattern: string, name: string): boolean {
  return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern;
}

/** `*.example.com` matches names under example.com, not example.com itself. */
function matchesDestination(rule: Rule, at: { host: string; port: number; literal: Address | undefined }): boolean {
  if (!portMatches(rule, at.port)) return false;
  if (rule.kind === 'range') return at.literal !== undefined && inRange(rule.range, at.literal);
  if (at.literal !== undefined) return false;
  return rule.kind === 'name' ? rule.name === at.host : at.host.endsWith(`.${rule.suffix}`);
}

function ruleInsideNames(rule: Rule, special: SpecialClass): boolean {
  if (rule.kind === 'name') return special.names.some((pattern) => nameMatches(pattern, rule.name));
  if (rule.kind === 'wildcard') return special.names.some((pattern) => nameMatches(pattern, rule.suffix));
  return false;
}

/** An address rule names a special address only when it holds it and lies wholly in that class: 0.0.0.0/0 names nothing. */
function namesSpecialAddress(rule: Rule, special: SpecialClass, address: Address, port: number): boolean {
  return rule.kind === 'range' && portMatches(rule, port) && inRange(rule.range, address) && special.ranges.some((range) => rangeWithin(rule.range, range));
}

/** A value quoted for an error message. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === undefined || value === null || typeof value !== 'object') return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

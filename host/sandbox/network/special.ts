// Addresses a program must never reach by accident: the host's own services (loopback, and the
// unspecified address, which connects to them), and link-local, where clouds serve instance
// metadata and credentials. Each is denied unless a rule names it (see rules.ts).
import { parseRange, type Range } from './ip.ts';

export type SpecialClass = { reason: string; ranges: Range[]; names: string[] };

function ranges(...cidrs: string[]): Range[] {
  return cidrs.map((cidr) => parseRange(cidr) as Range);
}

let classes: SpecialClass[] | undefined;

/** The special classes, parsed on first use: node:net's IPv6 check compiles a large pattern the first
 * time it runs (5 to 10 ms here), which a host whose runs name no network rule would otherwise pay at start. */
export function specialClasses(): SpecialClass[] {
  classes ??= parseClasses();
  return classes;
}

const parseClasses = (): SpecialClass[] => [
  {
    reason: 'default: loopback addresses are denied unless named',
    ranges: ranges('127.0.0.0/8', '::1/128'),
    // RFC 6761: `localhost` and every name under it are loopback.
    names: ['localhost', '*.localhost'],
  },
  {
    reason: 'default: link-local and metadata addresses are denied unless named',
    // 169.254.169.254 (AWS, GCP, Azure, OpenStack) and fd00:ec2::254 (AWS IPv6) sit in or next to
    // link-local; 100.100.100.200 is Alibaba Cloud's metadata service.
    ranges: ranges('169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128', '100.100.100.200/32'),
    names: ['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal'],
  },
  {
    reason: 'default: unspecified addresses are denied unless named',
    // Connecting to 0.0.0.0 (or any of 0.0.0.0/8 on Linux) or :: reaches the host's own listeners.
    ranges: ranges('0.0.0.0/8', '::/128'),
    names: [],
  },
];

// Network allowlist rules: what each rule form allows (as a table of destination -> decision),
// the addresses denied unless named, and the TypeError for each kind of bad rule.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decide, parseNetworkRules, type NetworkRules } from '../../../../../host/sandbox/network/index.ts';
import { thrown } from '../../../../helpers/assert.ts';

const LOOPBACK = 'default: loopback addresses are denied unless named';
const LINK_LOCAL = 'default: link-local and metadata addresses are denied unless named';
const UNSPECIFIED = 'default: unspecified addresses are denied unless named';
const NOT_LISTED = 'default: not in allowlist';

// [rules, destination "host:port" (host may be bracketed), resolved addresses, expected: the deciding rule, prefixed by "allow " or "deny "]
const DECISIONS: Array<[NetworkRules, string, string[], string]> = [
  // names: case-insensitive, trailing dot on either side, any port unless one is given
  [{ allow: ['api.example.com'] }, 'api.example.com:443', ['93.184.215.14'], 'allow api.example.com'],
  [{ allow: ['API.Example.COM.'] }, 'api.EXAMPLE.com.:80', ['93.184.215.14'], 'allow API.Example.COM.'],
  [{ allow: ['api.example.com:443'] }, 'api.example.com:443', ['93.184.215.14'], 'allow api.example.com:443'],
  [{ allow: ['api.example.com:443'] }, 'api.example.com:80', ['93.184.215.14'], `deny ${NOT_LISTED}`],
  [{ allow: ['api.example.com'] }, 'other.example.com:443', ['93.184.215.14'], `deny ${NOT_LISTED}`],
  // a name rule does not allow the name's address written as an address
  [{ allow: ['api.example.com'] }, '93.184.215.14:443', [], `deny ${NOT_LISTED}`],
  // wildcards: names under the suffix, at any depth, not the suffix itself
  [{ allow: ['*.example.com'] }, 'a.example.com:443', ['93.184.215.14'], 'allow *.example.com'],
  [{ allow: ['*.example.com'] }, 'a.b.example.com:443', ['93.184.215.14'], 'allow *.example.com'],
  [{ allow: ['*.example.com'] }, 'example.com:443', ['93.184.215.14'], `deny ${NOT_LISTED}`],
  [{ allow: ['*.example.com'] }, 'badexample.com:443', ['93.184.215.14'], `deny ${NOT_LISTED}`],
  [{ allow: ['*.cdn.example.com:443'] }, 'x.cdn.example.com:80', ['93.184.215.14'], `deny ${NOT_LISTED}`],
  // addresses and CIDRs, IPv6 in brackets when a port follows, one spelling per address
  [{ allow: ['10.1.2.3'] }, '10.1.2.3:8000', [], 'allow 10.1.2.3'],
  [{ allow: ['10.1.2.3'] }, '10.1.2.4:8000', [], `deny ${NOT_LISTED}`],
  [{ allow: ['192.168.0.0/16:5432'] }, '192.168.44.5:5432', [], 'allow 192.168.0.0/16:5432'],
  [{ allow: ['192.168.0.0/16:5432'] }, '192.168.44.5:5433', [], `deny ${NOT_LISTED}`],
  [{ allow: ['192.168.0.0/16:5432'] }, '192.169.0.1:5432', [], `deny ${NOT_LISTED}`],
  [{ allow: ['192.168.0.0/16'] }, '[::ffff:192.168.1.1]:80', [], 'allow 192.168.0.0/16'],
  [{ allow: ['2001:db8::/32'] }, '[2001:db8:0:0::7]:443', [], 'allow 2001:db8::/32'],
  [{ allow: ['[2001:db8::7]:443'] }, '[2001:DB8::7]:443', [], 'allow [2001:db8::7]:443'],
  [{ allow: ['[2001:db8::7]:443'] }, '[2001:db8::7]:444', [], `deny ${NOT_LISTED}`],
  // an address rule does not allow names: it never sees what a name might resolve to later
  [{ allow: ['10.1.2.3'] }, 'internal.example:80', ['10.1.2.3'], `deny ${NOT_LISTED}`],
  // deny beats allow, for names, addresses, and every address a name resolves to
  [{ allow: ['*.example.com'], deny: ['secret.example.com'] }, 'secret.example.com:443', ['93.184.215.14'], 'deny secret.example.com'],
  [{ allow: ['*.example.com'], deny: ['10.0.0.0/8'] }, 'inside.example.com:443', ['93.184.215.14', '10.9.9.9'], 'deny 10.0.0.0/8'],
  [{ allow: ['10.0.0.0/8'], deny: ['10.0.0.0/8:22'] }, '10.1.1.1:22', [], 'deny 10.0.0.0/8:22'],
  [{ allow: ['10.0.0.0/8'], deny: ['10.0.0.0/8:22'] }, '10.1.1.1:23', [], 'allow 10.0.0.0/8'],
  // localhost against 127.0.0.1: each allows only itself
  [{ allow: ['localhost:8080'] }, 'localhost:8080', ['::1', '127.0.0.1'], 'allow localhost:8080'],
  [{ allow: ['localhost:8080'] }, '127.0.0.1:8080', [], `deny ${LOOPBACK}`],
  [{ allow: ['localhost:8080'] }, 'localhost:8081', ['127.0.0.1'], `deny ${LOOPBACK}`],
  [{ allow: ['127.0.0.1:8080'] }, '127.0.0.1:8080', [], 'allow 127.0.0.1:8080'],
  [{ allow: ['127.0.0.1:8080'] }, 'localhost:8080', ['127.0.0.1'], `deny ${LOOPBACK}`],
  [{ allow: ['127.0.0.1:8080'] }, '127.0.0.2:8080', [], `deny ${LOOPBACK}`],
  [{ allow: ['127.0.0.0/8'] }, '127.0.0.2:8080', [], 'allow 127.0.0.0/8'],
  [{ allow: ['[::1]:8080'] }, '[::1]:8080', [], 'allow [::1]:8080'],
  [{ allow: ['*.localhost'] }, 'app.localhost:3000', ['127.0.0.1'], 'allow *.localhost'],
  // loopback, link-local, metadata and unspecified addresses stay out unless named: a broad rule
  // or a public name that resolves to one (DNS rebinding) does not name them
  [{ allow: ['0.0.0.0/0'] }, '127.0.0.1:80', [], `deny ${LOOPBACK}`],
  [{ allow: ['0.0.0.0/0'] }, '8.8.8.8:53', [], 'allow 0.0.0.0/0'],
  [{ allow: ['::/0'] }, '[::1]:80', [], `deny ${LOOPBACK}`],
  [{ allow: ['*.example.com'] }, 'rebind.example.com:80', ['127.0.0.1'], `deny ${LOOPBACK}`],
  [{ allow: ['rebind.example.com'] }, 'rebind.example.com:80', ['93.184.215.14', '::ffff:127.0.0.1'], `deny ${LOOPBACK}`],
  [{ allow: ['rebind.example.com'] }, 'rebind.example.com:80', ['169.254.169.254'], `deny ${LINK_LOCAL}`],
  [{ allow: ['rebind.example.com', '127.0.0.1:80'] }, 'rebind.example.com:80', ['127.0.0.1'], 'allow rebind.example.com'],
  [{ allow: ['10.0.0.0/8'] }, '169.254.169.254:80', [], `deny ${LINK_LOCAL}`],
  [{ allow: ['169.254.169.254:80'] }, '169.254.169.254:80', [], 'allow 169.254.169.254:80'],
  [{ allow: ['api.example.com'] }, '[fe80::1]:80', [], `deny ${LINK_LOCAL}`],
  [{ allow: ['api.example.com'] }, '[fd00:ec2::254]:80', [], `deny ${LINK_LOCAL}`],
  [{ allow: ['api.example.com'] }, '[::ffff:169.254.169.254]:80', [], `deny ${LINK_LOCAL}`],
  [{ allow: ['api.example.com'] }, '100.100.100.200:80', [], `deny ${LINK_LOCAL}`],
  [{ allow: ['*.google.internal'] }, 'metadata.google.internal:80', ['169.254.169.254'], `deny ${LINK_LOCAL}`],
  [{ allow: ['metadata.google.internal'] }, 'metadata.google.internal:80', ['169.254.169.254'], 'allow metadata.google.internal'],
  [{ allow: ['0.0.0.0/0'] }, '0.0.0.0:80', [], `deny ${UNSPECIFIED}`],
  [{ allow: ['::/0'] }, '[::]:80', [], `deny ${UNSPECIFIED}`],
  [{ allow: ['*.example.com'] }, 'zero.example.com:80', ['0.0.0.0'], `deny ${UNSPECIFIED}`],
  // what is neither a name nor an address, and resolver answers that are not addresses
  [{ allow: ['api.example.com'] }, 'exa mple.com:80', [], 'deny default: not a valid host name or address'],
  [{ allow: ['api.example.com'] }, '2130706433:80', [], 'deny default: not a valid host name or address'],
  [{ allow: ['api.example.com'] }, 'api.example.com:80', ['not-an-address'], 'deny default: the name resolved to no usable address'],
  [{ allow: [] }, 'api.example.com:80', ['93.184.215.14'], `deny ${NOT_LISTED}`],
];

for (const [rules, destination, addresses, expected] of DECISIONS) {
  test(`${JSON.stringify(rules)} -> ${destination} ${addresses.join(',')}: ${expected}`, () => {
    const colon = destination.lastIndexOf(':');
    const dest = { host: destination.slice(0, colon), port: Number(destination.slice(colon + 1)) };
    const decision = decide(parseNetworkRules(rules), dest, addresses);
    assert.equal(`${decision.allowed ? 'allow' : 'deny'} ${decision.rule}`, expected);
  });
}

test('before resolution (no addresses) a name is decided on the name alone, so a denied name is never looked up', () => {
  const rules = parseNetworkRules({ allow: ['api.example.com'], deny: ['blocked.example.com'] });
  assert.equal(decide(rules, { host: 'api.example.com', port: 443 }, []), { allowed: true, rule: 'api.example.com' });
  assert.equal(decide(rules, { host: 'other.example.com', port: 443 }, []), { allowed: false, rule: NOT_LISTED });
  assert.equal(decide(rules, { host: 'blocked.example.com', port: 443 }, []), { allowed: false, rule: 'blocked.example.com' });
});

const BAD_RULES: Array<[string, unknown, string]> = [
  ['not an object', ['a.com'], `ptc network rules must be an object { allow: string[], deny?: string[] }, got ["a.com"]`],
  ['unknown field', { allow: [], block: ['a.com'] }, 'ptc network rules: unknown field "block" (value ["a.com"])'],
  ['allow missing', { deny: [] }, 'ptc network rules: allow must be an array of rules, got undefined'],
  ['deny not an array', { allow: [], deny: 'a.com' }, `ptc network rules: deny must be an array of rules, got 'a.com'`],
  ['rule not a string', { allow: ['a.com', 443] }, 'ptc network rules: allow[1] must be a string, got 443'],
  ['empty', { allow: [''] }, `ptc network rules: allow[0] '' is empty`],
  ['white space', { allow: ['a.com, b.com'] }, `ptc network rules: allow[0] 'a.com, b.com' contains white space`],
  ['everything', { allow: ['*'] }, `ptc network rules: allow[0] '*' allows every host; use policy.network: true for an open network`],
  ['everything on a port', { allow: ['*:443'] }, `ptc network rules: allow[0] '*:443' allows every host; use policy.network: true for an open network`],
  ['inner wildcard', { allow: ['api.*.com'] }, `ptc network rules: allow[0] 'api.*.com' may use "*" only as a whole first label, as in *.example.com`],
  ['partial wildcard', { allow: ['*api.com'] }, `ptc network rules: allow[0] '*api.com' may use "*" only as a whole first label, as in *.example.com`],
  ['port zero', { allow: ['a.com:0'] }, `ptc network rules: allow[0] 'a.com:0' has port '0', which is not a number from 1 to 65535`],
  ['port too big', { deny: ['a.com:70000'], allow: [] }, `ptc network rules: deny[0] 'a.com:70000' has port '70000', which is not a number from 1 to 65535`],
  ['port name', { allow: ['a.com:https'] }, `ptc network rules: allow[0] 'a.com:https' has port 'https', which is not a number from 1 to 65535`],
  ['empty port', { allow: ['a.com:'] }, `ptc network rules: allow[0] 'a.com:' has port '', which is not a number from 1 to 65535`],
  ['bad label', { allow: ['-a.com'] }, `ptc network rules: allow[0] '-a.com' is not a valid host name (letters, digits, "-" and "_" in dot-separated labels)`],
  ['URL, not a host', { allow: ['https://a.com'] }, `ptc network rules: allow[0] 'https://a.com' is a URL; write the host and an optional port, as in api.example.com:443`],
  ['short IPv4', { allow: ['10.1.2'] }, `ptc network rules: allow[0] '10.1.2' is neither a host name nor a dotted IPv4 address`],
  ['CIDR host bits', { allow: ['10.0.0.1/8'] }, `ptc network rules: allow[0] '10.0.0.1/8' has address bits set past the prefix (the network is 10.0.0.0/8)`],
  ['CIDR prefix too long', { allow: ['10.0.0.0/33'] }, `ptc network rules: allow[0] '10.0.0.0/33' is not a valid IP address or CIDR`],
  ['CIDR of a name', { allow: ['a.com/8'] }, `ptc network rules: allow[0] 'a.com/8' is not a valid IP address or CIDR`],
  ['IPv6 CIDR host bits', { allow: ['fe80::1/10'] }, `ptc network rules: allow[0] 'fe80::1/10' has address bits set past the prefix (the network is fe80::/10)`],
  ['unclosed bracket', { allow: ['[::1:8080'] }, `ptc network rules: allow[0] '[::1:8080' has an unclosed "[" (write IPv6 as [::1]:8080)`],
  ['name in brackets', { allow: ['[a.com]:80'] }, `ptc network rules: allow[0] '[a.com]:80' is not an IPv6 address in brackets`],
  ['IPv6 zone', { allow: ['fe80::1%eth0'] }, `ptc network rules: allow[0] 'fe80::1%eth0' is not a valid host name (letters, digits, "-" and "_" in dot-separated labels)`],
];

for (const [name, rules, message] of BAD_RULES) {
  test(`bad rules: ${name}`, () => {
    const error = thrown(() => parseNetworkRules(rules as NetworkRules));
    assert.instance(error, TypeError);
    assert.equal(error.message, message);
  });
}

test('a bad rule keeps the parse error as its cause', () => {
  const error = thrown(() => parseNetworkRules({ allow: ['a.com:0'] }));
  assert.instance(error.cause, Error);
  assert.equal((error.cause as Error).message, `has port '0', which is not a number from 1 to 65535`);
});

test.run();

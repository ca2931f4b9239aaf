// Network allowlists through real bubblewrap carriers: the program's fetch, https, raw sockets and
// curl go through the host's proxy (or nowhere), denials fail fast with the proxy's reason, and the
// result reports what was allowed and denied. Every server listens on the host's loopback, which
// the sandbox can reach only through the proxy. Through the ssh launch (and a command prefix, the
// last test) the proxy stays on the host and the relay carries the far sandbox's connections to it,
// so the same servers, rules, counts and messages hold; so through `podman exec -i` into a
// container without a network of its own (launch: podman), whose bubblewrap confines the carrier.
// launch: podman (test/run.ts runs this suite again through the container of test/helpers/podman.sh)
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, Runtime, RuntimeConfig, SandboxPolicy } from '../../host/index.ts';
import { createTestRuntime, launchUnderTest, repoRoot, reportLocation, runtimesPerTest, unavailablePrefix, withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

const fixtures = join(repoRoot, 'test/fixtures/network');
const workspace = realpathSync(mkdtempSync(join('/var/tmp', 'ptc-network-')));
// The sandbox's /tmp is private, and a checkout may sit under /tmp: the program and its curl read
// the test certificate from the workspace, which is bound in.
const certPath = join(workspace, 'cert.pem');
copyFileSync(join(fixtures, 'cert.pem'), certPath);

/** Whether the carrier's Node routes fetch and http/https through the proxy variables itself
 * (NODE_USE_ENV_PROXY, Node 24.5+). On an older Node (the machine's Node 20 for node-script) the
 * carrier gives fetch a dispatcher that tunnels every connection with CONNECT, and http/https
 * are not proxied. */
function carrierUsesEnvProxy(): boolean {
  const launch = launchUnderTest();
  const node = launch?.kind === 'node-script' ? launch.executable : launch?.kind === 'ssh' || launch?.kind === 'command' ? launch.node ?? 'node' : undefined;
  const version = node !== undefined ? execFileSync(node, ['--version'], { encoding: 'utf8' }).trim() : process.version;
  const [major = 0, minor = 0] = /^v(\d+)\.(\d+)/.exec(version)!.slice(1).map(Number);
  return major > 24 || (major === 24 && minor >= 5);
}
const envProxy = carrierUsesEnvProxy();
/** Plain-HTTP fetches are counted per request by the forward proxy, per kept-alive tunnel otherwise. */
const perRequest = (requests: number) => (envProxy ? requests : 1);
const hasCurl = existsSync('/usr/bin/curl');

function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

// 32 MB: more than the socket buffers on the way hold (a loopback TCP connection takes up to
// 10 MB), so a slow reader makes the forwarder and the proxy wait for it.
const BIG = Buffer.alloc(32 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789');
const allowedServer = createHttpServer((req, res) => res.end(req.url === '/big' ? BIG : `allowed ${req.method} ${req.url}`));
const deniedServer = createHttpServer((_req, res) => res.end('the denied server answered'));
const tlsServer = createHttpsServer({ cert: readFileSync(certPath), key: readFileSync(join(fixtures, 'key.pem')) }, (req, res) => res.end(req.url === '/big' ? BIG : 'secret over tls'));
let deniedConnections = 0;
const rawServer = createTcpServer((socket) => {
  deniedConnections++;
  socket.end('raw hello');
});
const [A, B, T, R] = await Promise.all([listen(allowedServer), listen(deniedServer), listen(tlsServer), listen(rawServer)]);

const runtimeWith = runtimesPerTest(test);
test.after(() => {
  for (const server of [allowedServer, deniedServer, tlsServer, rawServer]) server.close();
  rmSync(workspace, { recursive: true, force: true });
});

/** A runtime whose policy is workspace-write with `network`, whatever `config` says. */
const allowlisted = (network: SandboxPolicy['network'], config: RuntimeConfig = {}): Runtime => runtimeWith({ timeoutMs: 20_000, ...config, policy: { mode: 'workspace-write', network } });

async function run(network: SandboxPolicy['network'], program: string): Promise<RunResult> {
  const runtime = allowlisted(network);
  return runtime.run(runtime.resolve({ program, cwd: workspace }));
}

const loopbackDenied = (port: number) => `blocked by ptc network policy: 127.0.0.1:${port} is not allowed (default: loopback addresses are denied unless named)`;
const notListed = (host: string, port: number) => `blocked by ptc network policy: ${host}:${port} is not allowed (default: not in allowlist)`;
const bwrapReport = (network: unknown, denied: boolean) => ({ mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network, ...reportLocation(), denied, memory: 'none', disk: 'watchdog', ...reportLimits() });
/** How a refusal of the far side's plan reads: prefixed with where it was made. */
const farSide = (message: string): string => `${unavailablePrefix()}${message}`;

/** A program that fetches each URL and returns its body, or the error message it failed with. */
const fetchAll = (urls: string[]) => `
  const out = [];
  for (const url of ${JSON.stringify(urls)}) {
    try { out.push(await (await fetch(url)).text()) } catch (error) { out.push(error.name + ': ' + error.message) }
  }
  return out;`;

test('fetch reaches the allowed port, is refused the denied one with the rule, and the report counts both', async () => {
  const result = await run({ allow: [`127.0.0.1:${A}`] }, fetchAll([`http://127.0.0.1:${A}/one`, `http://127.0.0.1:${B}/`, `http://127.0.0.1:${A}/two`]));
  assert.equal(valueOf(result), [`allowed GET /one`, `TypeError: ${loopbackDenied(B)}`, `allowed GET /two`]);
  assert.equal(result.sandbox, bwrapReport({ mode: 'allowlist', allowed: [{ host: '127.0.0.1', port: A, count: perRequest(2) }], denied: [{ host: '127.0.0.1', port: B, count: 1 }] }, true));
});

test('an uncaught denied fetch is an exception carrying the proxy\'s sentence; the denied server sees nothing', async () => {
  const result = await run({ allow: [`127.0.0.1:${A}`] }, 'return (await fetch("http://169.254.169.254/")).status');
  assert.is(result.status, 'failed');
  const failure = (result as { failure: { kind: string; name: string; message: string } }).failure;
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'TypeError');
  assert.is(failure.message, 'blocked by ptc network policy: 169.254.169.254:80 is not allowed (default: link-local and metadata addresses are denied unless named)');
  assert.equal(result.sandbox, bwrapReport({ mode: 'allowlist', allowed: [], denied: [{ host: '169.254.169.254', port: 80, count: 1 }] }, true));
});

test('an allowed name that does not resolve fails fetch with the proxy\'s reason, over HTTP and CONNECT alike', async () => {
  // .invalid never resolves (RFC 6761), with or without a network.
  const [plain, tunnelled] = valueOf(await run({ allow: ['unresolvable.invalid'] }, fetchAll(['http://unresolvable.invalid/', 'https://unresolvable.invalid/']))) as string[];
  assert.match(plain!, /^TypeError: ptc network proxy: cannot resolve unresolvable\.invalid \((ENOTFOUND|EAI_AGAIN)\)$/);
  assert.match(tunnelled!, /^TypeError: ptc network proxy: cannot resolve unresolvable\.invalid \((ENOTFOUND|EAI_AGAIN)\)$/);
});

test('localhost and 127.0.0.1 are different rules; a CIDR rule allows the addresses in it; a wildcard matches only names under it', async () => {
  const byName = await run({ allow: [`localhost:${A}`] }, fetchAll([`http://localhost:${A}/name`, `http://127.0.0.1:${A}/address`]));
  assert.equal(valueOf(byName), [`allowed GET /name`, `TypeError: ${loopbackDenied(A)}`]);
  const byRange = await run({ allow: [`127.0.0.0/8:${A}`] }, fetchAll([`http://127.0.0.1:${A}/range`, `http://127.0.0.1:${B}/`]));
  assert.equal(valueOf(byRange), [`allowed GET /range`, `TypeError: ${loopbackDenied(B)}`]);
  const wildcard = await run({ allow: [`*.example.com:${A}`] }, fetchAll([`http://example.com:${A}/`, `http://127.0.0.1:${A}/`]));
  assert.equal(valueOf(wildcard), [`TypeError: ${notListed('example.com', A)}`, `TypeError: ${loopbackDenied(A)}`]);
  // deny beats allow
  const denied = await run({ allow: [`127.0.0.0/8`], deny: [`127.0.0.1:${B}`] }, fetchAll([`http://127.0.0.1:${A}/`, `http://127.0.0.1:${B}/`]));
  assert.equal(valueOf(denied), [`allowed GET /`, `TypeError: blocked by ptc network policy: 127.0.0.1:${B} is not allowed (127.0.0.1:${B})`]);
});

test('a name that resolves to a loopback address is denied unless the address is named', async (context) => {
  // Any /etc/hosts name for 127.0.0.1 other than localhost stands in for DNS rebinding to loopback.
  const alias = readFileSync('/etc/hosts', 'utf8').split('\n').map((line) => line.trim().split(/\s+/))
    .find(([address, ...names]) => address === '127.0.0.1' && names.some((name) => !/^localhost\b/.test(name)))?.slice(1).find((name) => !/^localhost\b/.test(name));
  if (alias === undefined) {
    console.log(`# skipped: /etc/hosts names 127.0.0.1 only as localhost (${JSON.stringify(context.__test__)})`);
    return;
  }
  const result = await run({ allow: [`${alias}:${A}`] }, fetchAll([`http://${alias}:${A}/`]));
  assert.equal(valueOf(result), [`TypeError: blocked by ptc network policy: ${alias}:${A} is not allowed (default: loopback addresses are denied unless named)`]);
});

test('HTTPS goes through CONNECT to a local TLS server; a denied CONNECT fails with the reason', async () => {
  const program = `
    const https = await import('node:https');
    const fs = await import('node:fs');
    const ca = fs.readFileSync(${JSON.stringify(certPath)});
    const get = (url) => new Promise((resolve, reject) => https.get(url, { ca }, (res) => {
      let body = ''; res.setEncoding('utf8').on('data', (chunk) => body += chunk).on('end', () => resolve(res.statusCode + ' ' + body));
    }).on('error', reject));
    let refused;
    try { await fetch('https://127.0.0.1:${B}/') } catch (error) { refused = error.message }
    // Node before 24.5 does not proxy its https module: there the carrier's fetch is what tunnels.
    return [${envProxy} ? await get('https://127.0.0.1:${T}/') : null, refused];`;
  const result = await run({ allow: [`127.0.0.1:${T}`] }, program);
  assert.equal(valueOf(result), [envProxy ? '200 secret over tls' : null, loopbackDenied(B)]);
  assert.equal(result.sandbox, bwrapReport({ mode: 'allowlist', allowed: envProxy ? [{ host: '127.0.0.1', port: T, count: 1 }] : [], denied: [{ host: '127.0.0.1', port: B, count: 1 }] }, true));
});

test('a raw TCP connect cannot leave the sandbox: the namespace has only loopback, and the error says so', async () => {
  const program = `
    const net = await import('node:net');
    const attempt = (port, host) => new Promise((resolve) => net.connect(port, host).on('connect', () => resolve('connected')).on('error', (error) => resolve(error.code + ': ' + error.message)));
    return [await attempt(${R}, '127.0.0.1'), await attempt(80, '192.0.2.1')];`;
  const result = await run({ allow: [`127.0.0.1:${R}`] }, program);
  const hint = ' (ptc network policy: the sandbox has no network interface, only the allowlist proxy; use fetch, http(s) with HTTP_PROXY, or SOCKS5 at ALL_PROXY=socks5h://127.0.0.1:3128)';
  assert.equal(valueOf(result), [`ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${R}${hint}`, `ENETUNREACH: connect ENETUNREACH 192.0.2.1:80 - Local (0.0.0.0:0)${hint}`]);
  assert.is(deniedConnections, 0);
  assert.equal(result.sandbox, bwrapReport({ mode: 'allowlist', allowed: [], denied: [] }, true));
});

test('curl in a child process goes through the proxy unchanged: HTTP, HTTPS and SOCKS5', async () => {
  if (!hasCurl) return console.log('# skipped: no /usr/bin/curl');
  const program = `
    const { execFileSync } = await import('node:child_process');
    const curl = (...args) => { try { return execFileSync('curl', ['-sS', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) } catch (error) { return 'exit ' + error.status + ': ' + error.stderr.trim() } };
    return [
      curl('http://127.0.0.1:${A}/curl'),
      curl('-o', '/dev/null', '-w', '%{http_code}', 'http://127.0.0.1:${B}/'),
      curl('--cacert', ${JSON.stringify(certPath)}, 'https://127.0.0.1:${T}/'),
      curl('--proxy', process.env.ALL_PROXY, 'http://127.0.0.1:${A}/socks'),
    ];`;
  const result = await run({ allow: [`127.0.0.1:${A}`, `127.0.0.1:${T}`] }, program);
  assert.equal(valueOf(result), ['allowed GET /curl', '403', 'secret over tls', 'allowed GET /socks']);
  assert.equal(result.sandbox, bwrapReport({
    mode: 'allowlist',
    allowed: [{ host: '127.0.0.1', port: A, count: 2 }, { host: '127.0.0.1', port: T, count: 1 }],
    denied: [{ host: '127.0.0.1', port: B, count: 1 }],
  }, true));
});

/** FNV-1a over bytes, as the program computes it. */
function fnv(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

test('a slow reader gets a 32 MB body whole through the forwarder and the proxy, over HTTP and CONNECT', async () => {
  // fetch of http:// is forwarded on a Node with the env proxy and tunnelled with CONNECT before it;
  // https (where Node proxies it) is CONNECT.
  const program = `
    const https = await import('node:https');
    const fs = await import('node:fs');
    const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
    const digest = { bytes: 0, hash: 0x811c9dc5, reads: 0 };
    const take = (state, chunk) => {
      for (const byte of chunk) state.hash = Math.imul(state.hash ^ byte, 0x01000193) >>> 0;
      state.bytes += chunk.length;
      return state.reads++ < 40;
    };
    const viaFetch = async (url) => {
      const state = { ...digest };
      const reader = (await fetch(url)).body.getReader();
      for (let next = await reader.read(); !next.done; next = await reader.read()) if (take(state, next.value)) await pause();
      return [state.bytes, state.hash];
    };
    const viaHttps = (url) => new Promise((resolve, reject) => https.get(url, { ca: fs.readFileSync(${JSON.stringify(certPath)}) }, (res) => {
      const state = { ...digest };
      res.on('data', (chunk) => { if (take(state, chunk)) { res.pause(); pause().then(() => res.resume()); } });
      res.on('end', () => resolve([state.bytes, state.hash]));
    }).on('error', reject));
    return [await viaFetch('http://127.0.0.1:${A}/big'), ${envProxy} ? await viaHttps('https://127.0.0.1:${T}/big') : null];`;
  const result = await run({ allow: [`127.0.0.1:${A}`, `127.0.0.1:${T}`] }, program);
  const expected = [BIG.length, fnv(BIG)];
  assert.equal(valueOf(result), [expected, envProxy ? expected : null]);
});

test('a refusal another client met does not relabel a fetch that failed for its own reason', async () => {
  if (!hasCurl) return console.log('# skipped: no /usr/bin/curl');
  const program = `
    const { execFileSync } = await import('node:child_process');
    try { execFileSync('curl', ['-sS', 'https://127.0.0.1:${B}/'], { stdio: 'ignore' }) } catch {}
    try { await fetch('https://127.0.0.1:${B}/', { signal: AbortSignal.abort() }) } catch (error) { return error.name }`;
  assert.is(valueOf(await run({ allow: [`127.0.0.1:${A}`] }, program)), 'AbortError');
});

test('a retained environment keeps its proxy and rules, counts per run; a changed allowlist is refused, or replaces it when asked', async () => {
  const runtime = runtimeWith({ timeoutMs: 20_000, executionMode: 'persistent-in-memory' });
  const owner = {};
  const go = (program: string, network: SandboxPolicy['network'], extra: Record<string, unknown> = {}) => runtime.run(runtime.resolve({ program, cwd: workspace, stateOwner: owner, policy: { mode: 'workspace-write', network }, ...extra }));
  const first = await go(`var seen = await (await fetch('http://127.0.0.1:${A}/1')).text(); seen`, { allow: [`127.0.0.1:${A}`] });
  assert.is(valueOf(first), 'allowed GET /1');
  assert.equal(first.environment, { fresh: true });
  const second = await go(`let refused; try { await fetch('http://127.0.0.1:${B}/') } catch (error) { refused = error.message }; [seen, refused]`, { allow: [`127.0.0.1:${A}`] });
  assert.equal(valueOf(second), ['allowed GET /1', loopbackDenied(B)]);
  assert.equal(second.environment, { fresh: false });
  assert.equal(second.sandbox.network, { mode: 'allowlist', allowed: [], denied: [{ host: '127.0.0.1', port: B, count: 1 }] });
  const refused = await go('seen', { allow: [`127.0.0.1:${B}`] }).then(() => 'ran', (error: Error) => error.message);
  assert.match(refused, /^ptc run\(\): this run's sandbox policy differs from the one this stateOwner's environment started with \(network \{ allow: \[ '127\.0\.0\.1:\d+' \], deny: \[\] \} → \{ allow: \[ '127\.0\.0\.1:\d+' \], deny: \[\] \}\)/);
  assert.is(valueOf(await go('seen', { allow: [`127.0.0.1:${A}`] })), 'allowed GET /1');
  const changed = await go(`[typeof seen, await (await fetch('http://127.0.0.1:${B}/')).text()]`, { allow: [`127.0.0.1:${B}`] }, { onPolicyChange: 'replace' });
  assert.equal(valueOf(changed), ['undefined', 'the denied server answered']);
  assert.equal(changed.environment, { fresh: true, replaced: `the sandbox policy changed (network { allow: [ '127.0.0.1:${A}' ], deny: [] } → { allow: [ '127.0.0.1:${B}' ], deny: [] }), so the previous environment was ended (onPolicyChange: "replace")` });
});

test('the proxy\'s socket directory goes with the carrier: after a run, a timeout that kills it, a released owner, and its spare', () => {
  // In a host of its own with a TMPDIR of its own, so no other process's directories are counted.
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-network-dirs-')));
  const host = `
    import { createRuntime } from ${JSON.stringify(`${repoRoot}host/index.ts`)};
    const launch = ${JSON.stringify(launchUnderTest() ?? null)};
    const make = (config) => createRuntime({ timeoutMs: 20000, ...config, policy: { mode: 'workspace-write', network: { allow: ['127.0.0.1:${A}'] } }, ...(launch ? { launch } : {}) });
    const cwd = ${JSON.stringify(workspace)};
    const plain = make({});
    const statuses = [(await plain.run(plain.resolve({ program: 'return 1', cwd }))).status];
    const timed = make({ timeoutMs: 1000 });
    const stuck = await timed.run(timed.resolve({ program: "await fetch('http://127.0.0.1:${A}/'); for (;;) {}", cwd }));
    statuses.push(stuck.status === 'failed' ? stuck.failure.kind : stuck.status);
    const retained = make({ executionMode: 'persistent-in-memory' });
    const owner = {};
    statuses.push((await retained.run(retained.resolve({ program: 'globalThis.kept = 1; 1', cwd, stateOwner: owner }))).status);
    await retained.release(owner);
    await Promise.all([plain.dispose(), timed.dispose(), retained.dispose()]);
    process.stdout.write(JSON.stringify(statuses));
  `;
  assertHostScript(host, tmp, '["ok","timeout","ok"]');
});

test('a host that never disposes its allowlisted runtime still exits (the prestarted spare has a proxy), and leaves no proxy directory', () => {
  // The proxy listens in the host; only a run's carrier may keep the host alive, not an idle spare's proxy.
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-network-exit-')));
  const host = `
    import { createRuntime } from ${JSON.stringify(`${repoRoot}host/index.ts`)};
    const launch = ${JSON.stringify(launchUnderTest() ?? null)};
    const runtime = createRuntime({ policy: { mode: 'workspace-write', network: { allow: ['127.0.0.1:${A}'] } }, ...(launch ? { launch } : {}) });
    const result = await runtime.run(runtime.resolve({ program: 'return 1', cwd: ${JSON.stringify(workspace)} }));
    process.stdout.write(JSON.stringify(result.status));
  `;
  // Without the fix the child never exits and the timeout kills it (status null).
  assertHostScript(host, tmp, '"ok"');
});

/** Runs `host` (an ES module) in a Node of its own with `tmp` as its TMPDIR, then removes `tmp`:
 * the host must exit 0 by itself, print `expected`, and leave no ptc directory in `tmp`. */
function assertHostScript(host: string, tmp: string, expected: string): void {
  try {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', host], { cwd: tmp, env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8', timeout: 120_000 });
    assert.is(child.status, 0, `${child.signal ?? ''} ${child.stderr}`);
    assert.is(child.stdout, expected);
    assert.equal(readdirSync(tmp).filter((name) => /^ptc-\d+-\d+-/.test(name)), []);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

test('only bubblewrap can enforce an allowlist: node-permission and full-access refuse it, bad rules throw', async () => {
  const runtime = allowlisted({ allow: ['api.example.com'] }, { sandbox: { backend: 'node-permission' } });
  const result = await runtime.run(runtime.resolve({ program: 'return 1', cwd: workspace }));
  assert.equal(withoutWarm(result), {
    status: 'failed',
    failure: { kind: 'sandbox-unavailable', message: farSide('a network allowlist needs the "bwrap" backend: Node\'s permission model can only allow or refuse the whole network, not single hosts') },
    output: [],
    sandbox: { mode: 'workspace-write', backend: 'none', enforcement: 'none', network: { mode: 'allowlist', allowed: [], denied: [] }, ...reportLocation(), denied: false, memory: 'none', tasks: 'none', cpu: 'none', disk: 'none' },
  });
  const open = runtimeWith();
  // A request's policy is checked by resolve(), before anything runs.
  const refused = (policy: SandboxPolicy): Error => {
    try {
      open.resolve({ program: 'return 1', cwd: workspace, policy });
    } catch (error) {
      return error as Error;
    }
    throw new Error(`resolve() accepted ${JSON.stringify(policy)}`);
  };
  const wide = refused({ mode: 'full-access', network: { allow: ['api.example.com'] } });
  assert.instance(wide, RangeError);
  assert.is(wide.message, 'ptc request: policy: a network allowlist needs a confined mode ("read-only" or "workspace-write"); "full-access" restricts nothing');
  const bad = refused({ mode: 'read-only', network: { allow: ['api.example.com', 'bad host'] } });
  assert.instance(bad, TypeError);
  assert.is(bad.message, "ptc request: policy: network: allow[1] 'bad host' contains white space");
  // The runtime's own policy is refused by createRuntime, in the sandbox's words.
  assert.throws(() => createTestRuntime({ policy: { mode: 'read-only', network: { allow: ['bad host'] } } }), (error: Error) => error instanceof TypeError && error.message === "ptc sandbox policy: network: allow[0] 'bad host' contains white space");
});

test('a command-prefix launch carries the allowlist too: the far sandbox reaches the host\'s proxy through the relay', async () => {
  const runtime = runtimeWith({
    launch: { kind: 'command', command: ['env', '-i', 'PATH=/usr/bin:/bin'], node: '/usr/bin/node', bootstrapPath: join(repoRoot, 'dist/bootstrap.mjs') },
    policy: { mode: 'workspace-write', network: { allow: [`127.0.0.1:${A}`] } },
  });
  const result = await runtime.run(runtime.resolve({ program: fetchAll([`http://127.0.0.1:${A}/far`, `http://127.0.0.1:${B}/`]), cwd: workspace }));
  assert.equal(valueOf(result), ['allowed GET /far', `TypeError: ${loopbackDenied(B)}`]);
  assert.equal(result.sandbox, {
    // The command prefix runs its relay on this machine, whatever the launch under test.
    mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', location: 'remote', denied: true, memory: 'none', disk: 'watchdog', ...reportLimits(false, 'here'),
    network: { mode: 'allowlist', allowed: [{ host: '127.0.0.1', port: A, count: 1 }], denied: [{ host: '127.0.0.1', port: B, count: 1 }] },
  });
});

test.run();

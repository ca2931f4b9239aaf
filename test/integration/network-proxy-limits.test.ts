// The network proxy's limits and lifecycle, against servers on loopback only: malformed requests,
// header size, the head timeout, the connection cap, concurrent lookups, half-closed tunnels,
// clients that leave mid-response, bad options, close(); no server keeps a connection at the end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { parseNetworkRules, startNetworkProxy } from '../../host/sandbox/network/index.ts';
import { createGate } from '../../host/sandbox/network/gate.ts';
import { rejection } from '../helpers/assert.ts';
import { connectTunnel, connections, drained, forward, headEnd, ports, proxies, proxyWith, readUntil, servers, setUp, socketPath, socks, tearDown } from '../helpers/network-proxy.ts';

test.before(setUp);
test.after(tearDown);

test('HTTP forward: requests that are not absolute http:// URLs get 400 naming the problem', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const origin = await forward(proxy, '/just/a/path');
  assert.is(origin.status, 400);
  assert.is(origin.headers['x-ptc-network'], 'ptc network proxy: cannot forward "/just/a/path": expected an absolute URL such as http://host/path');
  const tls = await forward(proxy, `https://127.0.0.1:${ports.secure}/`);
  assert.is(tls.status, 400);
  assert.is(tls.headers['x-ptc-network'], `ptc network proxy: cannot forward "https://127.0.0.1:${ports.secure}/": https goes through CONNECT`);
  const badPort = await forward(proxy, 'http://127.0.0.1:99999/');
  assert.is(badPort.status, 400);
  assert.is(badPort.reason, 'ptc network proxy: "127.0.0.1:99999" is not a valid host and port');
  const withUser = await forward(proxy, `http://user:secret@127.0.0.1:${ports.web}/`);
  assert.is(withUser.reason, `ptc network proxy: "user:secret@127.0.0.1:${ports.web}" is not a valid host and port`);
  const noPort = await connectTunnel(proxy, '127.0.0.1');
  assert.ok(noPort.head.startsWith('HTTP/1.1 400 ptc network proxy: CONNECT needs host:port, got "127.0.0.1"\r\n'), noPort.head);
  noPort.socket.destroy();
  assert.equal(proxy.report(), { mode: 'allowlist', allowed: [], denied: [] });
});

test('HTTP forward: a request head over 16 KiB gets 431', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const socket = connect(proxy.socketPath);
  await once(socket, 'connect');
  socket.write(`GET http://127.0.0.1:${ports.web}/ HTTP/1.1\r\nHost: x\r\nX-Fill: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
  const head = (await readUntil(socket, headEnd)).toString('latin1');
  assert.match(head, /^HTTP\/1\.1 431 /);
  socket.destroy();
});

test('tunnels keep half-closed connections: a client that ends its side still gets the whole answer', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.echo}`] });
  const viaConnect = await connectTunnel(proxy, `127.0.0.1:${ports.echo}`);
  const viaSocks = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.echo);
  for (const socket of [viaConnect.socket, viaSocks.socket]) {
    const payload = Buffer.alloc(1024 * 1024, 'q');
    const closed = once(socket, 'close');
    socket.end(payload);
    const echoed = await readUntil(socket, () => false);
    assert.is(echoed.length, payload.length);
    assert.ok(echoed.equals(payload));
    await closed;
  }
});

test('at most two lookups run at once, the rest wait their turn, and every request is answered', async () => {
  const started: string[] = [];
  const release: Array<() => void> = [];
  const resolve = (host: string): Promise<string[]> => {
    started.push(host);
    return new Promise((done) => release.push(() => done(['127.0.0.1'])));
  };
  const gate = createGate(parseNetworkRules({ allow: ['*.test', `127.0.0.1:${ports.web}`] }), resolve, () => {});
  const passages = ['a', 'b', 'c', 'd', 'e'].map((name) => gate({ host: `${name}.test`, port: ports.web }));
  await new Promise((next) => setImmediate(next));
  assert.equal(started, ['a.test', 'b.test']);
  release.shift()!();
  await new Promise((next) => setImmediate(next));
  assert.equal(started, ['a.test', 'b.test', 'c.test']);
  while (release.length > 0) {
    release.shift()!();
    await new Promise((next) => setImmediate(next));
  }
  assert.equal(started, ['a.test', 'b.test', 'c.test', 'd.test', 'e.test']);
  assert.equal((await Promise.all(passages)).map((passage) => passage.kind), ['allowed', 'allowed', 'allowed', 'allowed', 'allowed']);
});

test('a resolver that breaks fails that request (502, SOCKS 0x01) and the proxy goes on', async () => {
  const resolve = async (): Promise<string[]> => 'not a list' as unknown as string[];
  const proxy = await proxyWith({ allow: ['broken.test', `127.0.0.1:${ports.web}`] }, { resolve });
  const answer = await forward(proxy, 'http://broken.test/');
  assert.is(answer.status, 502);
  assert.match(answer.reason, /^ptc network proxy: cannot forward "http:\/\/broken\.test\/": /);
  const tunnel = await connectTunnel(proxy, 'broken.test:443');
  assert.match(tunnel.head, /^HTTP\/1\.1 502 ptc network proxy: cannot connect to "broken\.test:443": /);
  tunnel.socket.destroy();
  const { code, socket } = await socks(proxy, { type: 3, host: 'broken.test' }, 80);
  assert.is(code, 0x01);
  socket.destroy();
  assert.is((await forward(proxy, `http://127.0.0.1:${ports.web}/still`)).body.toString(), 'hello /still');
});

test('a client that never sends a request is disconnected after headTimeoutMs', async () => {
  const proxy = await proxyWith({ allow: [] }, { headTimeoutMs: 200 });
  const silent = connect(proxy.socketPath);
  silent.resume();
  await once(silent, 'close');
  const halfway = connect(proxy.socketPath);
  halfway.write(Buffer.from([0x05, 0x01, 0x00]));
  halfway.resume();
  await once(halfway, 'close');
});

test('startNetworkProxy rejects a socket path already in use, naming it', async () => {
  const proxy = await proxyWith({ allow: [] });
  const error = await rejection(startNetworkProxy({ rules: parseNetworkRules({ allow: [] }), socketPath: proxy.socketPath }));
  assert.is(error.message, `ptc network proxy: cannot listen on ${proxy.socketPath}: listen EADDRINUSE: address already in use ${proxy.socketPath}`);
  assert.is(error.cause.code, 'EADDRINUSE');
});

test('connections past maxConnections are closed on arrival; the ones before stay served', async () => {
  const proxy = await proxyWith({ allow: [] }, { maxConnections: 2 });
  const open: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = connect(proxy.socketPath);
    socket.write(Buffer.from([0x05, 0x01, 0x00]));
    assert.equal([...(await readUntil(socket, (data) => data.length >= 2))], [0x05, 0x00]);
    open.push(socket);
  }
  const third = connect(proxy.socketPath);
  third.on('error', () => {});
  const received: Buffer[] = [];
  third.on('data', (chunk: Buffer) => received.push(chunk));
  await once(third, 'close');
  assert.equal(received, []);
  for (const socket of open) assert.not.ok(socket.destroyed);
  for (const socket of open) socket.destroy();
});

const BAD_OPTIONS: Array<[string, (socketPath: string) => unknown, string]> = [
  ['no options', () => undefined, 'startNetworkProxy: options must be an object, got undefined'],
  ['raw rules', (socketPath) => ({ rules: { allow: ['a.com'] }, socketPath }), 'startNetworkProxy: rules must come from parseNetworkRules(), got {"allow":["a.com"]}'],
  ['no socket path', () => ({ rules: parseNetworkRules({ allow: [] }) }), 'startNetworkProxy: socketPath must be a non-empty path, got undefined'],
  ['resolve not a function', (socketPath) => ({ rules: parseNetworkRules({ allow: [] }), socketPath, resolve: 'dns' }), `startNetworkProxy: resolve must be a function, got 'dns'`],
  ['zero timeout', (socketPath) => ({ rules: parseNetworkRules({ allow: [] }), socketPath, headTimeoutMs: 0 }), 'startNetworkProxy: headTimeoutMs must be a positive integer, got 0'],
  ['fractional cap', (socketPath) => ({ rules: parseNetworkRules({ allow: [] }), socketPath, maxConnections: 1.5 }), 'startNetworkProxy: maxConnections must be a positive integer, got 1.5'],
];

for (const [name, options, message] of BAD_OPTIONS) {
  test(`startNetworkProxy rejects bad options: ${name}`, async () => {
    const path = socketPath('bad');
    const error = await rejection(startNetworkProxy(options(path) as Parameters<typeof startNetworkProxy>[0]));
    assert.instance(error, TypeError);
    assert.is(error.message, message);
    assert.not.ok(existsSync(path));
  });
}

test('close() ends open tunnels and forwarded connections on both sides and removes the socket file', async () => {
  // The earlier proxies' keep-alive connections would otherwise stay open on the servers.
  for (const earlier of proxies.splice(0)) await earlier.close();
  await drained(servers.web, 'web');
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.echo}`, `127.0.0.1:${ports.web}`] });
  const tunnel = await connectTunnel(proxy, `127.0.0.1:${ports.echo}`);
  const viaSocks = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.echo);
  const agent = new Agent({ keepAlive: true });
  await forward(proxy, `http://127.0.0.1:${ports.web}/`, agent);
  assert.is(await connections(servers.echo), 2);
  const ends = [once(tunnel.socket, 'close'), once(viaSocks.socket, 'close')];
  tunnel.socket.resume();
  viaSocks.socket.resume();
  await proxy.close();
  await Promise.all(ends);
  agent.destroy();
  assert.not.ok(existsSync(proxy.socketPath));
  await drained(servers.echo, 'echo');
  await drained(servers.web, 'web');
  await proxy.close(); // idempotent
});

test('a client that goes away mid-response ends the upstream response too', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.stream}`] });
  const ended = once(servers.streamed, 'response-closed');
  const client = connect(proxy.socketPath);
  await once(client, 'connect');
  client.write(`GET http://127.0.0.1:${ports.stream}/forever HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  await readUntil(client, (data) => data.length > 64 * 1024);
  client.destroy();
  await ended;
});

test('a SOCKS4 client is rejected (0x5b) and an HTTP upgrade gets 501 pointing at CONNECT', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const socks4 = connect(proxy.socketPath);
  await once(socks4, 'connect');
  socks4.write(Buffer.from([0x04, 0x01, 0x00, 0x50, 127, 0, 0, 1, 0x00]));
  assert.equal([...(await readUntil(socks4, () => false))], [0x00, 0x5b, 0, 0, 0, 0, 0, 0]);
  socks4.destroy();
  const upgrade = connect(proxy.socketPath);
  await once(upgrade, 'connect');
  upgrade.write(`GET http://127.0.0.1:${ports.web}/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
  const answer = (await readUntil(upgrade, () => false)).toString();
  assert.ok(answer.startsWith('HTTP/1.1 501 ptc network proxy: protocol upgrades are not forwarded; connect with CONNECT instead\r\n'), answer);
  assert.ok(answer.endsWith('\r\n\r\nptc network proxy: protocol upgrades are not forwarded; connect with CONNECT instead\n'), answer);
  upgrade.destroy();
  assert.equal(proxy.report(), { mode: 'allowlist', allowed: [], denied: [] });
});

test('no connection is left open on any server', async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const [name, server] of Object.entries(servers)) await drained(server, name);
});

test.run();

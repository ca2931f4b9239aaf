// The network allowlist proxy end to end, against servers on loopback only: HTTP forward with
// keep-alive, HTTPS through CONNECT to a TLS server with a fixture certificate, SOCKS5 raw TCP,
// curl as a child process, names that resolve to denied addresses, the report, reset(), timeouts,
// close(); every server's connection count is back to zero at the end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, createServer as createHttpServer, request, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { parseNetworkRules, startNetworkProxy, type NetworkProxy, type NetworkRules } from '../../host/sandbox/network/index.ts';
import { rejection } from '../helpers/assert.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'network');
const CERT = readFileSync(join(FIXTURES, 'localhost-cert.pem'));
const KEY = readFileSync(join(FIXTURES, 'localhost-key.pem'));
const LOOPBACK = 'default: loopback addresses are denied unless named';
const BIG = Buffer.alloc(4 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz');

let dir = '';
let web: HttpServer; // allowed HTTP
let other: HttpServer; // HTTP on a port no rule names
let secure: Server; // HTTPS
let echo: Server; // raw TCP echo, allowed
let closed: Server; // raw TCP, denied
let streamed: HttpServer; // an endless response, written as fast as the reader takes it
const ports = { web: 0, other: 0, secure: 0, echo: 0, closed: 0, stream: 0 };
const proxies: NetworkProxy[] = [];

async function listen<T extends Server>(server: T): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

function serve(req: IncomingMessage, res: ServerResponse): void {
  if (req.url === '/big') return void res.end(BIG);
  if (req.method === 'POST') {
    res.setHeader('x-seen-encoding', String(req.headers['transfer-encoding'] ?? req.headers['content-length']));
    return void req.pipe(res);
  }
  res.setHeader('x-seen-host', String(req.headers.host));
  res.end(`hello ${req.url}`);
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ptc-netproxy-'));
  web = createHttpServer(serve);
  other = createHttpServer(serve);
  secure = createHttpsServer({ cert: CERT, key: KEY }, serve);
  echo = createTcpServer((socket) => socket.pipe(socket));
  closed = createTcpServer((socket) => socket.end('should never be reached'));
  ports.web = await listen(web);
  ports.other = await listen(other);
  ports.secure = await listen(secure);
  ports.echo = await listen(echo);
  ports.closed = await listen(closed);
  streamed = createHttpServer((_req, res) => {
    const chunk = Buffer.alloc(64 * 1024, 'z');
    const pump = (): void => {
      while (res.write(chunk));
    };
    res.on('drain', pump);
    res.on('close', () => streamed.emit('response-closed'));
    pump();
  });
  ports.stream = await listen(streamed);
});

test.after(async () => {
  for (const proxy of proxies) await proxy.close();
  for (const server of [web, other, secure, echo, closed, streamed]) server.close();
  await rm(dir, { recursive: true, force: true });
});

let serial = 0;
async function proxyWith(rules: NetworkRules, options: { resolve?: (host: string) => Promise<string[]>; headTimeoutMs?: number; maxConnections?: number } = {}): Promise<NetworkProxy> {
  const proxy = await startNetworkProxy({ rules: parseNetworkRules(rules), socketPath: join(dir, `proxy-${serial++}.sock`), ...options });
  proxies.push(proxy);
  return proxy;
}

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer };

/** One absolute-form request to the proxy's Unix socket, as an HTTP client configured with the proxy sends it. */
function forward(proxy: NetworkProxy, url: string, agent?: Agent, host = /^\w+:\/\/([^/]*)/.exec(url)?.[1] ?? 'none'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: proxy.socketPath, path: url, headers: { host }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Reads from `socket` until `done(bytes so far)` holds. */
function readUntil(socket: Socket, done: (data: Buffer) => boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      data = Buffer.concat([data, chunk]);
      if (done(data)) {
        socket.off('data', onData).off('end', onEnd).off('error', reject);
        socket.pause();
        resolve(data);
      }
    };
    const onEnd = (): void => resolve(data);
    socket.on('data', onData).once('end', onEnd).once('error', reject);
    socket.resume();
  });
}

const headEnd = (data: Buffer): boolean => data.includes('\r\n\r\n');

/** Sends CONNECT; resolves with the response head and whatever followed it in the same read. */
async function connectTunnel(proxy: NetworkProxy, authority: string): Promise<{ socket: Socket; head: string; after: string }> {
  const socket = connect(proxy.socketPath);
  await once(socket, 'connect');
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const data = (await readUntil(socket, headEnd)).toString('latin1');
  const end = data.indexOf('\r\n\r\n') + 4;
  return { socket, head: data.slice(0, end), after: data.slice(end) };
}

/** A SOCKS5 CONNECT with no authentication; resolves with the reply code and the open socket. */
async function socks(proxy: NetworkProxy, address: { type: 1 | 3 | 4; host: string }, port: number, command = 0x01): Promise<{ code: number; socket: Socket }> {
  const socket = connect(proxy.socketPath);
  await once(socket, 'connect');
  socket.write(Buffer.from([0x05, 0x01, 0x00]));
  const greeting = await readUntil(socket, (data) => data.length >= 2);
  assert.equal([...greeting], [0x05, 0x00]);
  let addr: Buffer;
  if (address.type === 1) addr = Buffer.from(address.host.split('.').map(Number));
  else if (address.type === 4) addr = Buffer.from('00000000000000000000000000000001', 'hex'); // ::1
  else addr = Buffer.concat([Buffer.from([address.host.length]), Buffer.from(address.host)]);
  const portBytes = Buffer.alloc(2);
  portBytes.writeUInt16BE(port);
  socket.write(Buffer.concat([Buffer.from([0x05, command, 0x00, address.type]), addr, portBytes]));
  const reply = await readUntil(socket, (data) => data.length >= 10);
  assert.is(reply[0], 0x05);
  return { code: reply[1]!, socket };
}

function curl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['--silent', '--show-error', '--max-time', '20', ...args], { encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : Number((error as { code?: unknown }).code), stdout, stderr });
    });
  });
}

/** A loopback TCP port that pipes to the proxy's socket: what the sandbox's forwarder does for clients that speak only TCP. */
async function tcpFront(proxy: NetworkProxy): Promise<{ port: number; close(): void }> {
  const front = createTcpServer((client) => {
    const upstream = connect(proxy.socketPath);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const port = await listen(front);
  return { port, close: () => front.close() };
}

function connections(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

/** Waits (polling) until `server` has no open connection; fails after a generous bound. */
async function drained(server: Server, name: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await connections(server)) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.unreachable(`${name} still has ${await connections(server)} open connection(s)`);
}

test('HTTP forward: the allowed port answers, the denied port gets 403 naming the destination and the rule, and the report counts both', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const ok = await forward(proxy, `http://127.0.0.1:${ports.web}/a?b=1`);
  assert.is(ok.status, 200);
  assert.is(ok.body.toString(), 'hello /a?b=1');
  assert.is(ok.headers['x-seen-host'], `127.0.0.1:${ports.web}`);
  const message = `blocked by ptc network policy: 127.0.0.1:${ports.other} is not allowed (${LOOPBACK})`;
  for (let i = 0; i < 2; i++) {
    const denied = await forward(proxy, `http://127.0.0.1:${ports.other}/`);
    assert.is(denied.status, 403);
    assert.is(denied.body.toString(), `${message}\n`);
    assert.is(denied.headers['x-ptc-network'], message);
  }
  assert.equal(proxy.report(), {
    mode: 'allowlist',
    allowed: [{ host: '127.0.0.1', port: ports.web, count: 1 }],
    denied: [{ host: '127.0.0.1', port: ports.other, count: 2 }],
  });
});

test('HTTP forward: the Host sent upstream is the URL\'s, not a Host header the client made up', async () => {
  const proxy = await proxyWith({ allow: [`localhost:${ports.web}`] });
  const answer = await forward(proxy, `http://LocalHost:${ports.web}/fronted`, undefined, 'other-site.example');
  assert.is(answer.status, 200);
  assert.is(answer.headers['x-seen-host'], `LocalHost:${ports.web}`);
});

test('HTTP forward: keep-alive holds one client connection and one upstream connection for several requests', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let upstreamConnections = 0;
  const count = (): void => void upstreamConnections++;
  web.on('connection', count);
  const clientSockets = new Set<Socket>();
  agent.on('free', (socket: Socket) => clientSockets.add(socket));
  try {
    for (let i = 0; i < 3; i++) assert.is((await forward(proxy, `http://127.0.0.1:${ports.web}/n${i}`, agent)).body.toString(), `hello /n${i}`);
  } finally {
    web.off('connection', count);
    agent.destroy();
  }
  assert.is(clientSockets.size, 1);
  assert.is(upstreamConnections, 1);
  assert.equal(proxy.report().allowed, [{ host: '127.0.0.1', port: ports.web, count: 3 }]);
});

test('HTTP forward: a request body goes through, chunked or with a length', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  for (const [framing, body] of [['chunked', ['part one, ', 'part two']], ['11', ['eleven char']]] as const) {
    const answer = await new Promise<Answer>((resolve, reject) => {
      const headers: Record<string, string> = { host: `127.0.0.1:${ports.web}` };
      if (framing !== 'chunked') headers['content-length'] = framing;
      const req = request({ socketPath: proxy.socketPath, method: 'POST', path: `http://127.0.0.1:${ports.web}/post`, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      for (const part of body) req.write(part);
      req.end();
    });
    assert.is(answer.status, 200);
    assert.is(answer.headers['x-seen-encoding'], framing);
    assert.is(answer.body.toString(), body.join(''));
  }
});

test('HTTP forward: a 4 MB body arrives whole', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const answer = await forward(proxy, `http://127.0.0.1:${ports.web}/big`);
  assert.is(answer.status, 200);
  assert.is(createHash('sha256').update(answer.body).digest('hex'), createHash('sha256').update(BIG).digest('hex'));
});

test('HTTP forward: localhost and 127.0.0.1 are different destinations, each allowed only by its own rule', async () => {
  const byName = await proxyWith({ allow: [`localhost:${ports.web}`] });
  assert.is((await forward(byName, `http://localhost:${ports.web}/n`)).status, 200);
  const viaAddress = await forward(byName, `http://127.0.0.1:${ports.web}/n`);
  assert.is(viaAddress.status, 403);
  assert.is(viaAddress.headers['x-ptc-network'], `blocked by ptc network policy: 127.0.0.1:${ports.web} is not allowed (${LOOPBACK})`);
  const byAddress = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  assert.is((await forward(byAddress, `http://127.0.0.1:${ports.web}/n`)).status, 200);
  const viaName = await forward(byAddress, `http://localhost:${ports.web}/n`);
  assert.is(viaName.status, 403);
  assert.is(viaName.headers['x-ptc-network'], `blocked by ptc network policy: localhost:${ports.web} is not allowed (${LOOPBACK})`);
});

test('HTTP forward: the metadata address is denied with the message the program sees', async () => {
  const proxy = await proxyWith({ allow: ['*.example.com'] });
  const answer = await forward(proxy, 'http://169.254.169.254/latest/meta-data/');
  assert.is(answer.status, 403);
  assert.is(answer.body.toString(), 'blocked by ptc network policy: 169.254.169.254:80 is not allowed (default: link-local and metadata addresses are denied unless named)\n');
  assert.equal(proxy.report().denied, [{ host: '169.254.169.254', port: 80, count: 1 }]);
});

test('HTTP forward: requests that are not absolute http:// URLs get 400 naming the problem', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const origin = await forward(proxy, '/just/a/path');
  assert.is(origin.status, 400);
  assert.is(origin.headers['x-ptc-network'], 'ptc network proxy: cannot forward "/just/a/path": expected an absolute URL such as http://host/path');
  const tls = await forward(proxy, `https://127.0.0.1:${ports.secure}/`);
  assert.is(tls.status, 400);
  assert.is(tls.headers['x-ptc-network'], `ptc network proxy: cannot forward "https://127.0.0.1:${ports.secure}/": https goes through CONNECT`);
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

test('CONNECT: HTTPS to a local TLS server with the fixture certificate; a denied port gets 403', async () => {
  const proxy = await proxyWith({ allow: [`localhost:${ports.secure}`] });
  const { socket, head } = await connectTunnel(proxy, `localhost:${ports.secure}`);
  assert.match(head, /^HTTP\/1\.1 200 /);
  const secureSocket = tlsConnect({ socket, servername: 'localhost', ca: CERT });
  await once(secureSocket, 'secureConnect');
  secureSocket.write('GET /over-tls HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  const answer = (await readUntil(secureSocket as unknown as Socket, () => false)).toString();
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.ok(answer.endsWith('hello /over-tls'), answer);
  secureSocket.destroy();

  const denied = await connectTunnel(proxy, `localhost:${ports.closed}`);
  const message = `blocked by ptc network policy: localhost:${ports.closed} is not allowed (${LOOPBACK})`;
  assert.ok(denied.head.startsWith('HTTP/1.1 403 Forbidden\r\n'), denied.head);
  assert.ok(denied.head.includes(`\r\nx-ptc-network: ${message}\r\n`), denied.head);
  const rest = denied.after + (await readUntil(denied.socket, () => false)).toString();
  assert.is(rest, `${message}\n`);
  denied.socket.destroy();
  assert.equal(proxy.report(), {
    mode: 'allowlist',
    allowed: [{ host: 'localhost', port: ports.secure, count: 1 }],
    denied: [{ host: 'localhost', port: ports.closed, count: 1 }],
  });
});

test('SOCKS5: raw TCP to an allowed port echoes; a denied port is refused with 0x02 and never connected', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.echo}`] });
  let reached = 0;
  const onConnection = (): void => void reached++;
  closed.on('connection', onConnection);
  try {
    const allowed = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.echo);
    assert.is(allowed.code, 0x00);
    allowed.socket.write('ping');
    assert.is((await readUntil(allowed.socket, (data) => data.length >= 4)).toString(), 'ping');
    allowed.socket.destroy();
    const denied = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.closed);
    assert.is(denied.code, 0x02);
    await once(denied.socket, 'end');
    denied.socket.destroy();
    const byName = await socks(proxy, { type: 3, host: 'localhost' }, ports.echo);
    assert.is(byName.code, 0x02);
    byName.socket.destroy();
    const v6 = await socks(proxy, { type: 4, host: '::1' }, ports.echo);
    assert.is(v6.code, 0x02);
    v6.socket.destroy();
  } finally {
    closed.off('connection', onConnection);
  }
  assert.is(reached, 0);
  assert.equal(proxy.report(), {
    mode: 'allowlist',
    allowed: [{ host: '127.0.0.1', port: ports.echo, count: 1 }],
    denied: [
      { host: '127.0.0.1', port: ports.closed, count: 1 },
      { host: 'localhost', port: ports.echo, count: 1 },
      { host: '::1', port: ports.echo, count: 1 },
    ],
  });
});

test('SOCKS5: BIND and UDP ASSOCIATE are refused with 0x07; a client that offers no "no authentication" method gets 0xff', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.echo}`] });
  for (const command of [0x02, 0x03]) {
    const { code, socket } = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.echo, command);
    assert.is(code, 0x07, `command ${command}`);
    socket.destroy();
  }
  const socket = connect(proxy.socketPath);
  await once(socket, 'connect');
  socket.write(Buffer.from([0x05, 0x01, 0x02]));
  assert.equal([...(await readUntil(socket, (data) => data.length >= 2))], [0x05, 0xff]);
  socket.destroy();
  assert.equal(proxy.report(), { mode: 'allowlist', allowed: [], denied: [] });
});

test('curl from a child process: SOCKS5 over the Unix socket, and HTTP and HTTPS proxying through a loopback TCP front', async () => {
  const proxy = await proxyWith({ allow: [`localhost:${ports.web}`, `localhost:${ports.secure}`] });
  const socks5h = `socks5h://localhost${proxy.socketPath}`;
  const viaSocks = await curl(['--proxy', socks5h, `http://localhost:${ports.web}/curl-socks`]);
  assert.equal(viaSocks, { code: 0, stdout: 'hello /curl-socks', stderr: '' });
  const deniedSocks = await curl(['--proxy', socks5h, `http://localhost:${ports.other}/`]);
  assert.is(deniedSocks.code, 97);
  assert.match(deniedSocks.stderr, /SOCKS5 .*\(2\)/);

  const front = await tcpFront(proxy);
  try {
    const httpProxy = `http://127.0.0.1:${front.port}`;
    assert.equal(await curl(['--proxy', httpProxy, `http://localhost:${ports.web}/curl-http`]), { code: 0, stdout: 'hello /curl-http', stderr: '' });
    assert.equal(await curl(['--proxy', httpProxy, '--cacert', join(FIXTURES, 'localhost-cert.pem'), `https://localhost:${ports.secure}/curl-https`]), { code: 0, stdout: 'hello /curl-https', stderr: '' });
    const denied = await curl(['--proxy', httpProxy, `http://localhost:${ports.other}/`]);
    assert.equal(denied, { code: 0, stdout: `blocked by ptc network policy: localhost:${ports.other} is not allowed (${LOOPBACK})\n`, stderr: '' });
    const deniedTls = await curl(['--proxy', httpProxy, `https://localhost:${ports.other}/`]);
    assert.is(deniedTls.code, 56);
    assert.match(deniedTls.stderr, /CONNECT tunnel failed, response 403/);
  } finally {
    front.close();
  }
  assert.equal(proxy.report(), {
    mode: 'allowlist',
    allowed: [
      { host: 'localhost', port: ports.web, count: 2 },
      { host: 'localhost', port: ports.secure, count: 1 },
    ],
    denied: [{ host: 'localhost', port: ports.other, count: 3 }],
  });
});

test('names resolve on the host: one that resolves to a denied address is refused, and the proxy connects to the address it checked', async () => {
  const asked: string[] = [];
  const resolve = async (host: string): Promise<string[]> => {
    asked.push(host);
    return ['127.0.0.1'];
  };
  // Every name points at loopback: 127.0.0.1:web is named by a rule, 127.0.0.1:other is not.
  const proxy = await proxyWith({ allow: ['rebind.example.com', 'api.test', `127.0.0.1:${ports.web}`, '*.svc.test'], deny: ['blocked.svc.test'] }, { resolve });
  let reached = 0;
  const onRequest = (): void => void reached++;
  other.on('request', onRequest);
  const rebind = await forward(proxy, `http://rebind.example.com:${ports.other}/`);
  other.off('request', onRequest);
  assert.is(reached, 0);
  assert.is(rebind.status, 403);
  assert.is(rebind.headers['x-ptc-network'], `blocked by ptc network policy: rebind.example.com:${ports.other} is not allowed (${LOOPBACK})`);
  // .test names exist nowhere: the answer comes from the injected resolver's address, looked up once.
  const checked = await forward(proxy, `http://api.test:${ports.web}/x`);
  assert.is(checked.status, 200);
  assert.is(checked.headers['x-seen-host'], `api.test:${ports.web}`);
  const tunnel = await connectTunnel(proxy, `a.svc.test:${ports.web}`);
  assert.match(tunnel.head, /^HTTP\/1\.1 200 /);
  tunnel.socket.destroy();
  const notListed = await forward(proxy, `http://elsewhere.test:${ports.web}/`);
  assert.is(notListed.headers['x-ptc-network'], `blocked by ptc network policy: elsewhere.test:${ports.web} is not allowed (default: not in allowlist)`);
  const deniedByRule = await socks(proxy, { type: 3, host: 'blocked.svc.test' }, ports.web);
  assert.is(deniedByRule.code, 0x02);
  deniedByRule.socket.destroy();
  // Denied names are never looked up: a DNS query is itself a way out.
  assert.equal(asked, ['rebind.example.com', 'api.test', 'a.svc.test']);
});

test('a name that does not resolve gets 502 naming it, and SOCKS replies 0x04', async () => {
  const resolve = async (host: string): Promise<string[]> => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  const proxy = await proxyWith({ allow: ['gone.test'] }, { resolve });
  const answer = await forward(proxy, 'http://gone.test/');
  assert.is(answer.status, 502);
  assert.is(answer.headers['x-ptc-network'], 'ptc network proxy: cannot resolve gone.test (ENOTFOUND)');
  const { code, socket } = await socks(proxy, { type: 3, host: 'gone.test' }, 80);
  assert.is(code, 0x04);
  socket.destroy();
});

test('an allowed destination that refuses the connection gets 502 / SOCKS 0x05', async () => {
  const spare = createTcpServer();
  const port = await listen(spare);
  spare.close();
  await once(spare, 'close');
  const proxy = await proxyWith({ allow: [`127.0.0.1:${port}`] });
  const answer = await forward(proxy, `http://127.0.0.1:${port}/`);
  assert.is(answer.status, 502);
  assert.is(answer.headers['x-ptc-network'], `ptc network proxy: cannot reach 127.0.0.1:${port} (ECONNREFUSED)`);
  const { code, socket } = await socks(proxy, { type: 1, host: '127.0.0.1' }, port);
  assert.is(code, 0x05);
  socket.destroy();
});

test('wildcard and CIDR rules through the proxy', async () => {
  const resolve = async (): Promise<string[]> => ['127.0.0.1'];
  const proxy = await proxyWith({ allow: [`*.local.test:${ports.web}`, `127.0.0.0/8:${ports.web}`] }, { resolve });
  assert.is((await forward(proxy, `http://deep.a.local.test:${ports.web}/w`)).body.toString(), 'hello /w');
  assert.is((await forward(proxy, `http://local.test:${ports.web}/w`)).status, 403);
  assert.is((await forward(proxy, `http://127.0.0.1:${ports.web}/c`)).body.toString(), 'hello /c');
  assert.is((await forward(proxy, `http://127.0.0.1:${ports.other}/c`)).status, 403);
  assert.equal(proxy.report(), {
    mode: 'allowlist',
    allowed: [
      { host: 'deep.a.local.test', port: ports.web, count: 1 },
      { host: '127.0.0.1', port: ports.web, count: 1 },
    ],
    denied: [
      { host: 'local.test', port: ports.web, count: 1 },
      { host: '127.0.0.1', port: ports.other, count: 1 },
    ],
  });
});

test('reset() starts the counts afresh; report() returns copies', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  await forward(proxy, `http://127.0.0.1:${ports.web}/`);
  await forward(proxy, `http://127.0.0.1:${ports.other}/`);
  const before = proxy.report();
  proxy.reset();
  assert.equal(proxy.report(), { mode: 'allowlist', allowed: [], denied: [] });
  await forward(proxy, `http://127.0.0.1:${ports.web}/`);
  assert.equal(proxy.report(), { mode: 'allowlist', allowed: [{ host: '127.0.0.1', port: ports.web, count: 1 }], denied: [] });
  assert.equal(before.allowed, [{ host: '127.0.0.1', port: ports.web, count: 1 }]);
  before.allowed[0]!.count = 99;
  assert.is(proxy.report().allowed[0]!.count, 1);
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
    const socketPath = join(dir, `bad-${serial++}.sock`);
    const error = await rejection(startNetworkProxy(options(socketPath) as Parameters<typeof startNetworkProxy>[0]));
    assert.instance(error, TypeError);
    assert.is(error.message, message);
    assert.not.ok(existsSync(socketPath));
  });
}

test('close() ends open tunnels and forwarded connections on both sides and removes the socket file', async () => {
  // The earlier proxies' keep-alive connections would otherwise stay open on the servers.
  for (const earlier of proxies.splice(0)) await earlier.close();
  await drained(web, 'web');
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.echo}`, `127.0.0.1:${ports.web}`] });
  const tunnel = await connectTunnel(proxy, `127.0.0.1:${ports.echo}`);
  const viaSocks = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.echo);
  const agent = new Agent({ keepAlive: true });
  await forward(proxy, `http://127.0.0.1:${ports.web}/`, agent);
  assert.is(await connections(echo), 2);
  const ends = [once(tunnel.socket, 'close'), once(viaSocks.socket, 'close')];
  tunnel.socket.resume();
  viaSocks.socket.resume();
  await proxy.close();
  await Promise.all(ends);
  agent.destroy();
  assert.not.ok(existsSync(proxy.socketPath));
  await drained(echo, 'echo');
  await drained(web, 'web');
  await proxy.close(); // idempotent
});

test('a client that goes away mid-response ends the upstream response too', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.stream}`] });
  const ended = once(streamed, 'response-closed');
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
  assert.ok(answer.startsWith('HTTP/1.1 501 Not Implemented\r\n'), answer);
  assert.ok(answer.endsWith('\r\n\r\nptc network proxy: protocol upgrades are not forwarded; connect with CONNECT instead\n'), answer);
  upgrade.destroy();
  assert.equal(proxy.report(), { mode: 'allowlist', allowed: [], denied: [] });
});

test('no connection is left open on any server', async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const [name, server] of Object.entries({ web, other, secure, echo, closed, streamed })) await drained(server, name);
});

test.run();

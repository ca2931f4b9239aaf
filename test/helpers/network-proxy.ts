// Loopback servers and clients for the network proxy suites: an HTTP origin that answers and
// one no rule names, an HTTPS origin with the fixture certificate, TCP echo and refusal servers,
// an endless stream; clients for absolute-form HTTP, CONNECT, SOCKS5 and curl.
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, request, type Agent, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseNetworkRules, startNetworkProxy, type NetworkProxy, type NetworkRules } from '../../host/sandbox/network/index.ts';

export const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'network');
export const CERT = readFileSync(join(FIXTURES, 'localhost-cert.pem'));
const KEY = readFileSync(join(FIXTURES, 'localhost-key.pem'));
export const LOOPBACK = 'default: loopback addresses are denied unless named';
export const BIG = Buffer.alloc(4 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz');

let dir = '';
export type Servers = {
  web: HttpServer; // allowed HTTP
  other: HttpServer; // HTTP on a port no rule names
  secure: Server; // HTTPS
  echo: Server; // raw TCP echo, allowed
  closed: Server; // raw TCP, denied
  streamed: HttpServer; // an endless response, written as fast as the reader takes it
};
/** Filled by setUp(). */
export const servers = {} as Servers;
export const ports = { web: 0, other: 0, secure: 0, echo: 0, closed: 0, stream: 0 };
/** Every proxy proxyWith() started; tearDown() closes those still open. */
export const proxies: NetworkProxy[] = [];

export async function listen<T extends Server>(server: T): Promise<number> {
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

/** Starts the loopback servers and the directory for the proxies' sockets. */
export async function setUp(): Promise<void> {
  dir = await mkdtemp(join(tmpdir(), 'ptc-netproxy-'));
  const streamed = createHttpServer((_req, res) => {
    const chunk = Buffer.alloc(64 * 1024, 'z');
    const pump = (): void => {
      while (res.write(chunk));
    };
    res.on('drain', pump);
    res.on('close', () => streamed.emit('response-closed'));
    pump();
  });
  Object.assign(servers, {
    web: createHttpServer(serve),
    other: createHttpServer(serve),
    secure: createHttpsServer({ cert: CERT, key: KEY }, serve),
    echo: createTcpServer((socket) => socket.pipe(socket)),
    closed: createTcpServer((socket) => socket.end('should never be reached')),
    streamed,
  });
  ports.web = await listen(servers.web);
  ports.other = await listen(servers.other);
  ports.secure = await listen(servers.secure);
  ports.echo = await listen(servers.echo);
  ports.closed = await listen(servers.closed);
  ports.stream = await listen(servers.streamed);
}

export async function tearDown(): Promise<void> {
  for (const proxy of proxies) await proxy.close();
  for (const server of Object.values(servers)) server.close();
  await rm(dir, { recursive: true, force: true });
}

/** A fresh path for a proxy's socket. */
export function socketPath(name: string): string {
  return join(dir, `${name}-${serial++}.sock`);
}

let serial = 0;
export async function proxyWith(rules: NetworkRules, options: { resolve?: (host: string) => Promise<string[]>; headTimeoutMs?: number; maxConnections?: number } = {}): Promise<NetworkProxy> {
  const proxy = await startNetworkProxy({ rules: parseNetworkRules(rules), socketPath: socketPath('proxy'), ...options });
  proxies.push(proxy);
  return proxy;
}

export type Answer = { status: number; reason: string; headers: Record<string, string | string[] | undefined>; body: Buffer };

/** One absolute-form request to the proxy's Unix socket, as an HTTP client configured with the proxy sends it. */
export function forward(proxy: NetworkProxy, url: string, agent?: Agent, host = /^\w+:\/\/([^/]*)/.exec(url)?.[1] ?? 'none'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: proxy.socketPath, path: url, headers: { host }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, reason: res.statusMessage!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Reads from `socket` until `done(bytes so far)` holds. */
export function readUntil(socket: Socket, done: (data: Buffer) => boolean): Promise<Buffer> {
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
    if (socket.readableEnded) return resolve(data);
    socket.on('data', onData).once('end', onEnd).once('error', reject);
    socket.resume();
  });
}

export const headEnd = (data: Buffer): boolean => data.includes('\r\n\r\n');

/** Sends CONNECT; resolves with the response head and whatever followed it in the same read. */
export async function connectTunnel(proxy: NetworkProxy, authority: string): Promise<{ socket: Socket; head: string; after: string }> {
  const socket = connect(proxy.socketPath);
  await once(socket, 'connect');
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const data = (await readUntil(socket, headEnd)).toString('latin1');
  const end = data.indexOf('\r\n\r\n') + 4;
  return { socket, head: data.slice(0, end), after: data.slice(end) };
}

/** A SOCKS5 CONNECT with no authentication; resolves with the reply code and the open socket. */
export async function socks(proxy: NetworkProxy, address: { type: 1 | 3 | 4; host: string }, port: number, command = 0x01): Promise<{ code: number; socket: Socket }> {
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

export function curl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['--silent', '--show-error', '--max-time', '20', ...args], { encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : Number((error as { code?: unknown }).code), stdout, stderr });
    });
  });
}

/** A loopback TCP port that pipes to the proxy's socket: what the sandbox's forwarder does for clients that speak only TCP. */
export async function tcpFront(proxy: NetworkProxy): Promise<{ port: number; close(): void }> {
  const front = createTcpServer((client) => {
    const upstream = connect(proxy.socketPath);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const port = await listen(front);
  return { port, close: () => front.close() };
}

export function connections(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

/** Waits (polling) until `server` has no open connection; fails after a generous bound. */
export async function drained(server: Server, name: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await connections(server)) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.unreachable(`${name} still has ${await connections(server)} open connection(s)`);
}

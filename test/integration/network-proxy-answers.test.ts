// The HTTP forward path reads destinations' answers by hand: every framing of RFC 9112 §6 (a length,
// chunked with extensions and trailers, close-delimited, no body for HEAD, 204, 304), interim 1xx
// answers, bad answers (502 naming why), which upstream connections are kept alive and reused, each
// request on a kept-alive client connection checked on its own, and a slow client. The destination
// is a raw TCP server that writes scripted bytes, one byte at a time where framing could split.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { BIG, LOOPBACK, connections, drained, listen, proxies, proxyWith, readUntil, servers, setUp, tearDown, ports } from '../helpers/network-proxy.ts';

test.before(setUp);
test.after(tearDown);

/** A destination that answers every request head it reads with `script(method, path)`, written byte by byte when `trickle`, and closes after an answer that says so. */
async function scripted(script: (method: string, path: string) => string, trickle = false): Promise<{ server: Server; port: number; accepted: () => number }> {
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    let data = '';
    socket.on('error', () => {});
    socket.on('data', async (chunk) => {
      data += chunk.toString('latin1');
      for (let end = data.indexOf('\r\n\r\n'); end !== -1; end = data.indexOf('\r\n\r\n')) {
        const [method, path] = data.slice(0, end).split(' ') as [string, string];
        data = data.slice(end + 4);
        const answer = Buffer.from(script(method, path), 'latin1');
        if (!trickle) socket.write(answer);
        else for (const byte of answer) socket.write(Buffer.from([byte]));
        // An answer that says it closes, does.
        if (/^HTTP\/1\.0|\r\nConnection: close\r\n/.test(answer.toString('latin1'))) socket.end();
      }
    });
  });
  const port = await listen(server);
  return { server, port, accepted: () => accepted };
}

/** Writes raw requests on one client connection to the proxy and reads `count` answers (parsed by node:http's rules, simply). */
async function exchangeOn(socket: Socket, request: string): Promise<string> {
  socket.write(request);
  return (await readUntil(socket, (data) => complete(data.toString('latin1')))).toString('latin1');
}

/** Whether `text` holds one whole response: head, then a body by content-length or chunked, or none. */
function complete(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return false;
  const head = text.slice(0, end).toLowerCase();
  const body = text.slice(end + 4);
  const length = /\r\ncontent-length: (\d+)/.exec(head);
  if (/^http\/1\.1 (204|304)/.test(head) || /\r\nx-kind: head-request(\r\n|$)/.test(head)) return true;
  if (length !== null) return body.length >= Number(length[1]);
  if (head.includes('transfer-encoding: chunked')) return body.endsWith('0\r\n\r\n');
  return false;
}

async function client(proxySocket: string): Promise<Socket> {
  const socket = connect(proxySocket);
  await once(socket, 'connect');
  return socket;
}

const get = (port: number, path: string, method = 'GET') => `${method} http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
/** The body of one response, with chunked framing undone. */
function bodyOf(answer: string): string {
  const end = answer.indexOf('\r\n\r\n');
  let body = answer.slice(end + 4);
  if (!/\r\ntransfer-encoding: chunked\r\n/i.test(answer.slice(0, end + 2))) return body;
  let decoded = '';
  for (let size = parseInt(body, 16); size > 0; size = parseInt(body, 16)) {
    const start = body.indexOf('\r\n') + 2;
    decoded += body.slice(start, start + size);
    body = body.slice(start + size + 2);
  }
  return decoded;
}
const statusOf = (answer: string) => answer.slice(0, answer.indexOf('\r\n'));

const CHUNKED = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Kind: chunked\r\n\r\n5;name=value\r\nhello\r\n1\r\n,\r\n6\r\n world\r\n0\r\nX-Trailer: dropped\r\n\r\n';
const cases: Array<[name: string, answer: string, expect: { status: string; body: string; reused: boolean; header?: string; method?: string }]> = [
  ['a length', 'HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-Kind: length\r\n\r\nhello world', { status: 'HTTP/1.1 200 OK', body: 'hello world', reused: true, header: 'x-kind: length' }],
  ['chunked, with extensions and trailers', CHUNKED, { status: 'HTTP/1.1 200 OK', body: 'hello, world', reused: true, header: 'x-kind: chunked' }],
  ['until the destination closes', 'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end', { status: 'HTTP/1.1 200 OK', body: 'until the end', reused: false }],
  ['HTTP/1.0 without keep-alive', 'HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold', { status: 'HTTP/1.1 200 OK', body: 'old', reused: false }],
  ['204 No Content', 'HTTP/1.1 204 No Content\r\n\r\n', { status: 'HTTP/1.1 204 No Content', body: '', reused: true }],
  ['304 Not Modified with a length', 'HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n', { status: 'HTTP/1.1 304 Not Modified', body: '', reused: true }],
  ['HEAD with a length', 'HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nX-Kind: head-request\r\n\r\n', { status: 'HTTP/1.1 200 OK', body: '', reused: true, method: 'HEAD', header: 'content-length: 1234' }],
  ['interim 100 and 103 before the answer', 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok', { status: 'HTTP/1.1 201 Created', body: 'ok', reused: true }],
];

for (const [name, answer, expect] of cases) {
  for (const trickle of [false, true]) {
    test(`HTTP forward answer: ${name}${trickle ? ', a byte at a time' : ''}`, async () => {
      const origin = await scripted(() => answer, trickle);
      try {
        const proxy = await proxyWith({ allow: [`127.0.0.1:${origin.port}`] });
        const socket = await client(proxy.socketPath);
        for (let i = 0; i < 2; i++) {
          const got = await exchangeOn(socket, get(origin.port, `/r${i}`, expect.method));
          assert.is(statusOf(got), expect.status, got);
          assert.is(bodyOf(got), expect.body, got);
          if (expect.header !== undefined) assert.ok(got.toLowerCase().includes(`\r\n${expect.header}\r\n`), got);
          assert.not.ok(/x-trailer|\r\nconnection: close/i.test(got.slice(0, got.indexOf('\r\n\r\n'))), got);
        }
        socket.destroy();
        assert.is(origin.accepted(), expect.reused ? 1 : 2);
        assert.equal(proxy.report().allowed, [{ host: '127.0.0.1', port: origin.port, count: 2 }]);
      } finally {
        for (const proxy of proxies.splice(0)) await proxy.close();
        origin.server.close();
      }
    });
  }
}

const bad: Array<[name: string, answer: string, code: string]> = [
  ['a status line that is not HTTP', 'SSH-2.0-OpenSSH\r\n\r\n', 'HPE_INVALID_RESPONSE'],
  ['a folded header line', 'HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n', 'HPE_INVALID_RESPONSE'],
  ['two different lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd', 'HPE_INVALID_RESPONSE'],
  ['a head over 16 KiB', `HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(17 * 1024)}\r\n\r\n`, 'HPE_HEADER_OVERFLOW'],
  ['101 unasked', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n', 'HPE_INVALID_RESPONSE'],
  ['a close before any answer', '', 'ECONNRESET'],
];

for (const [name, answer, code] of bad) {
  test(`HTTP forward answer: ${name} gets 502 naming the destination and why; the connection is not reused`, async () => {
    const origin = await scripted(() => answer);
    if (answer === '') origin.server.on('connection', (socket) => socket.on('data', () => socket.end()));
    try {
      const proxy = await proxyWith({ allow: [`127.0.0.1:${origin.port}`] });
      const socket = await client(proxy.socketPath);
      const message = `ptc network proxy: cannot reach 127.0.0.1:${origin.port} (${code})`;
      const got = await exchangeOn(socket, get(origin.port, '/'));
      assert.is(statusOf(got), `HTTP/1.1 502 ${message}`);
      assert.is(bodyOf(got), `${message}\n`);
      await drained(origin.server, name);
    } finally {
      for (const proxy of proxies.splice(0)) await proxy.close();
      origin.server.close();
    }
  });
}

test('HTTP forward answer: a destination that closes mid-body cuts the client off too, rather than leaving it waiting', async () => {
  const origin = await scripted(() => 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..');
  origin.server.on('connection', (socket) => socket.on('data', () => setTimeout(() => socket.end(), 20)));
  try {
    const proxy = await proxyWith({ allow: [`127.0.0.1:${origin.port}`] });
    const socket = await client(proxy.socketPath);
    socket.write(get(origin.port, '/'));
    const got = (await readUntil(socket, () => false)).toString('latin1');
    assert.ok(got.startsWith('HTTP/1.1 200 OK\r\n'), got);
    assert.is(bodyOf(got), 'only ten..');
    assert.ok(socket.readableEnded);
  } finally {
    for (const proxy of proxies.splice(0)) await proxy.close();
    origin.server.close();
  }
});

test('HTTP forward: on one kept-alive client connection, each request is checked on its own; the denied one never reaches its server', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  let reachedOther = 0;
  const count = (): void => void reachedOther++;
  servers.other.on('connection', count);
  try {
    const socket = await client(proxy.socketPath);
    const first = await exchangeOn(socket, get(ports.web, '/one'));
    const denied = await exchangeOn(socket, get(ports.other, '/two'));
    const again = await exchangeOn(socket, get(ports.web, '/three'));
    socket.destroy();
    assert.is(bodyOf(first), 'hello /one');
    const message = `blocked by ptc network policy: 127.0.0.1:${ports.other} is not allowed (${LOOPBACK})`;
    assert.is(statusOf(denied), `HTTP/1.1 403 ${message}`);
    assert.is(bodyOf(again), 'hello /three');
    assert.is(reachedOther, 0);
    assert.equal(proxy.report(), { mode: 'allowlist', allowed: [{ host: '127.0.0.1', port: ports.web, count: 2 }], denied: [{ host: '127.0.0.1', port: ports.other, count: 1 }] });
  } finally {
    servers.other.off('connection', count);
  }
});

test('HTTP forward: an idle kept-alive upstream connection the destination closes is dropped, and the next request opens a new one', async () => {
  const origin = await scripted(() => 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  const sockets: Socket[] = [];
  origin.server.on('connection', (socket) => sockets.push(socket));
  try {
    const proxy = await proxyWith({ allow: [`127.0.0.1:${origin.port}`] });
    const socket = await client(proxy.socketPath);
    assert.is(bodyOf(await exchangeOn(socket, get(origin.port, '/a'))), 'ok');
    sockets[0]!.end();
    await drained(origin.server, 'scripted');
    assert.is(bodyOf(await exchangeOn(socket, get(origin.port, '/b'))), 'ok');
    assert.is(origin.accepted(), 2);
    socket.destroy();
  } finally {
    for (const proxy of proxies.splice(0)) await proxy.close();
    origin.server.close();
  }
});

test('HTTP forward: a client that reads slowly still gets a 4 MB body whole (the destination waits for it)', async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const socket = await client(proxy.socketPath);
  socket.write(get(ports.web, '/big'));
  const chunks: Buffer[] = [];
  let received = 0;
  const head = `HTTP/1.1 200 OK\r\n`;
  await new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      // Pausing lets the socket buffers fill, so the proxy has to wait for drain.
      socket.pause();
      setTimeout(() => socket.resume(), 2);
      const text = Buffer.concat(chunks).toString('latin1', 0, 4096);
      const end = text.indexOf('\r\n\r\n');
      if (end !== -1 && received >= end + 4 + BIG.length) resolve();
    });
    socket.once('error', reject);
  });
  socket.destroy();
  const all = Buffer.concat(chunks);
  const start = all.indexOf('\r\n\r\n') + 4;
  assert.ok(all.toString('latin1', 0, head.length) === head);
  assert.is(all.length - start, BIG.length);
  assert.is(createHash('sha256').update(all.subarray(start)).digest('hex'), createHash('sha256').update(BIG).digest('hex'));
});

test('no connection is left open on any server', async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const [name, server] of Object.entries(servers)) await drained(server, name);
  void connections;
});

test.run();

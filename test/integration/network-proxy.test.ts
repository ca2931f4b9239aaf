// The network allowlist proxy end to end, against servers on loopback only: HTTP forward with
// keep-alive, HTTPS through CONNECT to a TLS server with a fixture certificate, SOCKS5 raw TCP,
// curl and Node's own clients as child processes, names that resolve to denied addresses,
// wildcard and CIDR rules, the report and reset(); no server keeps a connection at the end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Agent, request } from 'node:http';
import { once } from 'node:events';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { BIG, CERT, FIXTURES, LOOPBACK, connectTunnel, curl, drained, forward, listen, proxies, proxyWith, readUntil, servers, setUp, socks, tearDown, tcpFront, ports, type Answer } from '../helpers/network-proxy.ts';

test.before(setUp);
test.after(tearDown);

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
    assert.is(denied.reason, message);
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
  servers.web.on('connection', count);
  const clientSockets = new Set<Socket>();
  agent.on('free', (socket: Socket) => clientSockets.add(socket));
  try {
    for (let i = 0; i < 3; i++) assert.is((await forward(proxy, `http://127.0.0.1:${ports.web}/n${i}`, agent)).body.toString(), `hello /n${i}`);
  } finally {
    servers.web.off('connection', count);
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
        res.on('end', () => resolve({ status: res.statusCode!, reason: res.statusMessage!, headers: res.headers, body: Buffer.concat(chunks) }));
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
  // The same address in IPv6 clothing is the same destination; IPv6 loopback is named in brackets.
  const mapped = await forward(proxy, 'http://[::ffff:169.254.169.254]/');
  assert.is(mapped.reason, 'blocked by ptc network policy: 169.254.169.254:80 is not allowed (default: link-local and metadata addresses are denied unless named)');
  const v6 = await forward(proxy, 'http://[0:0::1]:8080/');
  assert.is(v6.reason, `blocked by ptc network policy: [::1]:8080 is not allowed (${LOOPBACK})`);
  assert.equal(proxy.report().denied, [
    { host: '169.254.169.254', port: 80, count: 2 },
    { host: '::1', port: 8080, count: 1 },
  ]);
});

test("Node's own clients behind the env proxy see the reason: fetch() in the status text and body, https in its error", async () => {
  const proxy = await proxyWith({ allow: [`127.0.0.1:${ports.web}`] });
  const front = await tcpFront(proxy);
  const program = `
    const plain = await fetch('http://169.254.169.254/latest/meta-data/');
    console.log(plain.status, plain.statusText, '|', (await plain.text()).trim());
    const https = await import('node:https');
    await new Promise((done) => https.get('https://127.0.0.1:${ports.other}/', () => done()).on('error', (error) => done(console.log(error.code, error.message))));
    console.log((await (await fetch('http://127.0.0.1:${ports.web}/node')).text()));
  `;
  try {
    const proxyUrl = `http://127.0.0.1:${front.port}`;
    const printed = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--input-type=module', '-e', program], { env: { PATH: process.env.PATH, NODE_USE_ENV_PROXY: '1', HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl } }, (error, stdout, stderr) => (error ? reject(new Error(stderr, { cause: error })) : resolve(stdout)));
    });
    const metadata = 'blocked by ptc network policy: 169.254.169.254:80 is not allowed (default: link-local and metadata addresses are denied unless named)';
    assert.equal(printed.split('\n'), [
      `403 ${metadata} | ${metadata}`,
      `ERR_PROXY_TUNNEL Failed to establish tunnel to 127.0.0.1:${ports.other} via ${proxyUrl}: HTTP/1.1 403 blocked by ptc network policy: 127.0.0.1:${ports.other} is not allowed (${LOOPBACK})`,
      'hello /node',
      '',
    ]);
  } finally {
    front.close();
  }
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
  assert.ok(denied.head.startsWith(`HTTP/1.1 403 ${message}\r\n`), denied.head);
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
  servers.closed.on('connection', onConnection);
  try {
    const allowed = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.echo);
    assert.is(allowed.code, 0x00);
    allowed.socket.write('ping');
    assert.is((await readUntil(allowed.socket, (data) => data.length >= 4)).toString(), 'ping');
    allowed.socket.destroy();
    const denied = await socks(proxy, { type: 1, host: '127.0.0.1' }, ports.closed);
    assert.is(denied.code, 0x02);
    assert.is((await readUntil(denied.socket, () => false)).length, 0); // then the proxy closes
    denied.socket.destroy();
    const byName = await socks(proxy, { type: 3, host: 'localhost' }, ports.echo);
    assert.is(byName.code, 0x02);
    byName.socket.destroy();
    const v6 = await socks(proxy, { type: 4, host: '::1' }, ports.echo);
    assert.is(v6.code, 0x02);
    v6.socket.destroy();
  } finally {
    servers.closed.off('connection', onConnection);
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
  servers.other.on('request', onRequest);
  const rebind = await forward(proxy, `http://rebind.example.com:${ports.other}/`);
  servers.other.off('request', onRequest);
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

test('no connection is left open on any server', async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const [name, server] of Object.entries(servers)) await drained(server, name);
});

test.run();

// `ptc mcp --http`'s address: PORT or HOST:PORT (IPv6 in brackets), loopback by default, and which
// addresses count as loopback (the others need a bearer token); ptc's names for upstream
// resources and prompts, which no two upstreams can share.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isLoopback, parseListen } from '../../../../host/mcp/http.ts';
import { promptName, resourceUri } from '../../../../host/mcp/passthrough.ts';

test('parseListen: a port alone is on 127.0.0.1; a host, an IPv6 address in brackets; anything else names the value', () => {
  assert.equal(parseListen('8931'), { host: '127.0.0.1', port: 8931 });
  assert.equal(parseListen('0'), { host: '127.0.0.1', port: 0 });
  assert.equal(parseListen('0.0.0.0:80'), { host: '0.0.0.0', port: 80 });
  assert.equal(parseListen('[::1]:8931'), { host: '::1', port: 8931 });
  assert.equal(parseListen('localhost:1'), { host: 'localhost', port: 1 });
  for (const bad of ['', 'x', '65536', ':80', '::1:80', '1.2.3.4:', '80:1.2.3.4', '-1']) {
    assert.throws(() => parseListen(bad), (error: Error) => error.message === `--http must be PORT or HOST:PORT (an IPv6 address in brackets), with a port from 0 to 65535, got ${JSON.stringify(bad)}`, bad);
  }
});

test('isLoopback: 127.0.0.0/8, ::1 and localhost; not any, private or public addresses', () => {
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost']) assert.ok(isLoopback(host), host);
  for (const host of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.1', '8.8.8.8', '127.example.com', 'localhost.example.com', '::ffff:10.0.0.1']) assert.not.ok(isLoopback(host), host);
});

test('resource URIs and prompt names: the upstream percent-encoded, then "/", so two upstreams never give the same name', () => {
  assert.is(resourceUri('everything', 'test://static/resource/1'), 'ptc:everything/test://static/resource/1');
  assert.is(promptName('everything', 'simple_prompt'), 'everything/simple_prompt');
  // Without the encoding, "a/b" + "c" and "a" + "b/c" would both be "a/b/c".
  assert.is.not(promptName('a/b', 'c'), promptName('a', 'b/c'));
  assert.is(promptName('a/b', 'c'), 'a%2Fb/c');
  assert.is.not(resourceUri('a/b', 'c'), resourceUri('a', 'b/c'));
});

test.run();

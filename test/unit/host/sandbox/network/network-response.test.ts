// The proxy's reading of destinations' answers (host/sandbox/network/response.ts): heads, the
// framing of a body (RFC 9112 §6.3), keep-alive, and chunked framing fed at every split point.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createChunkedReader, framingOf, keepsAlive, parseHead } from '../../../../../host/sandbox/network/response.ts';

const head = (text: string) => parseHead(Buffer.from(text, 'latin1'), 16 * 1024)!;

test('parseHead: status, reason, raw header pairs and the head length; undefined until the blank line', () => {
  const text = 'HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nX-Two:  spaced value \r\n\r\nabc';
  assert.equal(parseHead(Buffer.from(text), 1024), { minor: 1, status: 404, reason: 'Not Found', rawHeaders: ['Content-Length', '3', 'X-Two', 'spaced value'], bytes: text.length - 3 });
  assert.equal(head('HTTP/1.0 200\r\n\r\n'), { minor: 0, status: 200, reason: '', rawHeaders: [], bytes: 16 });
  assert.is(parseHead(Buffer.from('HTTP/1.1 200 OK\r\nA: b\r\n'), 1024), undefined);
});

const malformed: Array<[string, string, string]> = [
  ['not HTTP', 'SSH-2.0-OpenSSH\r\n\r\n', 'invalid response from the destination: bad status line "SSH-2.0-OpenSSH"'],
  ['HTTP/2 text', 'HTTP/2 200 OK\r\n\r\n', 'invalid response from the destination: bad status line "HTTP/2 200 OK"'],
  ['a folded line', 'HTTP/1.1 200 OK\r\nA: one\r\n two\r\n\r\n', 'invalid response from the destination: bad header line " two"'],
  ['a name with a space', 'HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n', 'invalid response from the destination: bad header line "Bad Name: x"'],
  ['a NUL in a value', 'HTTP/1.1 200 OK\r\nA: x\0y\r\n\r\n', 'invalid response from the destination: bad header line "A: x\\u0000y"'],
];
for (const [name, text, message] of malformed) {
  test(`parseHead rejects ${name} with HPE_INVALID_RESPONSE`, () => {
    try {
      parseHead(Buffer.from(text, 'latin1'), 1024);
      assert.unreachable('parsed');
    } catch (error) {
      assert.is((error as Error).message, message);
      assert.is((error as { code?: string }).code, 'HPE_INVALID_RESPONSE');
    }
  });
}

test('parseHead: a head over the bound is HPE_HEADER_OVERFLOW, whether or not its end has arrived', () => {
  for (const text of [`HTTP/1.1 200 OK\r\nA: ${'x'.repeat(100)}\r\n\r\n`, `HTTP/1.1 200 OK\r\nA: ${'x'.repeat(100)}`]) {
    try {
      parseHead(Buffer.from(text), 64);
      assert.unreachable('parsed');
    } catch (error) {
      assert.is((error as { code?: string }).code, 'HPE_HEADER_OVERFLOW');
      assert.is((error as Error).message, 'invalid response from the destination: the head is over 64 bytes');
    }
  }
});

const framings: Array<[string, string, string, unknown]> = [
  ['a length', 'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n', 'GET', { kind: 'length', bytes: 12 }],
  ['repeated equal lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n', 'GET', { kind: 'length', bytes: 5 }],
  ['chunked last', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 9\r\n\r\n', 'GET', { kind: 'chunked' }],
  ['an encoding that is not chunked last', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n', 'GET', { kind: 'close' }],
  ['neither', 'HTTP/1.1 200 OK\r\n\r\n', 'GET', { kind: 'close' }],
  ['HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n', 'HEAD', { kind: 'none' }],
  ['204', 'HTTP/1.1 204 No Content\r\n\r\n', 'GET', { kind: 'none' }],
  ['304 with a length', 'HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n', 'GET', { kind: 'none' }],
];
for (const [name, text, method, expected] of framings) {
  test(`framingOf: ${name}`, () => assert.equal(framingOf(head(text), method), expected));
}

test('framingOf: conflicting or non-numeric lengths are malformed', () => {
  for (const value of ['3\r\nContent-Length: 4', '-1', '0x10', '1e3', '']) {
    assert.throws(() => framingOf(head(`HTTP/1.1 200 OK\r\nContent-Length: ${value}\r\n\r\n`), 'GET'), (error: Error) => error.message.startsWith('invalid response from the destination: bad content-length'));
  }
});

test('keepsAlive: HTTP/1.1 unless it says close; HTTP/1.0 only when it says keep-alive; never until-close', () => {
  const table: Array<[string, boolean]> = [
    ['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', true],
    ['HTTP/1.1 200 OK\r\nConnection: foo, Close\r\nContent-Length: 0\r\n\r\n', false],
    ['HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n', false],
    ['HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n', true],
    ['HTTP/1.1 200 OK\r\n\r\n', false],
  ];
  for (const [text, expected] of table) {
    const parsed = head(text);
    assert.is(keepsAlive(parsed, framingOf(parsed, 'GET')), expected, text);
  }
});

test('createChunkedReader: the same data and end at every split of the body into two reads', () => {
  const body = Buffer.from('5;ext="a b"\r\nhello\r\n1\r\n,\r\nA\r\n world 123\r\n0\r\nTrailer: x\r\n\r\nNEXT');
  const end = body.length - 4;
  for (let split = 0; split <= body.length; split++) {
    const reader = createChunkedReader();
    const pieces: Buffer[] = [];
    const first = reader.feed(body.subarray(0, split), (piece) => pieces.push(Buffer.from(piece)));
    const taken = first !== undefined ? first : split + reader.feed(body.subarray(split), (piece) => pieces.push(Buffer.from(piece)))!;
    assert.is(Buffer.concat(pieces).toString(), 'hello, world 123', `split at ${split}`);
    assert.is(taken, end, `split at ${split}`);
  }
});

test('createChunkedReader: bad framing throws HPE_INVALID_RESPONSE', () => {
  for (const text of ['zz\r\n', '5\nhello', '3\r\nabcdef\r\n', `${'1'.repeat(13)}\r\n`]) {
    assert.throws(() => createChunkedReader().feed(Buffer.from(text), () => {}), (error: Error & { code?: string }) => error.code === 'HPE_INVALID_RESPONSE', text);
  }
});

test.run();

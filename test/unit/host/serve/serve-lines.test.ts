// The framing of `ptc serve`: lines split across chunks, CRLF, blank lines, and an oversized line
// that is skipped without being kept while the lines after it still arrive.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLineSplitter } from '../../../../host/serve/lines.ts';

function split(chunks: string[], limit = 10): Array<string | [number, number]> {
  const seen: Array<string | [number, number]> = [];
  const splitter = createLineSplitter({ maxLineBytes: () => limit, onLine: (line) => seen.push(line), onOversized: (bytes, max) => seen.push([bytes, max]) });
  for (const chunk of chunks) splitter.push(Buffer.from(chunk));
  splitter.end();
  return seen;
}

const cases: Array<[string, string[], Array<string | [number, number]>]> = [
  ['one line a chunk', ['a\n', 'b\n'], ['a', 'b']],
  ['several lines in one chunk', ['a\nb\nc\n'], ['a', 'b', 'c']],
  ['a line across chunks', ['ab', 'cd', 'e\n'], ['abcde']],
  ['CRLF and blank lines', ['a\r\n\n  \nb\n'], ['a', 'b']],
  ['a last line without a newline', ['a\nb'], ['a', 'b']],
  ['a multi-byte character split across chunks', [], ['€']],
  ['exactly the limit', ['0123456789\n'], ['0123456789']],
  ['an oversized line, then the next', ['0123456789x\nok\n'], [[11, 10], 'ok']],
  ['an oversized line across chunks', ['01234567', '89abc', 'def\nok\n'], [[16, 10], 'ok']],
  ['an oversized last line', ['ok\n0123456789xyz'], ['ok', [13, 10]]],
];

for (const [name, chunks, expected] of cases) {
  test(name, () => {
    if (name.startsWith('a multi-byte')) {
      // Push raw bytes: the euro sign's three bytes split 1 + 2.
      const seen: string[] = [];
      const splitter = createLineSplitter({ maxLineBytes: () => 10, onLine: (line) => seen.push(line), onOversized: () => seen.push('oversized') });
      splitter.push(Uint8Array.of(0xe2));
      splitter.push(Uint8Array.of(0x82, 0xac, 0x0a));
      assert.equal(seen, expected);
      return;
    }
    assert.equal(split(chunks), expected);
  });
}

test('the limit is read again for every line, so initialize can change it', () => {
  let limit = 3;
  const seen: Array<string | number> = [];
  const splitter = createLineSplitter({ maxLineBytes: () => limit, onLine: (line) => seen.push(line), onOversized: (bytes) => seen.push(bytes) });
  splitter.push(Buffer.from('abcd\n'));
  limit = 10;
  splitter.push(Buffer.from('abcd\n'));
  assert.equal(seen, [4, 'abcd']);
});

test.run();

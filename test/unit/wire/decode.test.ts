// The iterative lossless-JSON decoder: the same values JSON.parse gives, integers beyond 2^53 as
// bigint, any nesting depth, and the same answer whether it runs at once or in slices.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeEnvelope, decodeJson, decodeJsonAsync, ASYNC_DECODE_THRESHOLD } from '../../../wire/decode.ts';

// Each text has a 16-digit run, so it takes the iterative parser rather than JSON.parse.
const BIG = '12345678901234567890';
const CASES: Array<[string, unknown]> = [
  [BIG, 12345678901234567890n],
  [`-${BIG}`, -12345678901234567890n],
  ['[9007199254740991, 9007199254740992, 9007199254740993]', [9007199254740991, 9007199254740992n, 9007199254740993n]],
  [`[${BIG}, 1.5, -0, 0, 1e3, 2E-2, 1234567890123456.5, 1e400]`, [12345678901234567890n, 1.5, -0, 0, 1000, 0.02, 1234567890123456.5, Infinity]],
  [`{"a": ${BIG}, "b": "x\\"y\\\\", "c": [true, false, null], "d": {}, "e": []}`, { a: 12345678901234567890n, b: 'x"y\\', c: [true, false, null], d: {}, e: [] }],
  [`["\\u00e9\\ud83d\\ude00", "é😀", ${BIG}]`, ['é😀', 'é😀', 12345678901234567890n]],
  [` \n\t[ ${BIG} , { "k" : [ ] } ] \r\n`, [12345678901234567890n, { k: [] }]],
  [`{"a": 1, "a": ${BIG}}`, { a: 12345678901234567890n }],
  [`["\\\\", "\\\\\\"", ${BIG}]`, ['\\', '\\"', 12345678901234567890n]],
];

for (const [text, expected] of CASES) {
  test(`decodes ${text.slice(0, 60)}`, () => {
    assert.equal(decodeJson(text), expected);
  });
}

test('a "__proto__" key is a member, not the prototype', () => {
  const value = decodeJson(`{"__proto__": {"polluted": ${BIG}}}`) as Record<string, unknown>;
  assert.is(Object.getPrototypeOf(value), Object.prototype);
  assert.equal(Object.keys(value), ['__proto__']);
  assert.equal(Object.getOwnPropertyDescriptor(value, '__proto__')?.value, { polluted: 12345678901234567890n });
});

const BAD: Array<[string, string]> = [
  [`[${BIG},]`, `expected a JSON value at position 22 (found "]")`],
  [`{"a" ${BIG}}`, `expected ':' at position 5 (found "123456789012")`],
  [`[${BIG}`, `expected ',' or ']' at position 21 (found the end of the text)`],
  [`[0${BIG}]`, `expected ',' or ']' at position 2 (found "123456789012")`],
  [`[${BIG}] x`, 'unexpected text after the JSON value at position 23 (found "x")'],
  [`{"a":${BIG},}`, 'expected a string key at position 26 (found "}")'],
  [`[${BIG}, 1.]`, 'expected a digit at position 25 (found "]")'],
  [`[${BIG}, tru]`, 'expected a JSON value at position 23 (found "tru]")'],
  [`["${BIG}`, 'unterminated string at position 1 (found ""12345678901")'],
];

for (const [text, message] of BAD) {
  test(`refuses ${text} with a message naming the position`, () => {
    try {
      decodeJson(text);
      assert.unreachable('no error');
    } catch (error) {
      assert.instance(error, SyntaxError);
      assert.is((error as Error).message, message);
    }
  });
}

test('a raw control character inside a string is refused', () => {
  assert.throws(() => decodeJson(`["a\u0001b", ${BIG}]`), /Bad control character/);
});

const depthOf = (value: unknown): number => {
  let depth = 0;
  while (Array.isArray(value) || (typeof value === 'object' && value !== null)) {
    value = Array.isArray(value) ? value[0] : (value as { a: unknown }).a;
    depth++;
  }
  return depth;
};

for (const depth of [10_000, 100_000, 1_000_000]) {
  test(`decodes arrays and objects nested ${depth} deep`, () => {
    assert.is(depthOf(decodeJson(`${'['.repeat(depth)}${BIG}${']'.repeat(depth)}`)), depth);
    assert.is(depthOf(decodeJson(`${'{"a":'.repeat(depth)}${BIG}${'}'.repeat(depth)}`)), depth);
  });
}

test('text without long digit runs goes through JSON.parse, deep nesting too', () => {
  assert.is(depthOf(decodeJson(`${'['.repeat(100_000)}1${']'.repeat(100_000)}`)), 100_000);
  assert.equal(decodeJson('[1, "x", {"a": null}]'), [1, 'x', { a: null }]);
});

test('decodeJsonAsync gives what decodeJson gives, in slices for long text', async () => {
  const long = `[${`{"n": ${BIG}, "s": "x\\n", "d": [1.5, -0]},`.repeat(40_000)}0]`;
  assert.ok(long.length > ASYNC_DECODE_THRESHOLD);
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 0);
  const sliced = await decodeJsonAsync(long);
  clearInterval(ticker);
  assert.equal(sliced, decodeJson(long));
  assert.ok(ticks > 0, 'the event loop never ran while the long text was decoded');
  const plain = `[${'"abc",'.repeat(300_000)}1]`;
  assert.equal(await decodeJsonAsync(plain), JSON.parse(plain));
  await decodeJsonAsync(`[${BIG},`.repeat(1) + ']').then(() => assert.unreachable('no error'), (error: Error) => assert.instance(error, SyntaxError));
});

test('decodeEnvelope refuses more values than it allows, before building them', () => {
  assert.equal(decodeEnvelope('{"t":"q","m":"output","a":[{"type":"text","text":"hi"}]}', 8), { t: 'q', m: 'output', a: [{ type: 'text', text: 'hi' }] });
  assert.throws(() => decodeEnvelope(`[${'1,'.repeat(1_000_000)}1]`, 1024), /^more than 1024 values at position 2047 \(found "1,1,1,1,1,1,"\)$/);
});

test.run();

// The front ends' result writer is the wire's lossless writer: big integers as digits, -0 with its
// sign where a front end keeps it, members that are undefined left out, any nesting depth (a
// recursive writer overflows near 10,000), and a value that would not survive named, not dropped.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { jsonText } from '../../../../host/index.ts';
import { LossyValueError } from '../../../../wire/json.ts';

const CASES: Array<[string, unknown, string, string]> = [
  // [name, value, text, text with negativeZero]
  ['numbers', [1, -0, 0.5, 1e21, -1e-7, 2 ** 53 - 1], '[1,0,0.5,1e+21,-1e-7,9007199254740991]', '[1,-0,0.5,1e+21,-1e-7,9007199254740991]'],
  ['an integer past 2^53 held as a number keeps its exponent, so it reads back as that number', [2 ** 60], '[1.152921504606847e+18]', '[1.152921504606847e+18]'],
  ['big integers', [10n ** 30n, -5n], '[1000000000000000000000000000000,-5]', '[1000000000000000000000000000000,-5]'],
  ['strings that need escapes', ['a"b\\c', '\n\u2028\u0000', 'é😀'], '["a\\"b\\\\c","\\n\u2028\\u0000","é😀"]', '["a\\"b\\\\c","\\n\u2028\\u0000","é😀"]'],
  ['members that are undefined', { a: undefined, d: 1, e: { f: undefined } }, '{"d":1,"e":{}}', '{"d":1,"e":{}}'],
  ['empty containers', { a: [], b: {}, c: [[], [{}]], '': { 'k"': null } }, '{"a":[],"b":{},"c":[[],[{}]],"":{"k\\"":null}}', '{"a":[],"b":{},"c":[[],[{}]],"":{"k\\"":null}}'],
  ['a result', { status: 'failed', failure: { kind: 'exception', message: 'm', location: { line: 1, column: 2 } }, output: [{ type: 'text', text: 'x\n' }], sandbox: { network: false }, hint: undefined },
    '{"status":"failed","failure":{"kind":"exception","message":"m","location":{"line":1,"column":2}},"output":[{"type":"text","text":"x\\n"}],"sandbox":{"network":false}}',
    '{"status":"failed","failure":{"kind":"exception","message":"m","location":{"line":1,"column":2}},"output":[{"type":"text","text":"x\\n"}],"sandbox":{"network":false}}'],
];

for (const [name, value, text, signed] of CASES) {
  test(`jsonText writes ${name}`, () => {
    assert.is(jsonText(value), text);
    assert.is(jsonText(value, { negativeZero: true }), signed);
    assert.equal(JSON.parse(text), JSON.parse(jsonText(value)!), 'the text is JSON');
  });
}

test('jsonText writes nothing for undefined', () => {
  assert.is(jsonText(undefined), undefined);
});

test('jsonText names the path of a value JSON would change, instead of dropping it', () => {
  const cases: Array<[unknown, string]> = [
    [{ a: [1, Number.NaN] }, 'value.a[1] is NaN, which JSON cannot represent'],
    [{ when: new Date(0) }, 'value.when is a Date, which is not plain JSON data'],
    [[undefined], 'value[0] is undefined, which JSON drops'],
  ];
  for (const [value, message] of cases) {
    assert.throws(() => jsonText(value), (error: Error) => error instanceof LossyValueError && error.message.startsWith(message));
  }
});

test('jsonText writes a value nested 200,000 deep, twenty times what a recursive writer reaches', () => {
  let value: unknown = 7;
  for (let i = 0; i < 200_000; i++) value = i % 2 === 0 ? [value] : { k: value };
  const text = jsonText(value)!;
  assert.is(text, `${'{"k":['.repeat(100_000)}7${']}'.repeat(100_000)}`);
});

test.run();

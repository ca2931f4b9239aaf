// The front ends' result writer: byte for byte what lossless-json's stringify writes, for every
// kind of value a result holds (the explicit-stack writer that takes over from it, checked on its
// own), and any nesting depth (the recursive writer overflows near 10,000).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LosslessNumber, stringify } from 'lossless-json';
import { jsonText } from '../../../../host/index.ts';
import { stackText } from '../../../../host/runtime/json-text.ts';

const KEEP_NEGATIVE_ZERO = [{ test: (value: unknown) => Object.is(value, -0), stringify: () => '-0' }];
const CASES: Array<[string, unknown]> = [
  ['numbers', [1, -0, 0.5, 2 ** 60, 1e21, -1e-7, NaN, Infinity]],
  ['big integers', [10n ** 30n, -5n, new LosslessNumber('123456789012345678901234')]],
  ['strings that need escapes', ['a"b\\c', '\n\u2028\u0000', '\ud800 lone', 'é😀']],
  ['what JSON leaves out', [undefined, () => 1, Symbol('s'), { a: undefined, b: () => 1, c: Symbol('s'), d: 1 }]],
  ['toJSON and dates', { when: new Date(0), custom: { toJSON: () => ({ x: [1] }) } }],
  ['empty containers', { a: [], b: {}, c: [[], [{}]], '': { 'k"': null } }],
  ['a result', { status: 'failed', failure: { kind: 'exception', message: 'm', location: { line: 1, column: 2 } }, output: [{ type: 'text', text: 'x\n', stream: 'stdout' }], sandbox: { network: false } }],
];

for (const [name, value] of CASES) {
  test(`stackText writes ${name} as lossless-json does`, () => {
    assert.is(stackText(value), stringify(value));
    assert.is(stackText(value, { negativeZero: true }), stringify(value, undefined, undefined, KEEP_NEGATIVE_ZERO));
  });
}

test('stackText writes nothing where lossless-json writes nothing', () => {
  for (const value of [undefined, () => 1, Symbol('s')]) assert.is(stackText(value), stringify(value));
});

test('jsonText writes a value nested 1,000,000 deep, which lossless-json cannot', () => {
  let value: unknown = 7;
  for (let i = 0; i < 1_000_000; i++) value = i % 2 === 0 ? [value] : { k: value };
  assert.throws(() => stringify(value), /call stack/);
  const text = jsonText(value)!;
  assert.is(text, `${'{"k":['.repeat(500_000)}7${']}'.repeat(500_000)}`);
});

test.run();

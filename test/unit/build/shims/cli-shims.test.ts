// The stand-ins the bundled CLI uses for packages whose real load costs every start (build/shims/):
// each must do what yargs asks of the real one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { notStrictEqual, strictEqual } from '../../../../build/shims/assert.ts';
import stringWidth from '../../../../build/shims/string-width.ts';

test('assert shim: strictEqual and notStrictEqual pass as Node\'s do, and fail with an AssertionError', () => {
  strictEqual(1, 1);
  strictEqual(NaN, NaN);
  notStrictEqual(1, '1');
  notStrictEqual(undefined, null);
  for (const [check, message] of [
    [() => strictEqual('a', 'b'), /^Expected values to be strictly equal: 'a' !== 'b'$/],
    [() => notStrictEqual(undefined, undefined), /^Expected "actual" to be strictly unequal to: undefined$/],
    [() => strictEqual(1, 2, 'one is not two'), /^one is not two$/],
  ] as const) {
    try {
      check();
      assert.unreachable('the check passed');
    } catch (error) {
      const failure = error as Error & { code?: string };
      assert.is(failure.name, 'AssertionError');
      assert.is(failure.code, 'ERR_ASSERTION');
      assert.match(failure.message, message);
    }
  }
  const own = new TypeError('given');
  try {
    strictEqual(1, 2, own);
    assert.unreachable('the check passed');
  } catch (error) {
    assert.is(error, own);
  }
});

test('string-width shim: columns of plain, ANSI-coloured, combining and wide text', () => {
  assert.is(stringWidth(''), 0);
  assert.is(stringWidth('ptc run'), 7);
  assert.is(stringWidth('\x1b[31mred\x1b[0m'), 3);
  assert.is(stringWidth('e\u0301'), 1);
  assert.is(stringWidth('日本'), 4);
});

test.run();

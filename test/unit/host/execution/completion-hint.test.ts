// Which per-call programs get the "returned nothing" hint: those whose last statement is an
// expression wanted only for its value; never those that end with a call, an await or an assignment.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DISCARDED_EXPRESSION_HINT, discardedExpressionHint } from '../../../../host/execution/completion-hint.ts';

const CASES: [string, boolean][] = [
  ['const total = 1 + 2;\ntotal', true],
  ['const rows = [1, 2]\nrows.length', true],
  ['({ a: 1, b: [2] })', true],
  ['`${1} items`', true],
  ['const a = 1, b = 2;\na, b', true],
  ['const n = 1;\nn > 0 ? "yes" : "no"', true],
  ['const o = { a: { b: 1 } };\no?.a?.b', true],
  ['const x = null;\nx ?? "fallback"', true],
  ['typeof globalThis', true],
  ['inspect(1)', false],
  ['await Promise.resolve(1)', false],
  ['await null;', false],
  ['let x;\nx = 1', false],
  ['let i = 0;\ni++', false],
  ['const o = { a: 1 };\ndelete o.a', false],
  ['void 0', false],
  ['const ready = true;\nready && inspect("go")', false],
  ['const o = { f() {} };\no?.f()', false],
  ['new Map()', false],
  ['return 5', false],
  ['const a = 1;', false],
  ['if (true) { 1 }', false],
  ['"use strict"', false],
  ['', false],
  ['1 +', false],
];

for (const [program, hinted] of CASES) {
  test(`${JSON.stringify(program)} ${hinted ? 'gets' : 'gets no'} hint`, () => {
    assert.is(discardedExpressionHint(program), hinted ? DISCARDED_EXPRESSION_HINT : undefined);
  });
}

test.run();

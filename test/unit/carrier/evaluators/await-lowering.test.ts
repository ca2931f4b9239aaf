import { test } from 'uvu';
import * as assert from 'uvu/assert';
import vm from 'node:vm';
import { lowerTopLevelAwait, syntaxErrorPosition } from '../../../../carrier/evaluators/await-lowering.ts';

// Expected output is spelled with two helpers: `lowered(hoisted, body)` is the Script around the
// edited program, `box(expression)` the completion assignment that replaces the final expression.
const C = '$ptcCompletion';
const lowered = (hoisted: string, body: string, completion = C) =>
  `${hoisted}(async (${completion}) => {${body}\nreturn ${completion};\n})()`;
const box = (expression: string, completion = C) => `${completion} = { __proto__: null, value: (${expression}) };`;

// [input, expected] as in Node's test-repl-preprocess-top-level-await.js
const cases: [string, string | null][] = [
  // Nothing to lower: the caller compiles natively and keeps native diagnostics.
  ['0', null],
  ['const a = 1; a', null],
  ['"await"', null],
  ['async function f() { await x }', null],
  ['const g = async () => await x', null],
  ['class A { async m() { await x } }', null],
  ['var await = 1; await', null],
  ['return await x', null],
  ['if (c) { return await x }', null],
  ['const s = await x; import y from "y"', null],
  ['await 1;\nlet bad = ;', null],

  ['await x', lowered('', box('await x'))],
  ['await x;', lowered('', box('await x'))],
  ['(await x) /* done */ ;', lowered('', `${C} = { __proto__: null, value: ((await x) /* done */ ) };`)],
  ['await 0; 1 + 1 // done', lowered('', `await 0; ${box('1 + 1')} // done`)],
  ['const a = await f()', lowered('let a; ', 'void (a = await f());')],
  ['let a = 1, b = await 2;', lowered('let a, b; ', 'void ( (a = 1), (b = await 2));')],
  ['const { a, b: [c] } = await f();', lowered('let a, c; ', 'void ({ a, b: [c] } = await f());')],
  [
    'const { a = await d, ...r } = o, [, e, ...[g]] = p',
    lowered('let a, r, e, g; ', 'void ( ({ a = await d, ...r } = o), ([, e, ...[g]] = p));'),
  ],
  ['var x; await y', lowered('var x; ', `void (x=undefined); ${box('await y')}`)],
  ['var v = await 1; v', lowered('var v; ', `void (v = await 1); ${box('v')}`)],
  // Source-phase imports, which acorn does not parse on its own (phase-parser.ts).
  ['var m = await import.source("x"); m', lowered('var m; ', `void (m = await import.source("x")); ${box('m')}`)],
  ['const d = await import . source ( "x" )', lowered('let d; ', 'void (d = await import . source ( "x" ));')],
  ['await import.meta', null],
  ['function f() {} await x', lowered('var f; ', `this.f = f; function f() {} ${box('await x')}`)],
  ['async function h() {} await h()', lowered('var h; ', `this.h = h; async function h() {} ${box('await h()')}`)],
  ['class A {} await x', lowered('let A; ', `A=class A {}; ${box('await x')}`)],
  [
    'class K { [await key]() { return 1 } static n = 1 }',
    lowered('let K; ', 'K=class K { [await key]() { return 1 } static n = 1 };'),
  ],
  ['for await (const x of y) g(x)', lowered('', 'for await (const x of y) g(x)')],
  ['for (var [k, v] of await m) k', lowered('var k, v; ', 'for ( [k, v] of await m) k')],
  ['for (var i = 0, j; i < 2; i++) await i', lowered('var i, j; ', 'for (void ( (i = 0), (j=undefined)); i < 2; i++) await i')],
  // Await inside a block: block declarations stay in the block; its last expression is the completion.
  ['{ const t = await f(); t.x }', lowered('', `{ const t = await f(); ${box('t.x')} }`)],
  ['{ let t = await f() } t', lowered('', `{ let t = await f() } ${box('t')}`)],
  ['if (await c) x', lowered('', 'if (await c) x')],
  // The final expression need not be the last statement: declarations produce no completion.
  ['await x; function f() {}', lowered('var f; ', `${box('await x')} this.f = f; function f() {}`)],
  ['await x\nlet z = 1', lowered('let z; ', `${box('await x')}\nvoid (z = 1);`)],
  // A leading `{` is a block (here holding the label `a:`), as in a Script.
  ['{ a: await f() }', lowered('', `{ a: ${box('await f()')} }`)],
  ['({ a: await f() })', lowered('', box('({ a: await f() })'))],
  // Automatic semicolon insertion must survive `let a` becoming an expression.
  ['let a\n(b)\nawait c', lowered('let a; ', `void (a=undefined);\n(b)\n${box('await c')}`)],
  // Annex B: sloppy block functions are Script globals, strict ones stay in their block.
  ['{ function g() {} } await x', lowered('var g; ', `{ this.g = g; function g() {} } ${box('await x')}`)],
  ['"use strict"; { function g() {} } await x', lowered('', `"use strict"; { function g() {} } ${box('await x')}`)],
  ['"use strict"; { let y = await 1 }', lowered('', '"use strict"; { let y = await 1 }')],
  ['{ await using r = f(); r.v }', lowered('', `{ await using r = f(); ${box('r.v')} }`)],
  ['#!/usr/bin/env node\nawait 1', lowered('', `///usr/bin/env node\n${box('await 1')}`)],
  ['let $ptcCompletion = await 1', lowered('let $ptcCompletion; ', 'void ($ptcCompletion = await 1);', `${C}1`)],
];

for (const [input, expected] of cases) {
  test(`lowers ${JSON.stringify(input)}`, () => {
    assert.is(lowerTopLevelAwait(input)?.source ?? null, expected);
  });
}

test('every lowered program compiles as a Script and keeps its line count', () => {
  for (const [input, expected] of cases) {
    if (expected === null) continue;
    assert.not.throws(() => new vm.Script(expected), input);
    assert.is(expected.split('\n').length, input.split('\n').length + 2, input);
  }
});

const rejected: [string, string, number][] = [
  ['await using r = f()', 'top-level `await using` declarations are not supported; put disposable bindings inside a block', 0],
  ['const a = await f();\nusing r = a', 'top-level `using` declarations are not supported; put disposable bindings inside a block', 21],
];

for (const [input, message, position] of rejected) {
  test(`rejects ${JSON.stringify(input)}`, () => {
    let error: unknown;
    try {
      lowerTopLevelAwait(input);
    } catch (thrown) {
      error = thrown;
    }
    assert.instance(error, SyntaxError);
    assert.is((error as SyntaxError).message, message);
    assert.is(syntaxErrorPosition(error), position);
  });
}

test('the lowered Script keeps declarations and boxes the unawaited final value', async () => {
  const context = vm.createContext({ f: async () => ({ a: 1, b: [2] }) });
  const source = lowerTopLevelAwait('const { a, b: [c] } = await f();\nclass K {}\nPromise.resolve(a + c)')!.source;
  const result = (await new vm.Script(source).runInContext(context)) as { value: Promise<number> };
  assert.instance(result.value, vm.runInContext('Promise', context));
  assert.is(await result.value, 3);
  assert.is(Object.getPrototypeOf(result), null);
  assert.is(vm.runInContext('[a, c, typeof K].join()', context), '1,2,function');
});

test.run();

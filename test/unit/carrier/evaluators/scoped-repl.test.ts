import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { types } from 'node:util';
import { createScopedReplEvaluator, type ScopedReplOptions } from '../../../../carrier/evaluators/scoped-repl.ts';
import type { Completion, EvaluationOptions, Evaluator } from '../../../../carrier/evaluators/types.ts';
import { rejection } from '../../../helpers/assert.ts';

// Programs run in another realm: structuredClone turns their arrays and objects into this realm's,
// which uvu's deep equality needs.
let root = '';
let first = '';
let second = '';
test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ptc-scoped-repl-'));
  first = join(root, 'first');
  second = join(root, 'second');
  for (const [dir, where] of [[first, 'first'], [second, 'second']] as const) {
    await mkdir(dir);
    await writeFile(join(dir, 'where.mjs'), `export const where = ${JSON.stringify(where)};\n`);
  }
});
test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Session {
  evaluator: Evaluator;
  /** Runs one program and returns its completion value (a thenable one is awaited by this helper). */
  run(program: string, options?: Partial<EvaluationOptions>): Promise<unknown>;
  /** Runs one program and returns its completion box, as the carrier receives it. */
  complete(program: string, options?: Partial<EvaluationOptions>): Promise<Completion>;
}

function session(options?: ScopedReplOptions): Session {
  const evaluator = createScopedReplEvaluator(options);
  const complete = (program: string, overrides: Partial<EvaluationOptions> = {}): Promise<Completion> => {
    const cwd = overrides.cwd ?? first;
    return evaluator.evaluate(program, { filename: join(cwd, 'program.ts'), cwd, wantCompletion: true, ...overrides });
  };
  return {
    evaluator,
    complete,
    async run(program, overrides) {
      return (await complete(program, overrides)).value;
    },
  };
}

/** Runs programs one after another in one environment; returns the last one's completion as plain data. */
async function sequence(programs: string[], options?: ScopedReplOptions): Promise<unknown> {
  const { run } = session(options);
  let value: unknown;
  for (const program of programs) value = await run(program);
  return structuredClone(value);
}


const filenameIn = (dir: string): string => join(dir, 'program.ts');

// ---------------------------------------------------------------- the context

const GLOBALS: [string, string][] = [
  ['typeof process', 'object'],
  ['typeof Buffer', 'function'],
  ['typeof setTimeout', 'function'],
  ['typeof setImmediate', 'function'],
  ['typeof queueMicrotask', 'function'],
  ['typeof URL', 'function'],
  ['typeof fetch', 'function'],
  ['typeof TextEncoder', 'function'],
  ['typeof structuredClone', 'function'],
  ['typeof console.log', 'function'],
  ['typeof AbortController', 'function'],
  ['global === globalThis', 'true'],
  ['this === globalThis', 'true'],
  ['typeof arguments', 'undefined'],
  ['typeof require', 'undefined'],
  ['typeof module', 'undefined'],
  ['typeof exports', 'undefined'],
  ['typeof __filename', 'undefined'],
  ['typeof __dirname', 'undefined'],
  ['typeof fs', 'undefined'],
  ['typeof path', 'undefined'],
  ['typeof child_process', 'undefined'],
];
for (const [program, expected] of GLOBALS) {
  test(`context: ${program} is ${expected}`, async () => {
    assert.is(String(await session().run(program)), expected);
  });
}

test('context: globals are retained between calls; the global object is the one programs see', async () => {
  const { evaluator, run } = session();
  await run('globalThis.marker = 41');
  assert.is(await run('marker + 1'), 42);
  assert.is(evaluator.globalObject.marker, 41);
  evaluator.globalObject.fromCarrier = 'installed';
  assert.is(await run('fromCarrier'), 'installed');
});

test('context: console prints through the carrier realm console', async () => {
  const { run } = session();
  const log = console.log;
  const seen: unknown[][] = [];
  console.log = (...args: unknown[]) => void seen.push(args);
  try {
    await run('console.log("from the program", 1)');
  } finally {
    console.log = log;
  }
  assert.equal(seen, [['from the program', 1]]);
});

// ---------------------------------------------------------------- redeclaration

const DECLARE: Record<string, (value: number) => string> = {
  var: (value) => `var x = ${value}`,
  let: (value) => `let x = ${value}`,
  const: (value) => `const x = ${value}`,
  class: (value) => `class x { static v = ${value} }`,
  function: (value) => `function x() { return ${value} }`,
};
const PROBE = `typeof x === 'function' ? ('v' in x ? x.v : x()) : x`;
for (const earlier of Object.keys(DECLARE)) {
  for (const later of Object.keys(DECLARE)) {
    test(`redeclaration: ${later} after ${earlier}`, async () => {
      const { run } = session();
      await run(DECLARE[earlier]!(1));
      assert.is(await run(`${DECLARE[later]!(2)}\n${PROBE}`), 2);
      assert.is(await run(PROBE), 2);
    });
  }
}

test('redeclaration: let, const and class cannot read the earlier value of their own name (TDZ)', async () => {
  for (const keyword of ['let', 'const']) {
    const { run } = session();
    await run('let x = 1');
    const error = await rejection(run(`${keyword} x = x + 1`));
    assert.is(error.name, 'ReferenceError');
    assert.is(error.message, "Cannot access 'x' before initialization");
    assert.is(await run('x'), 1, 'the failed redeclaration keeps the earlier value');
  }
  const { run } = session();
  await run('let C = 1');
  assert.is((await rejection(run('class C extends C {}'))).name, 'ReferenceError');
  assert.is(await run('C'), 1);
});

// ---------------------------------------------------------------- copies

test('copies: assigning to an earlier const changes only this call and later calls', async () => {
  const { run } = session();
  await run('const c = 1; function readC() { return c }');
  assert.equal(structuredClone(await run('c = 2; [c, readC()]')), [2, 1]);
  assert.equal(structuredClone(await run('[c, readC()]')), [2, 1]);
});

test('copies: a closure from an earlier call keeps its own binding after a redeclaration', async () => {
  const { run } = session();
  await run('let n = 1; const show = () => n');
  assert.equal(structuredClone(await run('let n = 2; [n, show()]')), [2, 1]);
  assert.equal(structuredClone(await run('n = 3; [n, show()]')), [3, 1]);
});

test('copies: earlier functions update their own bindings, which later calls do not see', async () => {
  const { run } = session();
  await run('let count = 0; function bump() { return ++count }');
  assert.equal(structuredClone(await run('[bump(), bump(), count]')), [1, 2, 0]);
  assert.is(await run('count'), 0);
});

test('copies: a call copies what the names hold when it starts, not later assignments', async () => {
  const { run } = session();
  await run('let t = 0; setTimeout(() => { t = 1 }, 0)');
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.is(await run('t'), 1, 'the callback ran before this call started');
  await run('let u = 0; var later = () => { u = 5 }');
  assert.is(await run('later(); u'), 0, 'assigned after this call started');
});

test('copies: an undeclared assignment in sloppy mode is not a copy but a global', async () => {
  const { run } = session({ strict: false });
  await run('created = 1');
  assert.is(await run('globalThis.created'), 1);
});

// ---------------------------------------------------------------- var

const VAR_IN_BLOCK = [
  '{ var v = 1 }',
  'if (true) { var v = 1 }',
  'for (var v = 0; v < 1; v++) {}',
  'for (var v of [1]) {}',
  'for (var v in { 1: 0 }) { v = Number(v) }',
  'while (true) { var v = 1; break }',
  'try { var v = 1 } finally {}',
  'try { throw 0 } catch { var v = 1 }',
  'switch (0) { case 0: var v = 1 }',
  'label: { var v = 1 }',
  'var { a: [v] } = { a: [1] }',
];
for (const program of VAR_IN_BLOCK) {
  test(`var: declared in a block carries to later calls: ${program}`, async () => {
    assert.is(await sequence([program, 'v']), 1);
  });
}

for (const earlier of ['var', 'let', 'const']) {
  test(`var: \`var count = count + 1\` starts from an earlier ${earlier}`, async () => {
    assert.is(await sequence([`${earlier} count = 1`, 'var count = count + 1', 'var count = count + 1', 'count']), 3);
  });
}

test('var: a redeclaration in a branch that does not run keeps the earlier value', async () => {
  assert.is(await sequence(['var v = 1', 'if (false) { var v = 2 }', 'v']), 1);
  assert.is(await sequence(['let v = 1', 'if (false) { var v = 2 }', 'v']), 1);
});

test('var: a redeclaration after a throw keeps the earlier value', async () => {
  const { run } = session();
  await run('var v = 1');
  assert.is((await rejection(run('throw new Error("before"); var v = 2'))).message, 'before');
  assert.is(await run('v'), 1);
});

test('var: a new name whose declaration does not run is declared as undefined', async () => {
  assert.is(await sequence(['if (false) { var fresh = 1 }', 'fresh === undefined']), true);
});

// ---------------------------------------------------------------- failures

test('failures: a call that throws halfway keeps what it did before the throw', async () => {
  const { run } = session();
  await run('let b = 0, c = 0');
  const error = await rejection(run("let a = 1; b = 2; throw new TypeError('halfway'); let c = 3"));
  assert.is(error.name, 'TypeError');
  assert.is(error.message, 'halfway');
  assert.equal(structuredClone(await run('[a, b, c]')), [1, 2, 0]);
});

test('failures: a new name not reached before a throw stays undeclared', async () => {
  const { run } = session();
  await rejection(run('throw 1; let never = 1'));
  const error = await rejection(run('never'));
  assert.is(error.name, 'ReferenceError');
  assert.is(error.message, 'never is not defined');
});

test('failures: a program that does not compile changes nothing', async () => {
  const { run } = session();
  await run('let z = 1');
  await rejection(run('let z = 2; let = ;'));
  assert.is(await run('z'), 1);
});

test('failures: callback errors are uncaught exceptions and leave the environment usable', async () => {
  const { run } = session();
  const uncaught = new Promise<Error>((resolve) => process.once('uncaughtException', resolve));
  assert.is(await run("let kept = 1; setTimeout(() => { kept = 2; throw new Error('from a callback') }, 0); 'started'"), 'started');
  assert.is((await uncaught).message, 'from a callback');
  assert.is(await run('kept'), 2);
  assert.is(await run('let kept = 3; kept'), 3);
});

test('failures: evaluate after dispose rejects', async () => {
  const { evaluator, run } = session();
  await run('let x = 1');
  evaluator.dispose();
  assert.is((await rejection(run('x'))).message, 'the scoped REPL environment has been disposed');
});

// ---------------------------------------------------------------- completion

const COMPLETIONS: [string, unknown][] = [
  ['1 + 1', 2],
  ['1; let y = 2', 1],
  ["'a'; 'b'; const q = 1", 'b'],
  ['const z = 1', undefined],
  ['({ a: 1 })', { a: 1 }],
  ['{ a: 1 }', undefined],
  ['if (true) { 5 }', undefined],
  ['let w = 3\nw * 2', 6],
  ['let m = 2\n;[1, 2].map((n) => n * m)', [2, 4]],
  ['await Promise.resolve(7)', 7],
  ['(async () => 8)().then((n) => n)\n1', 1],
  ['// only a comment', undefined],
  ['', undefined],
];
for (const [program, expected] of COMPLETIONS) {
  test(`completion: ${JSON.stringify(program)} gives ${JSON.stringify(expected)}`, async () => {
    assert.equal(structuredClone(await session().run(program)), expected);
  });
}

test('completion: a leading block is a statement and can await and hold temporary declarations', async () => {
  const { run } = session();
  assert.is(await run('{ const tmp = await Promise.resolve(2); var kept = tmp * 2 }'), undefined);
  assert.equal(structuredClone(await run('[typeof tmp, kept]')), ['undefined', 4]);
});

test('completion: a Promise completion is not awaited', async () => {
  const { complete } = session();
  const resolved = (await complete('Promise.resolve(5)')).value;
  assert.ok(types.isPromise(resolved));
  assert.is(await resolved, 5);
  const pending = (await complete('new Promise(() => {})')).value;
  assert.ok(types.isPromise(pending), 'a pending completion does not hold the evaluation');
  const thenable = (await complete('({ then(resolve) { resolve("adopted") } })')).value as { then?: unknown };
  assert.type(thenable.then, 'function');
});

test("completion: the program realm's Object.prototype.then cannot adopt the completion", async () => {
  const { complete } = session();
  const completion = await complete("Object.prototype.then = function (resolve) { resolve('hijacked') }; ({ a: 1 })");
  assert.is(Object.getPrototypeOf(completion), null);
  assert.is((completion.value as { a: number }).a, 1);
  await complete('delete Object.prototype.then');
});

test('completion: wantCompletion false gives undefined', async () => {
  assert.is(await session().run('1 + 1', { wantCompletion: false }), undefined);
});

test('completion: finalExpression false gives undefined; true gives the value', async () => {
  assert.is(await session({ finalExpression: false }).run('1 + 1'), undefined);
  assert.is(await session({ finalExpression: true }).run('1 + 1'), 2);
});

// ---------------------------------------------------------------- rejected programs

test('return: top-level return is a SyntaxError at the return', async () => {
  const filename = filenameIn(first);
  const error = await rejection(session().run('const a = 1\n  return a'));
  assert.ok(error instanceof SyntaxError);
  assert.is(error.message, 'Illegal return statement: a scoped REPL program cannot return; its last expression statement is its value');
  assert.is(error.stack, `${filename}:2\n  return a\n  ^^^^^^\n\nSyntaxError: ${error.message}`);
});

test('return: return inside a function is ordinary', async () => {
  assert.is(await session().run('function f() { return 1 }\nf()'), 1);
  assert.is(await session().run('{ const g = () => { return 2 }; var out = g() }\nout'), 2);
});

const RESERVED: [string, string, number, string][] = [
  // program, message start, line, caret line
  ['#!/usr/bin/env node\n1', 'a scoped REPL program cannot start with #!', 1, '^^'],
  ['let __$binding_x = 1', '__$binding_ is reserved', 1, '    ^^^^^^^^^^^'],
  ["1\nconst s = '__$binding_'", '__$binding_ is reserved', 2, '           ^^^^^^^^^^^'],
  ['1 // __$binding_', '__$binding_ is reserved', 1, '     ^^^^^^^^^^^'],
  ['\\u005f_$binding_get', '__$binding_ is reserved', 1, '^'],
];
for (const [program, message, line, caret] of RESERVED) {
  test(`rejected: ${JSON.stringify(program)}`, async () => {
    const error = await rejection(session().run(program));
    assert.ok(error instanceof SyntaxError);
    assert.ok(error.message.startsWith(message), error.message);
    const lines = String(error.stack).split('\n');
    assert.is(lines[0], `${filenameIn(first)}:${line}`);
    assert.is(lines[2], caret);
  });
}

// ---------------------------------------------------------------- options

const CODE_GENERATION: [string, string][] = [
  ['eval("1 + 1")', 'EvalError'],
  ['(0, eval)("2")', 'EvalError'],
  ['new Function("return 3")()', 'EvalError'],
  ['Function("return 4")()', 'EvalError'],
  ['(async () => {}).constructor("return 5")', 'EvalError'],
  ['new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])) && "compiled"', 'CompileError'],
  ['await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); "compiled"', 'CompileError'],
];
for (const [program, errorName] of CODE_GENERATION) {
  test(`codeGeneration: ${program} throws ${errorName} when off and runs when on`, async () => {
    const error = await rejection(session().run(program));
    assert.is(error.name, errorName);
    assert.ok(await session({ codeGeneration: true }).run(program));
  });
}

test('codeGeneration: functions of the carrier realm still compile code (no isolation)', async () => {
  assert.is(await session().run('setTimeout.constructor("return 6")()'), 6);
});

const STRICTNESS: [string, boolean, unknown][] = [
  // program, strict, completion ('ReferenceError' / 'SyntaxError' when it rejects with one)
  ['let r; with ({ a: 1 }) { r = a } r', true, 'SyntaxError'],
  ['let r; with ({ a: 1 }) { r = a } r', false, 1],
  ['undeclared = 1', true, 'ReferenceError'],
  ['undeclared = 1; globalThis.undeclared', false, 1],
  ['(function () { return this })() === undefined', true, true],
  ['(function () { return this })() === globalThis', false, true],
  ["'use strict'; undeclared = 1", false, 'ReferenceError'],
];
for (const [program, strict, expected] of STRICTNESS) {
  test(`strict ${strict}: ${program}`, async () => {
    const outcome = await session({ strict }).run(program).catch((error: Error) => error.name);
    assert.is(outcome, expected);
  });
}

test('strict false: a function declared in a block carries to later calls (Annex B)', async () => {
  assert.is(await sequence(['{ function g() { return "g" } }', 'g()'], { strict: false }), 'g');
  const { run } = session({ strict: true });
  await run('{ function g() { return "g" } }');
  assert.is((await rejection(run('g()'))).message, 'g is not defined');
});

// ---------------------------------------------------------------- modules

test('modules: relative import() resolves from the first call directory after a later call moves', async () => {
  const { run } = session();
  assert.is(await run('(await import("./where.mjs")).where'), 'first');
  assert.is(await run('(await import("./where.mjs")).where', { cwd: second, filename: filenameIn(second) }), 'first');
});

test('modules: the first call fixes the import directory even when a later call is the first to import', async () => {
  const { run } = session();
  await run('1', { cwd: second, filename: filenameIn(second) });
  assert.is(await run('(await import("./where.mjs")).where', { cwd: first, filename: filenameIn(first) }), 'second');
});

test('modules: node: built-ins import', async () => {
  assert.is(await session().run('(await import("node:path")).posix.join("a", "b")'), 'a/b');
});

// ---------------------------------------------------------------- locations

const SYNTAX_ERRORS: [string, number, string, string][] = [
  // program, line, the excerpt's source and caret lines, message
  ['let x = ;', 1, 'let x = ;\n        ^', "Unexpected token ';'"],
  ['let a = 1\nlet a = 2', 2, 'let a = 2\n    ^', "Identifier 'a' has already been declared"],
  ['1\n(1 +)', 2, '(1 +)\n    ^', "Unexpected token ')'"],
  ['const f = () => {\n  await 1\n}', 2, '  await 1\n  ^^^^^', 'await is only valid in async functions and the top level bodies of modules'],
];
for (const [program, line, excerpt, message] of SYNTAX_ERRORS) {
  test(`syntax error: ${JSON.stringify(program)} points at line ${line}`, async () => {
    const filename = filenameIn(first);
    const error = await rejection(session().run(program));
    assert.ok(error instanceof SyntaxError);
    assert.is(error.message, message);
    assert.is(error.stack, `${filename}:${line}\n${excerpt}\n\nSyntaxError: ${message}`);
  });
}

test('syntax error: strict-mode errors use the engine message', async () => {
  const error = await rejection(session().run('const a = 1\nlet y = 010'));
  assert.is(error.message, 'Octal literals are not allowed in strict mode.');
  assert.is(error.stack, `${filenameIn(first)}:2\nlet y = 010\n        ^^^\n\nSyntaxError: ${error.message}`);
  assert.is(await session({ strict: false }).run('const a = 1\nlet y = 010\ny'), 8);
});

test('runtime error: the stack names the filename, line and column', async () => {
  const filename = filenameIn(first);
  const error = await rejection(session().run("const a = 1\n\nthrow new Error('three')"));
  assert.match(String(error.stack), `${filename}:3:7`);
  const nested = await rejection(session().run('function f() {\n  null.x\n}\nf()\nundefined'));
  assert.match(String(nested.stack), `${filename}:2:8`);
  assert.match(String(nested.stack), `${filename}:4:1`);
});

const FINAL_LINE_COLUMNS: [ScopedReplOptions, boolean, number][] = [
  // options, wantCompletion, column of the error on the final expression's line
  [{}, true, 6 + 17],
  [{}, false, 6],
  [{ finalExpression: false }, true, 6],
];
for (const [options, wantCompletion, column] of FINAL_LINE_COLUMNS) {
  test(`runtime error: final expression line column ${column} with ${JSON.stringify(options)}, wantCompletion ${wantCompletion}`, async () => {
    const error = await rejection(session(options).run('1\nnull.boom', { wantCompletion }));
    assert.match(String(error.stack), `${filenameIn(first)}:2:${column}\n`);
  });
}

test('runtime error: a later call in another directory names its own filename and line', async () => {
  const { run } = session();
  await run('1');
  const error = await rejection(run('\nnull.boom\n1', { cwd: second, filename: filenameIn(second) }));
  assert.match(String(error.stack), `${filenameIn(second)}:2:6`);
  const initializer = await rejection(session().run('\n\nnull.boom\n1', { filename: '[initializer]' }));
  assert.match(String(initializer.stack), '[initializer]:3:6');
});

test.run();

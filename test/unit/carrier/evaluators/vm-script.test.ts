import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVmScriptEvaluator } from '../../../../carrier/evaluators/vm-script.ts';
import type { Evaluator } from '../../../../carrier/evaluators/types.ts';
import { rejection } from '../../../helpers/assert.ts';

let cwd = '';
let filename = '';
test.before(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'ptc-vm-script-'));
  filename = join(cwd, 'program.ts');
  await writeFile(join(cwd, 'answer.mjs'), 'export const answer = 42;\n');
  await mkdir(join(cwd, 'node_modules', 'local-pkg'), { recursive: true });
  await writeFile(join(cwd, 'node_modules', 'local-pkg', 'package.json'), '{"name":"local-pkg","type":"module","exports":"./index.js"}');
  await writeFile(join(cwd, 'node_modules', 'local-pkg', 'index.js'), 'export default "from cwd";\n');
});
test.after(async () => {
  await rm(cwd, { recursive: true, force: true });
});

/** The completion value of one evaluation. */
async function run(evaluator: Evaluator, program: string, options: { filename?: string; wantCompletion?: boolean } = {}): Promise<unknown> {
  const completion = await evaluator.evaluate(program, { filename: options.filename ?? filename, cwd, wantCompletion: options.wantCompletion ?? true });
  return completion.value;
}


test('the completion value is the Script completion, awaited', async () => {
  const evaluator = createVmScriptEvaluator();
  const completion = await evaluator.evaluate('Promise.resolve(1)', { filename, cwd, wantCompletion: true });
  assert.equal({ ...completion }, { value: 1 });
  assert.is(Object.getPrototypeOf(completion), null);
  assert.is(await run(evaluator, '1 + 1'), 2);
  assert.is(await run(evaluator, 'Promise.resolve(3)'), 3);
  assert.is(await run(evaluator, '({ then(resolve) { resolve(4) } })'), 4);
  assert.is(await run(evaluator, 'let none = 1'), undefined);
  assert.is(await run(evaluator, 'await Promise.resolve(5)'), 5);
  assert.is(await run(evaluator, 'await 0; Promise.resolve(6)'), 6);
  assert.is(await run(evaluator, 'await 0; 7; function later() {}'), 7);
  // Declarations produce no value, so the completion is the last expression's, as natively.
  assert.is(await run(evaluator, 'await 0; let quiet = 8'), 0);
  assert.is(await run(evaluator, 'let calm = await 9'), undefined);
  assert.is(await run(evaluator, '{ a: await 10 }'), 10);
  assert.is(await run(evaluator, '#!/usr/bin/env node\n11'), 11);
  assert.is(await run(evaluator, '#!/usr/bin/env node\nawait 12'), 12);
});

test('without wantCompletion the program is still awaited but yields undefined', async () => {
  const evaluator = createVmScriptEvaluator();
  assert.is(await run(evaluator, 'var done = false; new Promise((r) => setTimeout(r, 5)).then(() => { done = true; return 1 })', { wantCompletion: false }), undefined);
  assert.is(evaluator.globalObject.done, true);
});

test('top-level declarations persist across evaluations', async () => {
  const evaluator = createVmScriptEvaluator();
  await run(evaluator, 'let a = 1; const b = 2; class C {}; var d = 4; function f() { return a }');
  assert.equal([...(await run(evaluator, '[a, b, new C() instanceof C, d, f()]')) as unknown[]], [1, 2, true, 4, 1]);
  await run(evaluator, 'a = 10');
  assert.is(await run(evaluator, 'f()'), 10);
});

test('declarations initialized through top-level await persist', async () => {
  const evaluator = createVmScriptEvaluator();
  await run(evaluator, 'async function open() { return { x: 1 } }\nconst db = await open();\nlet { x } = db;\nclass Store {}\nvar count = await 3;\nfunction get() { return db }');
  assert.equal([...(await run(evaluator, '[db.x, x, typeof Store, count, get() === db]')) as unknown[]], [1, 1, 'function', 3, true]);
  assert.is(await run(evaluator, 'db.x = await 2; db.x'), 2);
});

test('function and object identities persist', async () => {
  const evaluator = createVmScriptEvaluator();
  const first = await run(evaluator, 'function g() {}\nvar kept = { g }; kept');
  assert.is(await run(evaluator, 'kept'), first);
  assert.is(await run(evaluator, 'var again = await kept; again.g === g && kept.g === g'), true);
});

test('the global has Node globals and is globalThis', async () => {
  const evaluator = createVmScriptEvaluator();
  const names = ['process', 'Buffer', 'setTimeout', 'setImmediate', 'queueMicrotask', 'URL', 'fetch', 'structuredClone', 'TextEncoder', 'AbortController'];
  const types = await run(evaluator, `[${names.map((name) => `typeof ${name}`).join(', ')}].join()`);
  assert.is(types, names.map((name) => (name === 'process' ? 'object' : 'function')).join());
  assert.is(await run(evaluator, 'globalThis'), evaluator.globalObject);
  assert.is(await run(evaluator, 'global === globalThis && this === globalThis'), true);
  assert.is(await run(evaluator, 'console'), console);
  assert.is(await run(evaluator, 'process.cwd === process.cwd && Buffer.from("hi").toString("base64")'), 'aGk=');
});

test('assigning a Node global shadows it in the context only', async () => {
  const evaluator = createVmScriptEvaluator();
  assert.is(await run(evaluator, 'process = "mine"; process'), 'mine');
  assert.is(typeof process.cwd, 'function');
  assert.is(await run(createVmScriptEvaluator(), 'typeof process'), 'object');
});

test('each evaluator has its own context', async () => {
  const one = createVmScriptEvaluator();
  const two = createVmScriptEvaluator();
  await run(one, 'var only = 1');
  assert.is(await run(two, 'typeof only'), 'undefined');
  assert.is.not(one.globalObject, two.globalObject);
});

test('top-level return is rejected with a SyntaxError that says so', async () => {
  const evaluator = createVmScriptEvaluator();
  for (const program of ['let a = 1;\nreturn a', 'await 0;\nif (x) { return 1 }']) {
    const error = await rejection(run(evaluator, program));
    assert.is(error.name, 'SyntaxError');
    assert.is(error.message, 'top-level return is not supported in vm-script programs; the final expression is the result');
    assert.is(error.stack, `${filename}:2\n${program.split('\n')[1]}\n${program.includes('if') ? '         ' : ''}^^^^^^\n\nSyntaxError: ${error.message}`);
  }
  assert.is(await run(evaluator, 'function inner() { return 2 }\ninner()'), 2);
});

test('static import and export are rejected with a SyntaxError that says so', async () => {
  const evaluator = createVmScriptEvaluator();
  const imported = await rejection(run(evaluator, 'const a = await 1;\nimport { answer } from "./answer.mjs"'));
  assert.is(imported.message, 'static import is not supported in vm-script programs; use `await import(specifier)`');
  assert.is(imported.stack, `${filename}:2\nimport { answer } from "./answer.mjs"\n^^^^^^\n\nSyntaxError: ${imported.message}`);
  const exported = await rejection(run(evaluator, 'export const b = 1'));
  assert.is(exported.name, 'SyntaxError');
  assert.is(exported.message, 'export is not supported in vm-script programs; top-level declarations stay in the context and the final expression is the result');
  assert.ok(exported.stack!.startsWith(`${filename}:1\nexport const b = 1\n^^^^^^\n`));
});

test('top-level using is rejected with and without await', async () => {
  const evaluator = createVmScriptEvaluator();
  for (const [program, kind] of [['using r = f()', 'using'], ['await using r = f()', 'await using']]) {
    const error = await rejection(run(evaluator, program!));
    assert.is(error.message, `top-level \`${kind}\` declarations are not supported; put disposable bindings inside a block`);
    assert.ok(error.stack!.startsWith(`${filename}:1\n${program}\n${'^'.repeat(kind!.length)}\n\nSyntaxError: `));
  }
});

test('relative dynamic import resolves from cwd', async () => {
  const evaluator = createVmScriptEvaluator();
  assert.is(await run(evaluator, 'import("./answer.mjs").then((m) => m.answer)'), 42);
  assert.is(await run(evaluator, 'const { answer } = await import("./answer.mjs"); answer'), 42);
  assert.is(await run(evaluator, '(await import("node:path")).posix.join("a", "b")'), 'a/b');
  assert.is(await run(evaluator, '(await import("local-pkg")).default'), 'from cwd');
  // A program file outside cwd still imports relative to cwd and keeps its name in stack frames.
  const elsewhere = join(tmpdir(), 'elsewhere', 'outside.ts');
  assert.is(await run(evaluator, '(await import("./answer.mjs")).answer', { filename: elsewhere }), 42);
  const error = await rejection(run(evaluator, '\nnull.x', { filename: elsewhere }));
  assert.match(error.stack!, `${elsewhere}:2:6`);
  // Functions keep their Script's referrer.
  await run(evaluator, 'function load() { return import("./answer.mjs") }');
  assert.is(await run(evaluator, '(await load()).answer'), 42);
});

test('Script syntax is non-strict unless the program opts in', async () => {
  const evaluator = createVmScriptEvaluator();
  await run(evaluator, 'implicit = 1');
  assert.is(evaluator.globalObject.implicit, 1);
  assert.is(await run(evaluator, 'with ({ w: 5 }) w'), 5);
  assert.is(await run(evaluator, 'await 0; with ({ w: 6 }) { var seen = w }\nseen'), 6);
  const strict = await rejection(run(evaluator, '"use strict";\nundeclared = 1'));
  assert.is(strict.name, 'ReferenceError');
  const lowered = await rejection(run(evaluator, '"use strict";\nawait 0;\nundeclaredToo = 1'));
  assert.is(lowered.name, 'ReferenceError');
  const withStatement = await rejection(run(evaluator, '"use strict"; with ({}) {}'));
  assert.is(withStatement.name, 'SyntaxError');
});

test('a syntax error rejects with the engine SyntaxError at the program location', async () => {
  const evaluator = createVmScriptEvaluator();
  const error = await rejection(run(evaluator, 'let ok = 1;\nlet bad = ;'));
  assert.is(error.name, 'SyntaxError');
  assert.is(error.message, "Unexpected token ';'");
  assert.is(error.stack, `${filename}:2\nlet bad = ;\n          ^\n\nSyntaxError: Unexpected token ';'`);
  // With await in the source, a parse failure still reaches the engine's diagnostic.
  const awaiting = await rejection(run(evaluator, 'await 1;\nlet also = ;'));
  assert.is(awaiting.message, "Unexpected token ';'");
  assert.ok(awaiting.stack!.startsWith(`${filename}:2\nlet also = ;\n           ^\n`));
  assert.not.match(awaiting.stack!, /\n\s+at /);
  // `await` as a Script identifier keeps the Script's reading and its diagnostic.
  assert.is(await run(evaluator, 'var await = 5; await'), 5);
  const identifier = await rejection(run(evaluator, 'var await = 1;\nlet worse = ;'));
  assert.ok(identifier.stack!.startsWith(`${filename}:2\nlet worse = ;\n            ^\n\nSyntaxError: Unexpected token ';'`));
});

test('an exception stack names the program file and line', async () => {
  const evaluator = createVmScriptEvaluator();
  const native = await rejection(run(evaluator, 'let n = 1;\n\nthrow new Error("boom")'));
  assert.is(native.message, 'boom');
  assert.match(native.stack!, `at ${filename}:3:7`);
  const lowered = await rejection(run(evaluator, 'await 0;\nfunction fail() {\n  throw new Error("later")\n}\nfail()'));
  assert.match(lowered.stack!, `at fail (${filename}:3:9)`);
  assert.match(lowered.stack!, `${filename}:5:`);
});

test('dispose ends the evaluator', async () => {
  const evaluator = createVmScriptEvaluator();
  evaluator.dispose();
  const error = await rejection(run(evaluator, '1'));
  assert.is(error.message, 'vm-script evaluator: evaluate() called after dispose()');
});

test.run();

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { EventEmitter } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { types } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeReplEvaluator, replInput } from '../../../../carrier/evaluators/repl.ts';
import type { EvaluationOptions, Evaluator } from '../../../../carrier/evaluators/types.ts';
import { rejection } from '../../../helpers/assert.ts';

// Node 20 runs this suite bundled (see the evaluator's report): nothing here needs Node 24.
const FILENAME = join(tmpdir(), 'ptc-repl-program.ts');
const OPTIONS: EvaluationOptions = { filename: FILENAME, cwd: process.cwd(), wantCompletion: true };

let evaluator: Evaluator;
test.before.each(() => { evaluator = createNodeReplEvaluator(); });
test.after.each(() => { evaluator.dispose(); });

const run = async (program: string, options: EvaluationOptions = OPTIONS): Promise<unknown> => (await evaluator.evaluate(program, options)).value;


const frames = (stack: string): string[] => stack.split('\n').filter((line) => /^\s+at /.test(line));
/** process.listeners() is typed for signal names only. */
const newListeners = (): Function[] => (process as EventEmitter).listeners('newListener');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('replInput: an interactive line, and a leading brace kept as a block', () => {
  const table: [string, string][] = [
    ['1 + 1', '1 + 1\n'],
    ['await x // trailing comment', 'await x // trailing comment\n'],
    ['{ a: 1 }', '{ a: 1 }\n;\n'],
    ['  \n{}', '  \n{}\n;\n'],
    ['({ a: 1 })', '({ a: 1 })\n'],
    ['// c\n{ a: 1 }', '// c\n{ a: 1 }\n'],
  ];
  for (const [program, expected] of table) assert.is(replInput(program), expected, program);
});

test('format and global object: the REPL context, with the process console', async () => {
  assert.is(evaluator.format, 'repl');
  assert.is(await run('globalThis === this'), true);
  assert.is.not(evaluator.globalObject, globalThis);
  evaluator.globalObject.fromCarrier = 7;
  assert.is(await run('fromCarrier'), 7);
  assert.is(await run('console'), console);
  assert.is(await run('typeof require + typeof fs'), 'functionobject');
});

test('declarations persist across calls', async () => {
  assert.is(await run('let a = 1; const b = 2; var c = 3; class K { static v = 4 }'), undefined);
  assert.is(await run('a + b + c + K.v'), 10);
  assert.is(await run('a = 5; a'), 5);
  assert.is(await run('a'), 5);
});

test('function declarations in a multi-line program with a trailing expression', async () => {
  const program = 'function double(n) {\n  return n * 2;\n}\nconst y = 4;\ndouble(y)';
  assert.is(await run(program), 8);
  assert.is(await run('double(21)'), 42);
  assert.is(await run('function double(n) { return n * 3 }\ndouble(2)'), 6);
});

test('redeclaring let, const or class rejects with Node\'s SyntaxError', async () => {
  await run('let a = 1; const b = 2; class C {}');
  // V8 finds a let/const/class conflict before the program runs, so those stacks have no frames.
  const table: [string, string, string | undefined][] = [
    ['let a = 2', 'a', undefined],
    ['const b = 3', 'b', undefined],
    ['class C {}', 'C', undefined],
    ['var a = 4', 'a', `${FILENAME}:1:1`],
  ];
  for (const [program, name, frame] of table) {
    const error = await rejection(run(program));
    assert.is(error.name, 'SyntaxError', program);
    assert.is(error.message, `Identifier '${name}' has already been declared`, program);
    const first = frames(error.stack)[0];
    if (frame === undefined) assert.is(first, undefined, error.stack);
    else assert.ok(first?.includes(frame), error.stack);
  }
  assert.is(await run('a + b'), 3);
});

test('_ and _error are ordinary globals', async () => {
  assert.is(await run('typeof _ + typeof _error'), 'undefinedundefined');
  assert.is(await run('_ = 5'), 5);
  assert.is(await run('1 + 1'), 2);
  assert.is(await run('_'), 5);
  await run('_error = "mine"');
  await rejection(run('throw new Error("boom")'));
  assert.is(await run('_error'), 'mine');
  assert.equal(Object.getOwnPropertyDescriptor(evaluator.globalObject, '_'), { value: 5, writable: true, enumerable: true, configurable: true });
});

test('assignments to undeclared names create retained globals (non-strict)', async () => {
  assert.is(await run('undeclared = 9'), 9);
  assert.is(await run('undeclared + 1'), 10);
  assert.is(evaluator.globalObject.undeclared, 9);
  assert.is(await run('(function () { return this })() === globalThis'), true);
});

test('top-level await with declarations', async () => {
  assert.is(await run('const x = await Promise.resolve(2)'), undefined);
  assert.is(await run('x'), 2);
  assert.is(await run('let y = await Promise.resolve(3); function f() { return x + y }\nawait null; f()'), 5);
  assert.is(await run('f() + y'), 8);
  assert.is(await run('await 1 // a trailing line comment'), 1);
});

test('a leading { ... } is a block, with temporary declarations and top-level await', async () => {
  assert.is(await run('{ a: 1 }'), 1);
  assert.is(await run('{}'), undefined);
  assert.is(await run('JSON.stringify({ a: 1 }) === JSON.stringify(({ a: 1 }))'), true);
  assert.is(await run('({ a: 1 }).a'), 1);
  assert.is(await run('{ let t = 4; t * 2 }'), 8);
  assert.is(await run('{ const t = await Promise.resolve(3); globalThis.fromBlock = t }'), undefined);
  assert.is(await run('typeof t + fromBlock'), 'undefined3');
});

// Node's REPL leaves a Promise completion as it is, and the boxed completion keeps it that way.
test('a Promise-valued completion stays a Promise', async () => {
  const { value } = await evaluator.evaluate('Promise.resolve(7)', OPTIONS);
  assert.ok(types.isPromise(value), 'the completion is the Promise itself');
  assert.is(await value, 7);
  const awaited = await evaluator.evaluate('await null; Promise.resolve(8)', OPTIONS);
  assert.ok(types.isPromise(awaited.value));
  const pending = await evaluator.evaluate('new Promise(() => {})', OPTIONS);
  assert.ok(types.isPromise(pending.value), 'a never-settling completion does not hold up the evaluation');
  const rejected = await evaluator.evaluate('const failing = Promise.reject(new RangeError("completion")); failing.catch(() => {}); failing', OPTIONS);
  assert.ok(types.isPromise(rejected.value));
});

test('thrown errors reject with the thrown value, stack naming the program file', async () => {
  const error = await rejection(run('const ok = 1;\nthrow new TypeError("boom")'));
  assert.is(error.name, 'TypeError');
  assert.is(error.message, 'boom');
  assert.ok(frames(error.stack)[0]!.includes(`${FILENAME}:2:7`), error.stack);
  assert.is(await rejection(run('throw 42')), 42);
  const rejected = await rejection(run('await Promise.reject(new RangeError("rej"))'));
  assert.is(rejected.name, 'RangeError');
  assert.is(rejected.message, 'rej');
  const parse = await rejection(run('JSON.parse("{")'));
  assert.is(parse.name, 'SyntaxError');
  assert.ok(frames(parse.stack).some((line) => line.includes(`${FILENAME}:1:6`)), parse.stack);
  assert.is(await run('ok'), 1);
});

// Node lowers top-level await by wrapping the source in `(async () => { ` on its first line.
test('with top-level await, columns on the first line are 15 past the source', async () => {
  const error = await rejection(run('await null; throw new Error("shifted")\nnull'));
  assert.ok(frames(error.stack)[0]!.includes(`${FILENAME}:1:${19 + 15}`), error.stack);
  const second = await rejection(run('await null;\nthrow new Error("kept")'));
  assert.ok(frames(second.stack)[0]!.includes(`${FILENAME}:2:7`), second.stack);
});

test('a callback error fails its own pending evaluation; once that has settled, it is the process\'s uncaught exception', async () => {
  const error = await rejection(run('setTimeout(() => {\n  throw new Error("during") }, 5);\nawait new Promise((r) => setTimeout(r, 50))'));
  assert.is(error.message, 'during');
  assert.ok(frames(error.stack)[0]!.includes(`${FILENAME}:2:9`), error.stack);
  // Node's REPL would drop every frame of the anonymous callback from this stack; it is kept.
  await sleep(80);
  // The carrier's handler decides what becomes of it (carrier.ts: dropped, or the process ends).
  const handedOn = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
  assert.is(await run('setTimeout(() => { throw new Error("late") }, 5); 1'), 1);
  assert.is(((await handedOn) as Error).message, 'late');
  assert.is(await run('await new Promise((r) => setTimeout(r, 50)); 2'), 2);
});

test('syntax errors and incomplete input reject with the engine\'s SyntaxError', async () => {
  const table: [string, string, number][] = [
    ['const = 3', "Unexpected token '='", 1],
    ['let ok = 1;\nlet ok = 2;', "Identifier 'ok' has already been declared", 2],
    ['await foo(;', "Unexpected token ';'", 1],
    ['function f() {', 'Unexpected end of input', 1],
    ['const s = `abc', 'Unexpected end of input', 1],
    ['const x = await foo(', 'Unexpected end of input', 1],
    ['if (true) {\n  await 1;', 'Unexpected end of input', 2],
  ];
  for (const [program, message, line] of table) {
    const error = await rejection(run(program));
    assert.instance(error, SyntaxError, program);
    assert.is(error.constructor, SyntaxError, `${program}: not a repl.Recoverable`);
    assert.is(error.message, message, program);
    assert.ok(error.stack.startsWith(`${FILENAME}:${line}\n`), `${program}: ${error.stack}`);
    assert.ok(error.stack.endsWith(`SyntaxError: ${message}`), `${program}: ${error.stack}`);
    assert.equal(frames(error.stack), [], program);
  }
  assert.is(await run('typeof ok'), 'undefined');
});

test('relative dynamic import resolves from the working directory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ptc-repl-'));
  const home = process.cwd();
  try {
    await writeFile(join(dir, 'answer.mjs'), 'export const answer = 42;\n');
    process.chdir(dir);
    const options = { ...OPTIONS, cwd: dir };
    assert.is(await run('const mod = await import("./answer.mjs"); mod.answer', options), 42);
    assert.is(await run('mod.answer + 1', options), 43);
  } finally {
    process.chdir(home);
    await rm(dir, { recursive: true, force: true });
  }
});

test('nothing reaches process.stdout while evaluating', async () => {
  const write = process.stdout.write;
  const written: unknown[] = [];
  process.stdout.write = ((chunk: unknown) => { written.push(chunk); return true; }) as typeof write;
  try {
    await run('_ = 1; _error = 2; let s = 1');
    await rejection(run('let s = 2'));
    await rejection(run('throw new Error("quiet")'));
    await rejection(run('function f() {'));
    await rejection(run('await Promise.reject(new Error("quiet"))'));
    await rejection(run('.help'));
    const handedOn = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    await run('setTimeout(() => { throw new Error("late") }, 1); 1');
    await handedOn;
  } finally {
    process.stdout.write = write;
  }
  assert.equal(written, []);
});

test('dispose() closes the server without leaving handles or listeners', async () => {
  const settled = (): Promise<void> => new Promise((resolve) => { setImmediate(() => resolve()); });
  evaluator.dispose();
  await settled();
  const resources = process.getActiveResourcesInfo();
  const listeners = newListeners();
  const created = createNodeReplEvaluator();
  await created.evaluate('const x = await Promise.resolve(1); setTimeout(() => {}, 1); x', OPTIONS);
  await sleep(10);
  created.dispose();
  await settled();
  assert.equal(process.getActiveResourcesInfo(), resources);
  assert.equal(newListeners(), listeners);
  assert.match((await rejection(created.evaluate('1', OPTIONS))).message, /disposed/);

  const pending = createNodeReplEvaluator();
  const never = pending.evaluate('await new Promise(() => {})', OPTIONS);
  pending.dispose();
  assert.match((await rejection(never)).message, /disposed/);
  await settled();
  assert.equal(process.getActiveResourcesInfo(), resources);
  evaluator = createNodeReplEvaluator();
});

test.run();

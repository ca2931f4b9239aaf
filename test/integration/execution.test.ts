// Per-call execution in real carriers: async function bodies in erasable TypeScript, located
// exceptions and syntax errors, lossless completion values, invalid-output paths, the scrubbed
// environment, cwd and relative dynamic imports.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { runProgram, withoutWarm } from '../helpers/runtime.ts';
import { failureOf, valueOf } from '../helpers/assert.ts';

/** Where the default filename puts the program: program.ts in the cwd. */
const FILE = resolvePath('program.ts');


/** 1-based column of `needle` in line `line` (1-based) of `program`. */
function columnOf(program: string, line: number, needle: string): number {
  const index = program.split('\n')[line - 1]!.indexOf(needle);
  assert.ok(index >= 0, `"${needle}" not on line ${line}`);
  return index + 1;
}

test('a program is an async function body: top-level await and return', async () => {
  const result = await runProgram('const half = await Promise.resolve(21);\nreturn half * 2;');
  assert.equal(withoutWarm(result), { status: 'ok', value: 42, output: [], sandbox: result.sandbox });
});

test('a body without return succeeds with no value', async () => {
  const result = await runProgram('await null;');
  assert.is(result.status, 'ok');
  assert.not.ok('value' in result);
  assert.not.ok('hint' in result, 'an await is run for its effect');
  assert.equal(result.output, []);
});

test('a body that ends with a bare expression returns nothing and says why in a hint', async () => {
  const result = await runProgram('const total: number = 40 + 2;\ninspect("counted");\ntotal');
  assert.equal(withoutWarm(result), {
    status: 'ok',
    output: [{ type: 'text', text: 'counted\n', stream: 'stdout' }],
    sandbox: result.sandbox,
    hint: 'the program ended with an expression and returned nothing: a program is an async function body, so write `return <expression>` to hand back its value',
  });
  // Ending with a call is the normal way to finish; a discarded completion expects no value.
  assert.not.ok('hint' in (await runProgram('const total = 42;\ninspect(total)')));
  assert.not.ok('hint' in (await runProgram('const total = 42;\ntotal', { discardCompletion: true })));
});

test('erasable TypeScript runs', async () => {
  const program = [
    'interface Point { x: number; y: number }',
    'type Pair<T> = [T, T];',
    'const swap = <T,>([a, b]: Pair<T>): Pair<T> => [b, a];',
    'const p = { x: 1, y: 2 } satisfies Point;',
    'return swap<number>([p.x, p.y as number]);',
  ].join('\n');
  assert.equal(valueOf(await runProgram(program)), [2, 1]);
});

test('type stripping keeps positions: an error on line 3 is reported at line 3 and its column', async () => {
  const program = [
    'const label: string = "x"; interface Unused { a: Array<Map<string, number>> }',
    'function twice<T extends object | number>(value: T): [T, T] { return [value, value]; }',
    'const pair: [number, number] = twice<number>(1); throw new RangeError(`bad ${label} ${pair}`);',
  ].join('\n');
  const column = columnOf(program, 3, 'new RangeError');
  assert.equal(failureOf(await runProgram(program)), {
    kind: 'exception',
    name: 'RangeError',
    message: 'bad x 1,1',
    stack: `RangeError: bad x 1,1\n    at ${FILE}:3:${column}`,
    location: { line: 3, column },
  });
});

test('non-erasable TypeScript is a located SyntaxError naming the construct', async () => {
  const table: Array<[string, string, number, string]> = [
    // program, construct named in the message, line, text at the reported column
    ['enum Color { Red, Green }\nreturn Color.Red;', 'enum', 1, 'enum Color'],
    ['const base = 1;\nnamespace Geometry { export const unit = base; }\nreturn Geometry.unit;', 'namespace', 2, 'namespace Geometry'],
    ['const a = 1;\nclass Box {\n  constructor(private size: number) {}\n}\nreturn new Box(a);', 'parameter property', 3, 'size: number'],
  ];
  for (const [program, construct, line, at] of table) {
    const failure = failureOf(await runProgram(program));
    const column = columnOf(program, line, at);
    assert.is(failure.kind, 'exception', construct);
    assert.is(failure.name, 'SyntaxError', construct);
    assert.ok(failure.message.includes(construct), `"${failure.message}" should name ${construct}`);
    assert.equal(failure.location, { line, column }, construct);
    const [source, caret] = failure.excerpt!.split('\n');
    assert.is(source, program.split('\n')[line - 1], construct);
    assert.match(caret!, new RegExp(`^ {${column - 1}}\\^+$`), construct);
  }
});

test('JavaScript syntax errors have a message, a location and an excerpt with a caret', async () => {
  const table: Array<[string, number, number, string?]> = [
    // program, line, column, exact message where the engine's wording is stable
    ['const a = 1;\nreturn (1 +;', 2, 12],
    ['const o = {\n  a: 1,\n  b: 2,,\n};', 3, 8],
    ['let a = 1;\nlet a = 2;', 2, 5, "Identifier 'a' has already been declared"],
    ['const x = 1;\n  delete x;', 2, 10, 'Delete of an unqualified identifier in strict mode.'],
  ];
  for (const [program, line, column, message] of table) {
    const failure = failureOf(await runProgram(program));
    assert.is(failure.kind, 'exception', program);
    assert.is(failure.name, 'SyntaxError', program);
    assert.ok(failure.message.length > 0, program);
    if (message !== undefined) assert.is(failure.message, message);
    assert.equal(failure.location, { line, column }, program);
    const [source, caret] = failure.excerpt!.split('\n');
    assert.is(source, program.split('\n')[line - 1], program);
    assert.match(caret!, new RegExp(`^ {${column - 1}}\\^+$`), program);
  }
});

test('a thrown error has name, message, location and a stack of program frames only', async () => {
  const program = [
    'function inner(): never { throw new TypeError("bad input"); }',
    'function outer() { inner(); }',
    'await null;',
    'outer();',
  ].join('\n');
  const [c1, c2, c4] = [columnOf(program, 1, 'new TypeError'), columnOf(program, 2, 'inner()'), columnOf(program, 4, 'outer()')];
  assert.equal(failureOf(await runProgram(program)), {
    kind: 'exception',
    name: 'TypeError',
    message: 'bad input',
    stack: [`TypeError: bad input`, `    at inner (${FILE}:1:${c1})`, `    at outer (${FILE}:2:${c2})`, `    at ${FILE}:4:${c4}`].join('\n'),
    location: { line: 1, column: c1 },
  });
});

test('an error thrown after an await has a location and only program frames', async () => {
  const failure = failureOf(await runProgram('const fail = async () => { await null; throw new Error("late"); };\nawait fail();'));
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'Error');
  assert.is(failure.message, 'late');
  assert.equal(failure.location, { line: 1, column: columnOf('const fail = async () => { await null; throw new Error("late"); };', 1, 'new Error') });
  for (const frame of failure.stack!.split('\n').slice(1)) assert.ok(frame.includes(FILE), `frame outside the program: ${frame}`);
});

test('throwing a non-error value is still an exception', async () => {
  assert.equal(failureOf(await runProgram('throw "text";')), { kind: 'exception', name: 'Error', message: "Uncaught 'text'" });
  assert.equal(failureOf(await runProgram('throw { code: 7 };')), { kind: 'exception', name: 'Error', message: 'Uncaught { code: 7 }' });
});

test('completion values are lossless: bigints, nested bigints, -0 and floats', async () => {
  assert.is(valueOf(await runProgram('return 12345678901234567890n;')), 12345678901234567890n);
  assert.equal(valueOf(await runProgram('return { ids: [2n ** 64n, -(2n ** 80n)], meta: { big: 9007199254740993n } };')), {
    ids: [18446744073709551616n, -1208925819614629174706176n],
    meta: { big: 9007199254740993n },
  });
  assert.ok(Object.is(valueOf(await runProgram('return -0;')), -0), '-0 keeps its sign');

  const floats = [0.1, -1.25, 1e-7, 5e-324, 1.7976931348623157e308, 1e21, 2 ** 53, 2 ** 60, 1e20, Math.PI];
  const value = valueOf(await runProgram('return [0.1, -1.25, 1e-7, 5e-324, 1.7976931348623157e308, 1e21, 2 ** 53, 2 ** 60, 1e20, Math.PI];')) as unknown[];
  assert.is(value.length, floats.length);
  floats.forEach((expected, index) => {
    assert.is(typeof value[index], 'number', `item ${index} stays a number`);
    assert.ok(Object.is(value[index], expected), `item ${index}: ${String(value[index])} !== ${expected}`);
  });
});

test('strings, booleans, null and nested containers round-trip exactly', async () => {
  const value = valueOf(await runProgram('return { s: "line\\n\\"quoted\\" \\u2028 é 😀 \\u0000", t: true, f: false, n: null, empty: [{}, []] };'));
  assert.equal(value, { s: 'line\n"quoted" \u2028 é 😀 \u0000', t: true, f: false, n: null, empty: [{}, []] });
});

test('lossy completion values are invalid-output naming the path', async () => {
  const table: Array<[string, string, string]> = [
    // program, path, what the message says about it
    ['return { when: new Date(0) };', 'value.when', 'Date'],
    ['return { a: 1, missing: undefined };', 'value.missing', 'undefined'],
    ['return { ratio: 0 / 0 };', 'value.ratio', 'NaN'],
    ['return { handler() {} };', 'value.handler', 'function'],
    ['return [new Map([[1, 2]])];', 'value[0]', 'Map'],
    ['class Point { x = 1; }\nreturn { "the point": new Point() };', 'value["the point"]', 'Point'],
    ['const node: any = { name: "n" };\nnode.self = node;\nreturn node;', 'value.self', 'circular'],
    ['return [1, , 3];', 'value[1]', 'sparse'],
  ];
  for (const [program, path, problem] of table) {
    const result = await runProgram(program);
    const failure = failureOf(result);
    assert.is(failure.kind, 'invalid-output', program);
    assert.is(failure.path, path, program);
    assert.ok(failure.message.includes(`${path} `) && failure.message.includes(problem), `"${failure.message}" should name ${path} and ${problem}`);
    assert.equal(result.output, []);
  }
});

test('discardCompletion omits the value without serializing it, keeping output', async () => {
  for (const program of ['inspect("shown");\nreturn new Date(0);', 'inspect("shown");\nreturn 12345678901234567890n;']) {
    const result = await runProgram(program, { discardCompletion: true });
    assert.equal(withoutWarm(result), { status: 'ok', output: [{ type: 'text', text: 'shown\n', stream: 'stdout' }], sandbox: result.sandbox });
  }
});

test('process.env is empty inside the program, however it is reached', async () => {
  process.env.PTC_TEST_SECRET = 'host-only';
  try {
    const table = [
      'return [Object.keys(process.env), process.env.PTC_TEST_SECRET ?? null];',
      'const { env } = await import("node:process");\nreturn [Object.keys(env), env.PTC_TEST_SECRET ?? null];',
      'return [Object.keys((await import("node:process")).env), (await import("node:process")).default.env.PTC_TEST_SECRET ?? null];',
      'const process = await import("node:process");\nreturn [Object.keys(process.env), process.env.PTC_TEST_SECRET ?? null];',
    ];
    for (const program of table) assert.equal(valueOf(await runProgram(program)), [[], null], program);
  } finally {
    delete process.env.PTC_TEST_SECRET;
  }
});

test('cwd is honoured and relative dynamic imports resolve from it', async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-execution-')));
  try {
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'double.mjs'), 'export const double = (n) => n * 2;\n');
    writeFileSync(join(dir, 'lib', 'greet.mjs'), 'export default (name) => `hello ${name}`;\n');
    const program = [
      'const { double } = await import("./double.mjs");',
      'const greet = (await import("./lib/greet.mjs")).default;',
      'const { readFile } = await import("node:fs/promises");',
      'return [double(21), greet("ptc"), process.cwd(), (await readFile("double.mjs", "utf8")).length];',
    ].join('\n');
    assert.equal(valueOf(await runProgram(program, { cwd: dir })), [42, 'hello ptc', dir, 36]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();

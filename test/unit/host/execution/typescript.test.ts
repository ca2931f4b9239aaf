// Type stripping per program format: a function body is stripped inside an async function, Scripts
// and REPL input as they are, so sloppy code keeps `await` as a name; errors keep their columns.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stripTypes } from '../../../../host/execution/typescript.ts';

test('sloppy formats keep `typeof await`; a function body reads it as the operator', () => {
  for (const format of ['vm-script', 'repl'] as const) {
    assert.equal(stripTypes('typeof await', 'p.ts', format), { ok: true, code: 'typeof await' }, format);
    assert.equal(stripTypes('const t: string = typeof await', 'p.ts', format), { ok: true, code: 'const t         = typeof await' }, format);
  }
  const body = stripTypes('typeof await', 'p.ts', 'async-function');
  assert.is(body.ok, false);
});

test('Script and REPL input with types and top-level await is stripped in place', () => {
  for (const format of ['vm-script', 'scoped-repl', 'repl'] as const) {
    assert.equal(stripTypes('let n: number = await f()\nn', 'p.ts', format), { ok: true, code: 'let n         = await f()\nn' }, format);
  }
});

test('a stripping error on the first line of a Script keeps its column', () => {
  const result = stripTypes('let x: = 1', '/w/p.ts', 'vm-script');
  assert.is(result.ok, false);
  if (result.ok) return;
  assert.equal(result.error.location, { line: 1, column: 8 });
  const body = stripTypes('let x: = 1', '/w/p.ts');
  assert.equal(!body.ok && body.error.location, { line: 1, column: 8 });
});

test('a REPL program in braces that only parses as an object says how to return the object', () => {
  const result = stripTypes('{ a: 1, b: [2] }', '/w/repl-1.ts', 'scoped-repl');
  assert.is(result.ok, false);
  if (result.ok) return;
  const message = "Expected ';', '}' or <eof> (a leading { ... } is a block: wrap an object literal in parentheses to make it the value)";
  assert.equal(result.error, {
    name: 'SyntaxError',
    message,
    location: { line: 1, column: 10 },
    excerpt: '{ a: 1, b: [2] }\n         ^',
    stack: `/w/repl-1.ts:1\n{ a: 1, b: [2] }\n         ^\n\nSyntaxError: ${message}`,
  });
  // A block that fails for another reason gets no such advice.
  const block = stripTypes('{ let x = ; }', '/w/repl-1.ts', 'scoped-repl');
  assert.ok(!block.ok && !block.error.message.includes('wrap an object literal'));
});

// Issue 33 §6: a span the parser reports at the end of the input has no caret in Node's message,
// and in a function body the wrapper's closing brace is where it notices; the location is then
// just after the program's last character. A span over several lines starts on its first line.
const LOCATED: Array<[string, number, number, string]> = [
  ['const a = 1;\nreturn (1 +', 2, 12, 'return (1 +\n           ^'],
  ['const a = 1;\n(1 +', 2, 5, '(1 +\n    ^'],
  ['let x: number = (1 +\n\n\n', 1, 21, 'let x: number = (1 +\n                    ^'],
  ['if (x) {\n  foo(', 2, 7, '  foo(\n      ^'],
  ['/* open comment', 1, 16, '/* open comment\n               ^'],
  ['let a = 1;\n  enum X {\n  A\n}', 2, 3, '  enum X {\n  ^^^^^^^^'],
];
for (const format of ['async-function', 'vm-script', 'scoped-repl', 'repl'] as const) {
  test(`a syntax error at the end of the input keeps its location, excerpt and caret (${format})`, () => {
    for (const [program, line, column, excerpt] of LOCATED) {
      const result = stripTypes(program, '/w/p.ts', format);
      assert.is(result.ok, false, program);
      if (result.ok) continue;
      assert.equal([result.error.location, result.error.excerpt], [{ line, column }, excerpt], `${format}: ${JSON.stringify(program)}`);
      assert.is(result.error.stack, `/w/p.ts:${line}\n${excerpt}\n\nSyntaxError: ${result.error.message}`);
    }
  });
}

test.run();

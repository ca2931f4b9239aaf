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

test.run();

// Captured output in real carriers: inspect() formatting and images, the native console, raw
// stream writes and child processes in order, live onOutput delivery, and the maxOutputBytes
// budget shared with the completion value.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join, resolve as resolvePath } from 'node:path';
import type { Bindings, OutputEntry, RunResult } from '../../host/index.ts';
import { runProgram, withoutWarm } from '../helpers/runtime.ts';
import { failureOf, show } from '../helpers/assert.ts';

const PNG = resolvePath(new URL('../fixtures/images/rgb-300x7.png', import.meta.url).pathname);
const GIF = join(PNG, '..', 'gif89a-303x11.gif');


function okOutput(result: RunResult): OutputEntry[] {
  assert.is(result.status, 'ok', `expected ok, got ${show(result)}`);
  return result.output;
}

/** The single text entry a run printed. */
function textOf(output: OutputEntry[]): string {
  assert.is(output.length, 1, `expected one text entry, got ${show(output)}`);
  assert.is(output[0]!.type, 'text');
  return (output[0] as { text: string }).text;
}

test('strings are shown raw, other values through util.inspect, each group ending in a newline', async () => {
  const table: Array<[string, string]> = [
    ['inspect("it\'s \\"raw\\"");', 'it\'s "raw"\n'],
    ['inspect("a", 1, "b", { c: true }, [null]);', "a 1 b { c: true } [ null ]\n"],
    ['inspect({ a: 1, b: undefined });', '{ a: 1, b: undefined }\n'],
    ['const root: any = { name: "root" };\nroot.self = root;\ninspect(root);', "<ref *1> { name: 'root', self: [Circular *1] }\n"],
    ['inspect("one");\ninspect("two", 2);', 'one\ntwo 2\n'],
    ['process.stdout.write("no newline");', 'no newline'],
  ];
  for (const [program, expected] of table) assert.is(textOf(okOutput(await runProgram(program))), expected, program);
});

test('inspect has no depth, array-length or string-length limits', async () => {
  const array = textOf(okOutput(await runProgram('inspect(Array.from({ length: 500 }, (_, i) => i));')));
  assert.equal(array.match(/\d+/g)!.map(Number), Array.from({ length: 500 }, (_, i) => i));
  assert.not.ok(array.includes('more item'));

  const nested = textOf(okOutput(await runProgram('let node: object = { leaf: "bottom" };\nfor (let i = 0; i < 20; i++) node = { level: i, child: node };\ninspect(node);')));
  assert.is(nested.match(/child:/g)!.length, 20);
  assert.ok(nested.includes("leaf: 'bottom'"));
  assert.not.ok(nested.includes('[Object]'));

  const long = textOf(okOutput(await runProgram('inspect({ text: "x".repeat(20000) + "END" });')));
  assert.ok(long.includes(`'${'x'.repeat(20000)}END'`));
  assert.not.ok(long.includes('more character'));
});

test('Error objects are shown with their stack', async () => {
  const text = textOf(okOutput(await runProgram('const cause = new RangeError("out of range");\ninspect({ error: cause });')));
  assert.ok(text.startsWith('{\n  error: RangeError: out of range\n      at '), text);
  assert.ok(text.includes(`${resolvePath('program.ts')}:1:`), text);
});

test('images appear in argument order, after the text of the argument that holds them', async () => {
  const program = [
    `const png = await Image.fromFile(${JSON.stringify(PNG)});`,
    `const gif = await Image.fromFile(${JSON.stringify(GIF)});`,
    'inspect("before", png, "after");',
    'inspect("in an array", [png, gif]);',
    'inspect({ cover: gif }, "then a map", new Map([["k", png]]), "and a set", new Set([gif]));',
    'return [png.attachmentId, gif.attachmentId];',
  ].join('\n');
  const result = await runProgram(program);
  assert.is(result.status, 'ok', show(result));
  const [png, gif] = (result as { value: string[] }).value;
  const image = (attachmentId: string): OutputEntry =>
    attachmentId === png ? { type: 'image', attachmentId, path: PNG, width: 300, height: 7 } : { type: 'image', attachmentId, path: GIF, width: 303, height: 11 };
  // Every text group ends in a newline; inside it, util.inspect's line breaks depend on path lengths.
  for (const entry of result.output) if (entry.type === 'text') assert.ok(entry.text.endsWith('\n'), show(entry));
  const flat = (text: string): string => text.replace(/Image \{[^}]*\}/g, 'Image {…}').replace(/\s+/g, ' ').trim();
  const shape = result.output.map((entry) => (entry.type === 'image' ? entry : { type: 'text', text: flat(entry.text), stream: entry.stream }));
  assert.equal(shape, [
    { type: 'text', text: 'before', stream: 'stdout' },
    image(png!),
    { type: 'text', text: 'after in an array [ Image {…}, Image {…} ]', stream: 'stdout' },
    image(png!),
    image(gif!),
    { type: 'text', text: '{ cover: Image {…} }', stream: 'stdout' },
    image(gif!),
    { type: 'text', text: "then a map Map(1) { 'k' => Image {…} }", stream: 'stdout' },
    image(png!),
    { type: 'text', text: 'and a set Set(1) { Image {…} }', stream: 'stdout' },
    image(gif!),
  ]);
});

test('when formatting throws, earlier arguments stay visible and the run fails with that exception', async () => {
  const program = [
    'inspect("first");',
    'const hostile = { [Symbol.for("nodejs.util.inspect.custom")]() { throw new TypeError("cannot format"); } };',
    'inspect("second", hostile, "never");',
  ].join('\n');
  const result = await runProgram(program);
  const failure = failureOf(result);
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'TypeError');
  assert.is(failure.message, 'cannot format');
  assert.equal(failure.location, { line: 2, column: program.split('\n')[1]!.indexOf('new TypeError') + 1 });
  assert.equal(result.output, [{ type: 'text', text: 'first\nsecond\n', stream: 'stdout' }]);
});

test('the native console and raw stream writes reach the output in order, each entry naming its stream', async () => {
  const program = [
    'console.log("log", 1, { a: [2] });',
    'inspect("inspected");',
    'console.error("error");',
    'process.stdout.write("out ");',
    'process.stderr.write(Buffer.from("err\\n"));',
    'console.info("%s=%d", "info", 3);',
    'console.warn("warn");',
  ].join('\n');
  assert.equal(okOutput(await runProgram(program)), [
    { type: 'text', text: 'log 1 { a: [ 2 ] }\ninspected\n', stream: 'stdout' },
    { type: 'text', text: 'error\n', stream: 'stderr' },
    { type: 'text', text: 'out ', stream: 'stdout' },
    { type: 'text', text: 'err\n', stream: 'stderr' },
    { type: 'text', text: 'info=3\n', stream: 'stdout' },
    { type: 'text', text: 'warn\n', stream: 'stderr' },
  ]);
});

// Child processes write straight to the carrier's stdout/stderr pipes, which the host reads
// separately from the control channel that carries the program's own output.
const CHILDREN = [
  'const { execSync, spawn } = await import("node:child_process");',
  'console.log("start");',
  'execSync("echo exec", { stdio: "inherit" });',
  'execSync("echo exec-stderr >&2", { stdio: "inherit" });',
  'const child = spawn("sh", ["-c", "echo spawned"], { stdio: "inherit" });',
  'await new Promise((resolve) => child.on("close", resolve));',
  'inspect("end");',
].join('\n');

test('child process output (execSync and spawn with inherited stdio) reaches the output, stderr marked', async () => {
  const output = okOutput(await runProgram(CHILDREN));
  const lines = output.map((entry) => (entry.type === 'text' ? entry.text : '')).join('').split('\n');
  assert.is(lines.pop(), '', 'the output ends in a newline');
  assert.equal([...lines].sort(), ['end', 'exec', 'exec-stderr', 'spawned', 'start']);
  assert.equal(output.filter((entry) => entry.type === 'text' && entry.stream === 'stderr'), [{ type: 'text', text: 'exec-stderr\n', stream: 'stderr' }]);
  // One pipe keeps its own order.
  assert.ok(lines.indexOf('exec') < lines.indexOf('spawned'), lines.join(' | '));
});

// Child output travels on the stdio pipes, the program's own on the control channel. The host
// drains the pipes before each control frame, so what a child wrote before the program's next
// output is placed before it, even with several runs at once. (The other direction, the
// program's output racing a child's later write, and stdout against stderr, have no order.)
const INTERLEAVED = [
  'const { execSync, spawn } = await import("node:child_process");',
  'execSync("echo exec", { stdio: "inherit" });',
  'inspect("after-exec");',
  'execSync("echo exec-stderr >&2", { stdio: "inherit" });',
  'inspect("after-stderr");',
  'const child = spawn("sh", ["-c", "echo spawned"], { stdio: "inherit" });',
  'await new Promise((resolve) => child.on("close", resolve));',
  'inspect("end");',
].join('\n');

test('child output written before the program\'s next output stays before it', async () => {
  const results = await Promise.all(Array.from({ length: 6 }, () => runProgram(INTERLEAVED)));
  for (const result of results) {
    const lines = okOutput(result).map((entry) => (entry.type === 'text' ? entry.text : '')).join('').split('\n');
    const at = (line: string): number => lines.indexOf(line);
    assert.ok(at('exec') >= 0 && at('exec') < at('after-exec'), lines.join(' | '));
    assert.ok(at('exec-stderr') >= 0 && at('exec-stderr') < at('after-stderr'), lines.join(' | '));
    assert.ok(at('spawned') >= 0 && at('spawned') < at('end'), lines.join(' | '));
  }
});

test('onOutput receives entries while the program runs', async () => {
  const seen: OutputEntry[] = [];
  let shown!: () => void;
  const firstShown = new Promise<void>((resolve) => {
    shown = resolve;
  });
  const onOutput = (entry: OutputEntry): void => {
    seen.push(entry);
    if (entry.type === 'text' && entry.text.includes('first')) shown();
  };
  // The binding only returns once the host has delivered "first": the run cannot finish otherwise.
  const bindings: Bindings = {
    waitUntilShown: async () => {
      await firstShown;
      return seen.length;
    },
  };
  const program = `inspect("first");\nconst seenSoFar = await waitUntilShown();\ninspect("second", await Image.fromFile(${JSON.stringify(PNG)}));\nreturn seenSoFar;`;
  const result = await runProgram(program, { bindings }, {}, { onOutput });
  assert.is(result.status, 'ok', show(result));
  assert.is((result as { value: number }).value, 1);
  const image = result.output[1]!;
  assert.equal(result.output, [{ type: 'text', text: 'first\nsecond\n', stream: 'stdout' }, image]);
  assert.equal(seen, [{ type: 'text', text: 'first\n', stream: 'stdout' }, { type: 'text', text: 'second\n', stream: 'stdout' }, image]);
});

test('maxOutputBytes: output beyond the budget is an output-limit failure keeping the fitting prefix', async () => {
  const table: Array<[string, string, string]> = [
    // program, full text it prints, what it is about
    ['process.stdout.write("a".repeat(60));\nprocess.stdout.write("b".repeat(60));', 'a'.repeat(60) + 'b'.repeat(60), 'two raw writes'],
    ['inspect("a".repeat(59));\ninspect("b".repeat(59));', `${'a'.repeat(59)}\n${'b'.repeat(59)}\n`, 'two inspect groups'],
    ['inspect("x".repeat(5000));', `${'x'.repeat(5000)}\n`, 'one large group'],
    ['process.stdout.write("€".repeat(60));', '€'.repeat(60), 'three-byte characters'],
    ['process.stdout.write("é".repeat(60));', 'é'.repeat(60), 'two-byte characters'],
    ['process.stdout.write("a" + "😀".repeat(30));', `a${'😀'.repeat(30)}`, 'surrogate pairs'],
  ];
  for (const [program, full, about] of table) {
    const result = await runProgram(program, {}, { maxOutputBytes: 100 });
    const failure = failureOf(result);
    assert.is(failure.kind, 'output-limit', about);
    assert.ok(failure.message.includes('maxOutputBytes') && failure.message.includes('100'), failure.message);
    const text = textOf(result.output);
    const bytes = Buffer.byteLength(text);
    assert.ok(bytes <= 100, `${about}: ${bytes} bytes kept`);
    assert.not.ok(text.includes('\uFFFD'), `${about}: a character was split`);
    assert.ok(full.startsWith(text), `${about}: not a prefix`);
    const next = String.fromCodePoint(full.codePointAt(text.length)!);
    assert.ok(bytes + Buffer.byteLength(next) > 100, `${about}: the next character would have fit`);
  }
});

test('maxOutputBytes: exactly the budget with no value succeeds', async () => {
  for (const program of ['process.stdout.write("a".repeat(100));', 'inspect("a".repeat(49));\ninspect("b".repeat(49));']) {
    const output = okOutput(await runProgram(program, {}, { maxOutputBytes: 100 }));
    assert.is(Buffer.byteLength(textOf(output)), 100, program);
  }
});

test('maxOutputBytes: the completion value shares the budget', async () => {
  const printed = 'a'.repeat(90);
  const over = await runProgram(`process.stdout.write(${JSON.stringify(printed)});\nreturn "x".repeat(18);`, {}, { maxOutputBytes: 100 });
  const failure = failureOf(over);
  assert.is(failure.kind, 'output-limit');
  assert.ok(failure.message.includes('completion value') && failure.message.includes('100'), failure.message);
  assert.equal(over.output, [{ type: 'text', text: printed, stream: 'stdout' }]);

  const fits = await runProgram(`process.stdout.write(${JSON.stringify(printed)});\nreturn "x".repeat(8);`, {}, { maxOutputBytes: 100 });
  assert.equal(withoutWarm(fits), { status: 'ok', value: 'x'.repeat(8), output: [{ type: 'text', text: printed, stream: 'stdout' }], sandbox: fits.sandbox });
});

test('maxOutputBytes: an image descriptor shares the budget', async () => {
  const result = await runProgram(`inspect("shown");\ninspect(await Image.fromFile(${JSON.stringify(PNG)}));`, {}, { maxOutputBytes: 100 });
  assert.is(failureOf(result).kind, 'output-limit');
  assert.equal(result.output, [{ type: 'text', text: 'shown\n', stream: 'stdout' }]);
});

test.run();

// Limits at their edges: the smallest accepted maxMessageBytes still carries completions and
// diagnostics, and every diagnostic the program controls is counted against maxOutputBytes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { failureText, type RunResult, type SandboxReport } from '../../host/index.ts';
import { reportLocation, runProgram, withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { failureOf } from '../helpers/assert.ts';

const SANDBOX: SandboxReport = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } as SandboxReport;
const SMALLEST = { maxMessageBytes: 1024 };

test('maxMessageBytes 1024: plain completions succeed', async () => {
  assert.equal(withoutWarm(await runProgram('return 1', {}, SMALLEST)), { status: 'ok', value: 1, output: [], sandbox: SANDBOX });
  assert.equal(withoutWarm(await runProgram("inspect('hi'); return { a: [1, 2, 'x'], b: 12345678901234567890n }", {}, SMALLEST)), {
    status: 'ok', value: { a: [1, 2, 'x'], b: 12345678901234567890n }, output: [{ type: 'text', text: 'hi\n', stream: 'stdout' }], sandbox: SANDBOX,
  });
  // 602 bytes of JSON text without escapes: fits one frame of 1024 with its envelope.
  assert.equal(withoutWarm(await runProgram("return 'q'.repeat(600)", {}, SMALLEST)), { status: 'ok', value: 'q'.repeat(600), output: [], sandbox: SANDBOX });
});

test('maxMessageBytes 1024: a value counts its JSON text once, escapes and all; one byte over is output-limit', async () => {
  // 602 bytes of JSON text: the quotes are not escaped a second time inside the reply frame.
  assert.equal(withoutWarm(await runProgram(`return '"'.repeat(300)`, {}, SMALLEST)), { status: 'ok', value: '"'.repeat(300), output: [], sandbox: SANDBOX });
  assert.equal(withoutWarm(await runProgram("return 'q'.repeat(1022)", {}, SMALLEST)), { status: 'ok', value: 'q'.repeat(1022), output: [], sandbox: SANDBOX });
  const failure = failureOf(await runProgram("return 'q'.repeat(1023)", {}, SMALLEST));
  assert.is(failure.kind, 'output-limit');
  assert.match(failure.message, /the completion value \(1025 bytes\) does not fit .*maxMessageBytes 1024/);
});

test('maxMessageBytes 1024: a long exception message is cut to fit the frame, not turned into protocol', async () => {
  const failure = failureOf(await runProgram("throw new RangeError('e'.repeat(3000))", {}, SMALLEST));
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'RangeError');
  assert.ok(/^e+$/.test(failure.message) && failure.message.length > 100 && failure.message.length < 1024, `${failure.message.length} chars`);
  assert.equal(failure.location, { line: 1, column: 7 });
  // Issue 33: the caller learns that what it holds is a prefix.
  assert.is(failure.truncated, true);
});

test('maxMessageBytes 1024: an invalid-output diagnostic with a huge key is cut to fit the frame', async () => {
  const failure = failureOf(await runProgram("return { ['k'.repeat(2000)]: new Date() }", {}, SMALLEST));
  assert.is(failure.kind, 'invalid-output');
  assert.ok(failure.message.startsWith('the completion value is not lossless JSON: value.kkk'), failure.message);
  assert.ok(failure.path!.startsWith('value.kkk') && failure.path!.length > 200, failure.path);
  assert.ok(Buffer.byteLength(failure.message) + Buffer.byteLength(failure.path ?? '') < 1024);
  assert.is(failure.truncated, true);
});

// A deliberate difference from the reference (README, Differences from the reference): an
// exception's diagnostic is cut to what the budget leaves and the run stays an exception, while a
// completion value over the budget is output-limit as the reference says.
test('maxOutputBytes: an exception diagnostic is cut to the budget the output leaves, and stays an exception', async () => {
  const thrown = await runProgram("inspect('x'.repeat(150)); throw new Error('e'.repeat(500))", {}, { maxOutputBytes: 200 });
  const failure = failureOf(thrown);
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'Error');
  assert.ok(/^e+$/.test(failure.message) && failure.message.length < 50, failure.message);
  assert.is(failure.truncated, true);
  // What a model reads of the failure says so too.
  assert.ok(failureText(failure).endsWith('\n(this diagnostic was cut to fit the output budget)'), failureText(failure));
  assert.equal(thrown.output, [{ type: 'text', text: `${'x'.repeat(150)}\n`, stream: 'stdout' }]);
  // A diagnostic that fits is whole, and not marked.
  const whole = failureOf(await runProgram("inspect('x'.repeat(100)); throw new Error('e'.repeat(20))", {}, { maxOutputBytes: 200 }));
  assert.equal([whole.message, whole.truncated], ['e'.repeat(20), undefined]);
  const returned = failureOf(await runProgram("inspect('x'.repeat(150)); return 'v'.repeat(100)", {}, { maxOutputBytes: 200 }));
  assert.equal(returned, { kind: 'output-limit', message: 'the completion value exceeded maxOutputBytes (200 bytes); the output that fit is kept' });
});

test('maxOutputBytes: the invalid-output diagnostic is counted against the budget with the output', async () => {
  const result = await runProgram("inspect('x'.repeat(150)); return { ['k'.repeat(100)]: new Date() }", {}, { maxOutputBytes: 200 });
  const failure = failureOf(result);
  assert.is(failure.kind, 'invalid-output');
  const output = (result as Extract<RunResult, { status: 'failed' }>).output;
  assert.equal(output, [{ type: 'text', text: `${'x'.repeat(150)}\n`, stream: 'stdout' }]);
  const used = 151 + Buffer.byteLength(failure.message) + Buffer.byteLength(failure.path ?? '');
  assert.is(used, 200, 'output and diagnostic fill the budget exactly');
  // The 49 bytes left after the output hold the start of the message; the path no longer fits.
  assert.is(failure.message, 'the completion value is not lossless JSON: value.');
  assert.is(failure.path, '');
  assert.is(failure.truncated, true);
});


// A loop that never yields gives the carrier's event loop no turn: frames must leave as they are
// written (carrier/channel/blocking-write.ts), or the host would see none of them and the run
// would end at its deadline with its output lost.
for (const program of ["for (;;) inspect('x'.repeat(1000))", "for (;;) console.log('y'.repeat(100))", "for (;;) process.stdout.write('z'.repeat(5000))"]) {
  test(`output budget: ${program} ends as output-limit with the output that fit`, async () => {
    const budget = 2 * 1024 * 1024;
    const result = await runProgram(program, { timeoutMs: 120_000 }, { maxOutputBytes: budget });
    assert.equal(failureOf(result), { kind: 'output-limit', message: `captured output exceeded maxOutputBytes (${budget} bytes); the output that fit is kept` });
    const kept = result.output.map((entry) => (entry.type === 'text' ? entry.text : '')).join('');
    assert.is(kept.length, budget);
    assert.ok(/^[xyz\n]+$/.test(kept));
  });
}

test.run();

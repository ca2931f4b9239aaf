// maxMessageBytes through real carriers: it counts a value's or argument list's JSON text once
// (that text travels unescaped beside the frame's envelope), both sides agree on it, and what
// does not fit fails as the README says (output-limit, PTC_MESSAGE_LIMIT, a cut diagnostic),
// never as protocol.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, SandboxReport } from '../../host/index.ts';
import { reportLocation, runProgram, withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { failureOf } from '../helpers/assert.ts';

const SANDBOX: SandboxReport = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } as SandboxReport;
const MiB = 1024 * 1024;
const LIMIT = { maxMessageBytes: MiB };

test('a value of 500,000 quotes (1,000,002 bytes of JSON) fits a 1 MiB message', async () => {
  const result = await runProgram(`return '"'.repeat(500_000)`, {}, LIMIT);
  assert.equal(withoutWarm(result), { status: 'ok', value: '"'.repeat(500_000), output: [], sandbox: SANDBOX });
});

test('a value whose JSON text is exactly maxMessageBytes fits; one byte more is output-limit', async () => {
  // "x...x" with its two quotes is the JSON text.
  const fits = await runProgram(`return 'x'.repeat(${MiB - 2})`, {}, LIMIT);
  assert.equal(withoutWarm(fits), { status: 'ok', value: 'x'.repeat(MiB - 2), output: [], sandbox: SANDBOX });
  const over = await runProgram(`inspect('kept'); return 'x'.repeat(${MiB - 1})`, {}, LIMIT);
  assert.equal(withoutWarm(over), {
    status: 'failed',
    failure: {
      kind: 'output-limit',
      message: `the completion value (${MiB + 1} bytes) does not fit maxOutputBytes (67108864) or one control message (maxMessageBytes ${MiB}); the output that fit is kept`,
    },
    output: [{ type: 'text', text: 'kept\n', stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test('a binding argument of 450,000 quotes reaches the binding under a 1 MiB message', async () => {
  let received = '';
  const result = await runProgram(`return await echo('"'.repeat(450_000))`, { bindings: { echo: async (text: string) => ((received = text), text.length) } }, LIMIT);
  assert.equal(withoutWarm(result), { status: 'ok', value: 450_000, output: [], sandbox: SANDBOX });
  assert.is(received, '"'.repeat(450_000));
});

test('arguments over maxMessageBytes fail the call in the program with PTC_MESSAGE_LIMIT', async () => {
  let called = false;
  const program = `try { await echo('x'.repeat(${MiB})); } catch (error) { return [error.name, error.code, error.binding, error.message]; }`;
  const result = await runProgram(program, { bindings: { echo: async () => (called = true) } }, LIMIT);
  assert.equal(withoutWarm(result), {
    status: 'ok',
    value: ['BindingError', 'PTC_MESSAGE_LIMIT', 'echo', `echo: arguments of calls in flight would exceed maxMessageBytes (${MiB} bytes)`],
    output: [],
    sandbox: SANDBOX,
  });
  assert.not.ok(called);
});

test('a binding result over maxMessageBytes fails the call with PTC_MESSAGE_LIMIT, not the carrier', async () => {
  const program = `try { await big(); } catch (error) { return [error.code, error.message]; }`;
  const result = await runProgram(program, { bindings: { big: async () => 'y'.repeat(MiB) } }, LIMIT);
  assert.equal(withoutWarm(result), {
    status: 'ok',
    value: ['PTC_MESSAGE_LIMIT', `big: the result (${MiB + 2} bytes of JSON) is larger than one control message (maxMessageBytes ${MiB})`],
    output: [],
    sandbox: SANDBOX,
  });
});

test('a 2 MB exception message under a 1 MiB message is an exception, its report cut to fit', async () => {
  const result = await runProgram(`throw new Error('"'.repeat(2_000_000))`, {}, LIMIT);
  const reported = failureOf(result);
  assert.is(reported.kind, 'exception');
  assert.is(reported.name, 'Error');
  assert.ok(/^"+$/.test(reported.message), 'the message is a prefix of the thrown one');
  // Each quote is two bytes escaped; the report (message, stack and the rest) fits one message.
  const reportBytes = Buffer.byteLength(JSON.stringify({ message: reported.message, stack: reported.stack ?? '' }));
  assert.ok(reportBytes <= MiB, `the report takes ${reportBytes} bytes`);
  assert.ok(reported.message.length > 100_000, `only ${reported.message.length} characters of the message were kept`);
  assert.is(reported.truncated, true);
});

test('the default limit carries a value of 32,000,000 quotes (64 MB of JSON text)', async () => {
  const result = await runProgram(`return '"'.repeat(32_000_000)`, {}, { timeoutMs: 60_000 });
  assert.is(result.status, 'ok', JSON.stringify(result).slice(0, 300));
  assert.is((result as Extract<RunResult, { status: 'ok' }>).value, '"'.repeat(32_000_000));
});

test.run();

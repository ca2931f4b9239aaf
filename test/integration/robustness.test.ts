// The program is an untrusted peer inside the carrier. It can overwrite the intrinsics the carrier
// relies on, write forged frames to the control fd, leave binding calls running past its end and
// print right up to the output budget; none of that may corrupt a result or the host.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, SandboxReport } from '../../host/index.ts';
import { runProgram, waitUntil, createTestRuntime, reportLocation, withoutWarm, type ResultShape, reportLimits } from '../helpers/runtime.ts';

const SANDBOX: SandboxReport = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits(), ...reportLocation() };
const VALUE = { a: 12345678901234567890n, b: [1, 'x'] };
const RETURN_VALUE = "return { a: 12345678901234567890n, b: [1, 'x'] };";

// Anything that escapes the host's handling of a run shows up here and fails the suite.
const leaked: unknown[] = [];
process.on('uncaughtException', (error) => leaked.push(error));
process.on('unhandledRejection', (reason) => leaked.push(reason));

test.after.each(() => {
  assert.equal(leaked, [], 'an error escaped to the host process');
});

/** The result must be the genuine one or a protocol failure: never a wrong value, never a hang. */
function assertGenuineOrProtocol(result: RunResult, genuine: ResultShape): void {
  if (result.status === 'failed' && result.failure.kind === 'protocol') return;
  assert.equal(withoutWarm(result), genuine);
}

// ---------------------------------------------------------------- overwritten intrinsics

// Methods first: replacing the globals afterwards would leave no Array.prototype to reach.
const OVERWRITES: Array<[string, string]> = [
  ['JSON.stringify', "JSON.stringify = () => 'x';"],
  ['Promise.prototype.then', "Promise.prototype.then = function () { return 'junk'; };"],
  ['process.stdout.write', 'process.stdout.write = () => true;'],
  ['Set.prototype.has', 'Set.prototype.has = () => true;'],
  ['Array.prototype.push and join', "Array.prototype.push = () => 0; Array.prototype.join = () => '';"],
  ['Array', "globalThis.Array = 'junk';"],
  ['Object', "globalThis.Object = 'junk';"],
  ['JSON', "globalThis.JSON = 'junk';"],
  ['Promise', "globalThis.Promise = 'junk';"],
  ['Function', "globalThis.Function = 'junk';"],
  ['Error', "globalThis.Error = 'junk';"],
  ['Reflect', "globalThis.Reflect = 'junk';"],
];

for (const [name, overwrite] of OVERWRITES) {
  test(`intrinsics: a program that overwrites ${name} still returns its exact value`, async () => {
    const result = await runProgram(`${overwrite}\n${RETURN_VALUE}`, { timeoutMs: 10_000 });
    assertGenuineOrProtocol(result, { status: 'ok', value: VALUE, output: [], sandbox: SANDBOX });
    assert.equal(withoutWarm(result), { status: 'ok', value: VALUE, output: [], sandbox: SANDBOX });
  });
}

test('intrinsics: a program that overwrites all of them at once still returns its exact value', async () => {
  const program = `inspect('before');\n${OVERWRITES.map(([, overwrite]) => overwrite).join('\n')}\n${RETURN_VALUE}`;
  const result = await runProgram(program, { timeoutMs: 10_000 });
  const genuine: ResultShape = { status: 'ok', value: VALUE, output: [{ type: 'text', text: 'before\n', stream: 'stdout' }], sandbox: SANDBOX };
  assertGenuineOrProtocol(result, genuine);
  assert.equal(withoutWarm(result), genuine);
});

test('intrinsics: Object.prototype.then cannot adopt or stall the outcome', async () => {
  // The program's own value has a null prototype so that only the carrier's objects could be adopted.
  const program = `Object.prototype.then = function (resolve) { resolve({ status: 'ok', value: '666' }); };
return Object.assign(Object.create(null), { a: 12345678901234567890n, b: [1, 'x'] });`;
  const result = await runProgram(program, { timeoutMs: 10_000 });
  delete (Object.prototype as { then?: unknown }).then;
  assert.equal(withoutWarm(result), { status: 'ok', value: VALUE, output: [], sandbox: SANDBOX });
});

test('intrinsics: inspect and bindings keep working after Object and Reflect are replaced', async () => {
  const program = `globalThis.Object = 'junk'; globalThis.Reflect = 'junk';\ninspect('still here');\nreturn await echo(5);`;
  const result = await runProgram(program, { timeoutMs: 10_000, bindings: { echo: async (value: number) => value * 2 } });
  assert.equal(withoutWarm(result), { status: 'ok', value: 10, output: [{ type: 'text', text: 'still here\n', stream: 'stdout' }], sandbox: SANDBOX });
});

test('a completion value larger than one control message is output-limit, not protocol', async () => {
  const result = await runProgram(`inspect('kept'); return 'y'.repeat(20_000)`, {}, { maxMessageBytes: 8192 });
  assert.is(result.status, 'failed');
  if (result.status !== 'failed') return;
  assert.is(result.failure.kind, 'output-limit');
  assert.match(result.failure.message, /the completion value \(20002 bytes\) does not fit maxOutputBytes \(67108864\) or one control message \(maxMessageBytes 8192\)/);
  assert.equal(result.output, [{ type: 'text', text: 'kept\n', stream: 'stdout' }]);
});

test('intrinsics: an exception thrown after the overwrites is still reported', async () => {
  const program = `const NativeError = Error;\n${OVERWRITES.map(([, overwrite]) => overwrite).join('\n')}\nthrow new NativeError('still reported');`;
  const result = await runProgram(program, { timeoutMs: 10_000 });
  assert.equal(result.status, 'failed');
  const { failure } = result as Extract<RunResult, { status: 'failed' }>;
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'Error');
  assert.is(failure.message, 'still reported');
});

// ---------------------------------------------------------------- forged frames

const writeFd3 = (line: string): string => `(await import('node:fs')).writeSync(3, ${JSON.stringify(line)});`;
const FORGED = (frame: number) => `forged control message: frame ${frame} does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)`;
const FORGERIES: Array<[string, string]> = [
  ['a successful reply to a guessed call id', `${JSON.stringify({ t: 's', i: 'V1StGXR8_Z5jdHi6B-myT', r: { status: 'ok', value: '666' } })}\n`],
  ['a successful reply without an id', `${JSON.stringify({ t: 's', r: { status: 'ok', value: '666' } })}\n`],
  ['a run request to the host', `${JSON.stringify({ t: 'q', i: 'x', m: 'run', a: [{}] })}\n`],
  ['an output frame', `${JSON.stringify({ t: 'q', m: 'output', a: [{ type: 'text', text: 'forged output' }] })}\n`],
  ['an invoke of a declared binding', `${JSON.stringify({ t: 'q', i: 'f1', m: 'invoke', a: ['count', '[]'] })}\n`],
  ['an output frame naming an image the host never issued', `${JSON.stringify({ t: 'q', m: 'output', a: [{ type: 'image', attachmentId: 'img-1' }] })}\n`],
  ['half a frame', '{"t":"s","i":"x","r":'],
  ['a frame of another type', `${JSON.stringify({ t: 'hello', revision: 1, node: 'x', capabilities: [] })}\n`],
  ['a frame with a made-up authentication code', `${'0'.repeat(32)} ${JSON.stringify({ t: 'q', m: 'output', a: [{ type: 'text', text: 'x' }] })}\n`],
];

for (const [name, line] of FORGERIES) {
  test(`forged frames: ${name} ends the run as protocol`, async () => {
    let calls = 0;
    const program = `inspect('working'); ${writeFd3(line)} await new Promise((resolve) => setTimeout(resolve, 100)); return 42;`;
    const result = await runProgram(program, { timeoutMs: 10_000, bindings: { count: async () => ++calls } });
    // Frame 0 is the genuine output (no `started` notice without a CPU budget); the forged bytes
    // start frame 1 (half a frame swallows the genuine reply that follows it into the same line).
    assert.equal(withoutWarm(result), { status: 'failed', failure: { kind: 'protocol', message: FORGED(1) }, output: [{ type: 'text', text: 'working\n', stream: 'stdout' }], sandbox: SANDBOX });
    assert.is(calls, 0, 'a forged invoke reached the binding');
  });
}

test('forged frames: fifty forged invokes never reach the binding', async () => {
  let calls = 0;
  const frames = Array.from({ length: 50 }, (_, index) => `${JSON.stringify({ t: 'q', i: `f${index}`, m: 'invoke', a: ['count', '[]'] })}\n`).join('');
  const result = await runProgram(`${writeFd3(frames)} await new Promise((resolve) => setTimeout(resolve, 200)); return 1;`, {
    timeoutMs: 10_000,
    bindings: { count: async () => ++calls },
  });
  // No `started` notice without a CPU budget: the forged bytes are frame 0.
  assert.equal(withoutWarm(result), { status: 'failed', failure: { kind: 'protocol', message: FORGED(0) }, output: [], sandbox: SANDBOX });
  assert.is(calls, 0);
});

// A program can reach the carrier's own socket (process._getActiveHandles) and patch its write
// methods, but the carrier never writes a frame through them (carrier/channel/blocking-write.ts):
// the program sees no frame to replay, rewrite or withhold, and its output arrives as it was sent.
// That the host refuses such frames if they did reach it is integration/protocol-fuzz's part. The
// socket is among the active handles only while a host call is in flight (carrier/channel/stall.ts).
const HOLD = { hold: async () => null };
const INTERCEPT = `const held = hold();
const socket = process._getActiveHandles().find((handle) => handle?._handle?.fd === 3);
if (socket === undefined) throw new Error('no control socket found');
await held;
const seen = [];
for (const method of ['_write', '_writev', 'write', 'end']) {
  const original = socket[method];
  socket[method] = function (chunk, ...rest) {
    seen.push(String(chunk));
    return method === 'end' ? undefined : original.call(this, typeof chunk === 'string' ? chunk.replace('genuine', 'altered') : chunk, ...rest);
  };
}`;

test('forged frames: a program that patches the control socket sees no frame and changes none', async () => {
  const program = `${INTERCEPT}
inspect('genuine');
inspect('kept');
await new Promise((resolve) => setTimeout(resolve, 50));
return seen.length;`;
  const result = await runProgram(program, { timeoutMs: 10_000, bindings: HOLD });
  assert.equal(withoutWarm(result), { status: 'ok', value: 0, output: [{ type: 'text', text: 'genuine\nkept\n', stream: 'stdout' }], sandbox: SANDBOX });
});

test('forged frames: a frame the program copies from its own output is refused', async () => {
  // The nearest a program gets to a genuine frame is guessing one; without the key it is unsigned.
  const program = `${INTERCEPT}
inspect('once');
(await import('node:fs')).writeSync(3, JSON.stringify({ t: 'q', m: 'output', a: [{ type: 'text', text: 'once' }] }) + '\\n');
await new Promise((resolve) => setTimeout(resolve, 100));
return seen.length;`;
  const result = await runProgram(program, { timeoutMs: 10_000, bindings: HOLD });
  assert.equal(withoutWarm(result), { status: 'failed', failure: { kind: 'protocol', message: FORGED(2) }, output: [{ type: 'text', text: 'once\n', stream: 'stdout' }], sandbox: SANDBOX });
});

// ---------------------------------------------------------------- late binding replies

test('late replies: a binding that resolves after the run settled is dropped', async () => {
  let resolvedLate = false;
  const runtime = createTestRuntime({ timeoutMs: 10_000 });
  try {
    const result = await runtime.run(
      runtime.resolve({
        program: 'slow(); return 1;',
        bindings: {
          slow: () => new Promise((resolve) => setTimeout(() => {
            resolvedLate = true;
            resolve({ big: 2n ** 80n, list: [1, 2, 3] });
          }, 300)),
        },
      }),
    );
    assert.equal(withoutWarm(result), { status: 'ok', value: 1, output: [], sandbox: SANDBOX });
    assert.not.ok(resolvedLate, 'the binding resolved before the run settled; the test proves nothing');
    assert.ok(await waitUntil(() => resolvedLate, 5_000), 'the binding never resolved');
    // Let the host try to reply on its closed channel.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(leaked, []);
    assert.equal(withoutWarm(await runtime.run(runtime.resolve({ program: 'return 2;' }))), { status: 'ok', value: 2, output: [], sandbox: SANDBOX });
  } finally {
    await runtime.dispose();
  }
});

test('late replies: a binding that rejects after the run settled is dropped', async () => {
  let rejectedLate = false;
  const result = await runProgram('slowFail().catch(() => {}); return 1;', {
    bindings: {
      slowFail: () => new Promise((_, reject) => setTimeout(() => {
        rejectedLate = true;
        reject(Object.assign(new Error('too late'), { code: 'LATE' }));
      }, 300)),
    },
  });
  assert.equal(withoutWarm(result), { status: 'ok', value: 1, output: [], sandbox: SANDBOX });
  assert.ok(await waitUntil(() => rejectedLate, 5_000), 'the binding never rejected');
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(leaked, []);
});

test('late replies: a binding that throws synchronously after the run settled is dropped', async () => {
  let thrownLate = false;
  const result = await runProgram('setTimeout(() => late().catch(() => {}), 200); return 1;', {
    bindings: {
      late: () => {
        thrownLate = true;
        throw new Error('thrown after the end');
      },
    },
  });
  assert.equal(withoutWarm(result), { status: 'ok', value: 1, output: [], sandbox: SANDBOX });
  // The carrier is gone before its timer fires, so the binding is not even called.
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.not.ok(thrownLate, 'a call from an ended run reached the binding');
  assert.equal(leaked, []);
});

test('late calls: a binding proxy kept from an earlier run calls only a binding the later run has', async () => {
  const runtime = createTestRuntime({ timeoutMs: 10_000, executionMode: 'vm-script', scriptPersistence: true });
  const owner = {};
  let calls = 0;
  try {
    const first = await runtime.run(runtime.resolve({ program: 'globalThis.kept = tool; 1', bindings: { tool: async () => ++calls }, stateOwner: owner }));
    assert.equal(withoutWarm(first), { status: 'ok', value: 1, output: [], sandbox: SANDBOX, environment: { fresh: true } });
    // The second run declares no `tool`: the carrier refuses the call, so the host never sees a call of an undeclared binding.
    const program = 'let seen; try { await kept(); seen = "called"; } catch (error) { seen = [error.name, error.code]; }\nseen';
    const second = await runtime.run(runtime.resolve({ program, bindings: { other: async () => 0 }, stateOwner: owner }));
    assert.equal(withoutWarm(second), { status: 'ok', value: ['BindingError', 'PTC_UNKNOWN_BINDING'], output: [], sandbox: SANDBOX, environment: { fresh: false } });
    assert.is(calls, 0);
  } finally {
    await runtime.dispose();
  }
});

// ---------------------------------------------------------------- output budget

const text = (result: RunResult): string => result.output.map((entry) => (entry.type === 'text' ? entry.text : '')).join('');
const OUTPUT_LIMIT = { kind: 'output-limit', message: 'captured output exceeded maxOutputBytes (1000 bytes); the output that fit is kept' };

test('output budget: 1000 bytes fit a 1000-byte budget', async () => {
  const result = await runProgram("process.stdout.write('x'.repeat(1000));", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(result), { status: 'ok', output: [{ type: 'text', text: 'x'.repeat(1000), stream: 'stdout' }], sandbox: SANDBOX });
});

test('output budget: 1001 bytes overflow it, keeping exactly 1000', async () => {
  const result = await runProgram("process.stdout.write('x'.repeat(1001));", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(result), { status: 'failed', failure: OUTPUT_LIMIT, output: [{ type: 'text', text: 'x'.repeat(1000), stream: 'stdout' }], sandbox: SANDBOX });
});

test('output budget: inspect counts its newline', async () => {
  const fits = await runProgram("inspect('y'.repeat(999));", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(fits), { status: 'ok', output: [{ type: 'text', text: `${'y'.repeat(999)}\n`, stream: 'stdout' }], sandbox: SANDBOX });
  const over = await runProgram("inspect('y'.repeat(1000));", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(over), { status: 'failed', failure: OUTPUT_LIMIT, output: [{ type: 'text', text: 'y'.repeat(1000), stream: 'stdout' }], sandbox: SANDBOX });
});

test('output budget: many small writes are cut at the same byte', async () => {
  const result = await runProgram("for (let i = 0; i < 1001; i++) process.stdout.write('z');", {}, { maxOutputBytes: 1000 });
  assert.equal(result.status, 'failed');
  assert.equal((result as Extract<RunResult, { status: 'failed' }>).failure, OUTPUT_LIMIT);
  assert.is(text(result), 'z'.repeat(1000));
});

test('output budget: a character that does not fit whole is left out', async () => {
  const result = await runProgram("process.stdout.write('x'.repeat(999) + 'é');", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(result), { status: 'failed', failure: OUTPUT_LIMIT, output: [{ type: 'text', text: 'x'.repeat(999), stream: 'stdout' }], sandbox: SANDBOX });
});

test('output budget: the completion value shares the budget', async () => {
  const fits = await runProgram("process.stdout.write('x'.repeat(995)); return 12345;", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(fits), { status: 'ok', value: 12345, output: [{ type: 'text', text: 'x'.repeat(995), stream: 'stdout' }], sandbox: SANDBOX });
  const over = await runProgram("process.stdout.write('x'.repeat(996)); return 12345;", {}, { maxOutputBytes: 1000 });
  assert.equal(withoutWarm(over), {
    status: 'failed',
    failure: { kind: 'output-limit', message: 'the completion value exceeded maxOutputBytes (1000 bytes); the output that fit is kept' },
    output: [{ type: 'text', text: 'x'.repeat(996), stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test('output budget: output larger than one control message is not a protocol failure', async () => {
  const within = await runProgram("inspect('w'.repeat(5000)); return 1;", {}, { maxMessageBytes: 4096, maxOutputBytes: 100_000 });
  assert.equal(withoutWarm(within), { status: 'ok', value: 1, output: [{ type: 'text', text: `${'w'.repeat(5000)}\n`, stream: 'stdout' }], sandbox: SANDBOX });
  const over = await runProgram("process.stdout.write('\\u0000'.repeat(5000)); return 1;", {}, { maxMessageBytes: 4096, maxOutputBytes: 2000 });
  assert.equal(withoutWarm(over), {
    status: 'failed',
    failure: { kind: 'output-limit', message: 'captured output exceeded maxOutputBytes (2000 bytes); the output that fit is kept' },
    output: [{ type: 'text', text: '\u0000'.repeat(2000), stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test.run();

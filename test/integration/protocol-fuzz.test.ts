// The host against a hostile carrier: a fake one (test/fixtures/protocol/fake-carrier.mjs) that
// speaks the real handshake, signs its frames with the real key, and then misbehaves. Each test
// asserts the whole failure, and that the host stays healthy: its memory grows by a bounded
// amount, no process is left behind, and a genuine carrier runs a program afterwards.
// (launch: source only — the fake carrier is the launch under test; the follow-up uses source.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRuntime, PROTOCOL_REVISION, type RunResult, type RuntimeConfig, type SandboxReport } from '../../host/index.ts';
import { childrenOf, repoRoot, withoutWarm, type ResultShape, reportLimits } from '../helpers/runtime.ts';

const SANDBOX: SandboxReport = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() };
const MiB = 1024 * 1024;
const node = join(repoRoot, 'node_modules/.bin/node');
const fixture = pathToFileURL(join(repoRoot, 'test/fixtures/protocol/fake-carrier.mjs')).href;
const wrappers = mkdtempSync(join(tmpdir(), 'ptc-fuzz-'));
test.after(() => rmSync(wrappers, { recursive: true, force: true }));

const leaked: unknown[] = [];
process.on('uncaughtException', (error) => leaked.push(error));
process.on('unhandledRejection', (reason) => leaked.push(reason));

interface Fuzz {
  result: RunResult;
  /** Peak growth of this process's resident memory during the run, in bytes. */
  grew: number;
}

/** Runs `program` on a fake carrier playing `scenario`, sampling the host's memory meanwhile. */
async function fuzz(scenario: string, options: { program?: string; bindings?: Record<string, (...args: any[]) => unknown>; config?: RuntimeConfig; timeoutMs?: number } = {}): Promise<Fuzz> {
  const wrapper = join(wrappers, `${scenario}.mjs`);
  writeFileSync(wrapper, `globalThis.scenario = ${JSON.stringify(scenario)};\nawait import(${JSON.stringify(fixture)});\n`);
  const runtime = createRuntime({
    launch: { kind: 'node-script', executable: node, bootstrapPath: wrapper },
    policy: { mode: 'full-access' },
    sandbox: { backend: 'none', require: 'none' },
    prestartCarrier: false,
    maxMessageBytes: MiB,
    ...options.config,
  });
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  try {
    const spec = runtime.resolve({ program: options.program ?? 'return 1', bindings: options.bindings ?? {}, timeoutMs: options.timeoutMs ?? 10_000 });
    const result = await runtime.run(spec);
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, grew: peak - before };
  } finally {
    clearInterval(sampler);
    await runtime.dispose();
  }
}

/** The host after a hostile run: bounded memory, no child left, and a genuine run still works. */
async function assertHealthy({ grew }: Fuzz, maxGrowth: number): Promise<void> {
  assert.ok(grew < maxGrowth, `the host grew by ${Math.round(grew / MiB)} MiB, more than ${Math.round(maxGrowth / MiB)} MiB`);
  assert.equal(childrenOf(process.pid).filter((child) => child.state !== 'Z'), [], 'a process was left behind');
  const runtime = createRuntime({ policy: { mode: 'full-access' }, prestartCarrier: false });
  try {
    const followUp = await runtime.run(runtime.resolve({ program: 'inspect("fine"); return 2' }));
    assert.equal(withoutWarm(followUp), { status: 'ok', value: 2, output: [{ type: 'text', text: 'fine\n', stream: 'stdout' }], sandbox: SANDBOX });
  } finally {
    await runtime.dispose();
  }
  assert.equal(leaked, [], 'an error escaped to the host process');
}

const protocol = (message: string, output: RunResult['output'] = []): ResultShape => ({ status: 'failed', failure: { kind: 'protocol', message }, output, sandbox: SANDBOX });
/** Generous: a few frames' worth of maxMessageBytes (1 MiB here) plus what starting runtimes costs. */
const SMALL_GROWTH = 48 * MiB;

test('a flood of 300,000 well-formed invokes fails at the first call past maxPendingCalls', async () => {
  let calls = 0;
  const run = await fuzz('flood-invokes', { bindings: { tool: async () => ++calls } });
  assert.equal(withoutWarm(run.result), protocol('invalid control message: the carrier made more than maxPendingCalls (128) binding calls at once'));
  // Calls that completed before the burst outran them count for nothing; the rest never ran.
  assert.ok(calls >= 128 && calls < 5_000, `${calls} of 300,000 calls reached the binding`);
  await assertHealthy(run, SMALL_GROWTH);
});

test('replies the carrier never reads make the host stop reading, not queue without end', async () => {
  let calls = 0;
  const run = await fuzz('flood-unread', { bindings: { tool: async () => (++calls, 'r'.repeat(64 * 1024)) }, timeoutMs: 3_000 });
  assert.equal(withoutWarm(run.result), { status: 'failed', failure: { kind: 'timeout', message: 'execution timed out during execution (deadline 3000 ms elapsed)', timeoutMs: 3000 }, output: [], sandbox: SANDBOX });
  // 2,000 calls were sent; the host serves only what fits its reply queue (1 MiB) and the socket buffers.
  assert.ok(calls < 400, `the host served ${calls} of 2,000 calls while none of its replies were read`);
  await assertHealthy(run, SMALL_GROWTH);
});

test('a 30 MB output frame of long integers is refused after its first thousand values', async () => {
  const run = await fuzz('huge-output', { config: { maxMessageBytes: 32 * MiB } });
  assert.equal(withoutWarm(run.result), protocol('unparsable control message: more than 1024 values at position 21427 (found "123456789012")'));
  // The frame is held once as bytes read and once as text; nothing is built from its values.
  await assertHealthy(run, 4 * 32 * MiB);
});

test('a 10 MB completion of long integers arrives whole', async () => {
  const run = await fuzz('huge-completion', { config: { maxMessageBytes: 16 * MiB } });
  assert.is(run.result.status, 'ok');
  const value = (run.result as Extract<RunResult, { status: 'ok' }>).value as unknown[];
  assert.is(value.length, 500_001);
  assert.is(value[499_999], 12345678901234567890n);
  // The value itself, half a million bigints, is most of this.
  await assertHealthy(run, 10 * 16 * MiB);
});

test('a frame longer than maxMessageBytes and its envelope is refused before it is buffered whole', async () => {
  const run = await fuzz('over-limit');
  const failure = (run.result as Extract<RunResult, { status: 'failed' }>).failure;
  assert.is(failure.kind, 'protocol');
  assert.match(failure.message, /^a control message \(\d+ bytes and more\) was longer than maxMessageBytes \(1048576 bytes\) and its 65536-byte envelope$/);
  await assertHealthy(run, SMALL_GROWTH);
});

test('a payload over maxMessageBytes is refused even inside the envelope allowance', async () => {
  const run = await fuzz('payload-over-limit', { bindings: { tool: async () => 1 } });
  assert.equal(withoutWarm(run.result), protocol('a control message carried 1048580 bytes of JSON text, more than maxMessageBytes (1048576 bytes)'));
  await assertHealthy(run, SMALL_GROWTH);
});

test('a payload after a message that carries none is refused', async () => {
  const run = await fuzz('payload-misplaced');
  assert.equal(withoutWarm(run.result), protocol('invalid control message: a payload follows a message that carries none (request "output")'));
  await assertHealthy(run, SMALL_GROWTH);
});

test('an unsigned frame after signed ones is forged', async () => {
  const run = await fuzz('unsigned');
  assert.equal(withoutWarm(run.result), protocol(
    "forged control message: frame 1 does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)",
    [{ type: 'text', text: 'signed', stream: 'stdout' }],
  ));
  await assertHealthy(run, SMALL_GROWTH);
});

// What a program could do to genuine frames if it could reach them on their way out (it cannot:
// carrier/channel/blocking-write.ts writes them below anything a program can patch, which
// integration/robustness checks); the host refuses each.
for (const [scenario, number, output] of [['replayed', 1, [{ type: 'text', text: 'once', stream: 'stdout' }]], ['rewritten', 0, []], ['withheld', 0, []]] as const) {
  test(`a ${scenario} genuine frame is forged`, async () => {
    const run = await fuzz(scenario);
    assert.equal(withoutWarm(run.result), protocol(
      `forged control message: frame ${number} does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)`,
      [...output],
    ));
    await assertHealthy(run, SMALL_GROWTH);
  });
}

test('a signed but garbled frame is unparsable', async () => {
  const run = await fuzz('garbled');
  const failure = (run.result as Extract<RunResult, { status: 'failed' }>).failure;
  assert.equal(Object.keys(failure), ['kind', 'message']);
  assert.is(failure.kind, 'protocol');
  assert.ok(failure.message.startsWith('unparsable control message: '), failure.message);
  await assertHealthy(run, SMALL_GROWTH);
});

test('a truncated frame followed by an exit is a worker exit', async () => {
  const run = await fuzz('truncated-exit');
  assert.equal(withoutWarm(run.result), {
    status: 'failed',
    failure: { kind: 'worker-exit', message: 'the carrier exited with code 3 before the program finished', exitCode: 3, signal: null, stderrTail: '' },
    output: [],
    sandbox: SANDBOX,
  });
  await assertHealthy(run, SMALL_GROWTH);
});

test('a reply to a call the host never made is protocol, not silence until the deadline', async () => {
  const run = await fuzz('unknown-reply');
  assert.equal(withoutWarm(run.result), protocol('invalid control message: a reply to "no-such-call", which is no call of the host\'s'));
  await assertHealthy(run, SMALL_GROWTH);
});

test('a call of a binding the run did not declare is protocol', async () => {
  const run = await fuzz('undeclared-binding', { bindings: { tool: async () => 1 } });
  assert.equal(withoutWarm(run.result), protocol('invalid control message: the carrier called "shell", which is not a binding of this run'));
  await assertHealthy(run, SMALL_GROWTH);
});

test('a call of an unknown method is protocol', async () => {
  const run = await fuzz('unknown-method');
  assert.equal(withoutWarm(run.result), protocol('invalid control message: unknown method "shell"'));
  await assertHealthy(run, SMALL_GROWTH);
});

test('a second request under an id still being served is protocol', async () => {
  const run = await fuzz('duplicate-request', { bindings: { slow: () => new Promise((resolve) => setTimeout(resolve, 500)) } });
  assert.equal(withoutWarm(run.result), protocol('invalid control message: a second request with id "same" while the first is served'));
  await assertHealthy(run, SMALL_GROWTH);
});

const HANDSHAKE_LIES: Array<[string, string]> = [
  ['wrong-revision', `carrier protocol revision 999 does not match host revision ${PROTOCOL_REVISION}; use a bootstrap built with this ptc`],
  ['hello-without-key', 'malformed handshake: the channel key must be 64 hex digits'],
  ['no-hello', 'the carrier did not start with a handshake'],
  ['second-hello', 'invalid control message: unknown frame type "hello"'],
];
for (const [scenario, message] of HANDSHAKE_LIES) {
  test(`handshake lies: ${scenario}`, async () => {
    const run = await fuzz(scenario, { program: 'inspect("never runs"); return 1' });
    assert.equal(withoutWarm(run.result), protocol(message));
    await assertHealthy(run, SMALL_GROWTH);
  });
}

test('a carrier that never answers ends at the deadline', async () => {
  const run = await fuzz('never-answers', { timeoutMs: 1_000 });
  assert.equal(withoutWarm(run.result), { status: 'failed', failure: { kind: 'timeout', message: 'execution timed out during execution (deadline 1000 ms elapsed)', timeoutMs: 1000 }, output: [], sandbox: SANDBOX });
  await assertHealthy(run, SMALL_GROWTH);
});

test('frames after the completion do not change the result', async () => {
  let calls = 0;
  const run = await fuzz('writes-after-completion', { bindings: { tool: async () => ++calls } });
  assert.equal(withoutWarm(run.result), { status: 'ok', value: 1, output: [], sandbox: SANDBOX });
  assert.is(calls, 0);
  await assertHealthy(run, SMALL_GROWTH);
});

test('frames between runs end a retained environment, and the next run says why', async () => {
  const wrapper = join(wrappers, 'writes-after-completion.mjs');
  writeFileSync(wrapper, `globalThis.scenario = 'writes-after-completion';\nawait import(${JSON.stringify(fixture)});\n`);
  const runtime = createRuntime({
    launch: { kind: 'node-script', executable: node, bootstrapPath: wrapper },
    policy: { mode: 'full-access' },
    sandbox: { backend: 'none', require: 'none' },
    prestartCarrier: false,
    executionMode: 'vm-script',
    scriptPersistence: true,
  });
  const owner = {};
  try {
    const first = await runtime.run(runtime.resolve({ program: '1', stateOwner: owner }));
    assert.equal(withoutWarm(first), { status: 'ok', value: 1, output: [], sandbox: SANDBOX, environment: { fresh: true } });
    const second = await runtime.run(runtime.resolve({ program: '1', stateOwner: owner }));
    assert.equal(withoutWarm(second), {
      status: 'ok',
      value: 1,
      output: [],
      sandbox: SANDBOX,
      environment: { fresh: true, replaced: 'the previous environment was lost: protocol failure while idle: invalid control message: a "output" message while no program runs' },
    });
  } finally {
    await runtime.dispose();
  }
  await assertHealthy({ result: { status: 'ok', output: [], sandbox: SANDBOX, warm: false }, grew: 0 }, SMALL_GROWTH);
});

test('values nested 100,000 deep decode on the host, in arguments and in the completion', async () => {
  let received: unknown;
  const depthOf = (value: unknown): number => {
    let depth = 0;
    while (Array.isArray(value)) {
      value = value[0];
      depth++;
    }
    assert.is(value, 12345678901234567890n);
    return depth;
  };
  const run = await fuzz('deep-values', { bindings: { depth: async (value: unknown) => (received = value, depthOf(value)) }, config: { maxMessageBytes: 4 * MiB } });
  assert.is(depthOf(received), 100_000);
  assert.is(run.result.status, 'ok');
  const value = (run.result as Extract<RunResult, { status: 'ok' }>).value as { depth: number; value: unknown };
  assert.is(value.depth, 100_000);
  assert.is(depthOf(value.value), 100_000);
  // The test itself holds two values of 100,000 arrays each.
  await assertHealthy(run, 128 * MiB);
});

test.run();

// Every way a run can fail short of an exception, through real carriers: the deadline (before and
// during execution, while a binding is pending, and none), cancellation, the carrier ending
// (exit code, signal, abort with its stderr tail, heap limit, no executable) and a peer that breaks
// the protocol. Each test asserts the whole failure, not just its kind.
// runs alone (test/run.ts gives it the machine): deadlines of 1 to 1.5 s count from the run's
// start, carrier start-up included, and the program must reach its code before they pass.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROTOCOL_REVISION, type SandboxReport, type RunResult } from '../../host/index.ts';
import { repoRoot, runProgram, createTestRuntime, reportLocation, withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { failureOf } from '../helpers/assert.ts';

const fixtures = join(repoRoot, 'test/fixtures/launch');
const node = join(repoRoot, 'node_modules/.bin/node');
const LOCAL_SANDBOX: SandboxReport = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() };
/** For the launch under test; the tests that name their own (local) launch expect LOCAL_SANDBOX. */
const SANDBOX: SandboxReport = { ...LOCAL_SANDBOX, ...reportLocation() };
/** Keeps a program alive until the host ends it; a failure to end it shows up as a timeout. */
const WAIT_FOREVER = 'await new Promise(() => {});';

// ---------------------------------------------------------------- timeout

test('timeout: a busy loop ends at the deadline with the output printed before it', async () => {
  const result = await runProgram('inspect("before the loop"); while (true) {}', { timeoutMs: 1500 });
  assert.equal(withoutWarm(result), {
    status: 'failed',
    failure: { kind: 'timeout', message: 'execution timed out during execution (deadline 1500 ms elapsed)', timeoutMs: 1500 },
    output: [{ type: 'text', text: 'before the loop\n', stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test('timeout: a deadline that elapses while the carrier starts is reported before code started', async () => {
  const result = await runProgram(
    'inspect("never runs"); return 1',
    { timeoutMs: 300 },
    { launch: { kind: 'node-script', executable: join(fixtures, 'slow-node.sh') } },
  );
  assert.equal(withoutWarm(result), {
    status: 'failed',
    failure: { kind: 'timeout', message: 'execution timed out before code started (deadline 300 ms elapsed)', timeoutMs: 300 },
    output: [],
    sandbox: LOCAL_SANDBOX,
  });
});

test('timeout: the slow launch fixture does start a working carrier given time', async () => {
  // The control for the test above: the fixture is slow, not broken.
  const result = await runProgram('return 1', { timeoutMs: 15_000 }, { launch: { kind: 'node-script', executable: join(fixtures, 'slow-node.sh') } });
  assert.equal(withoutWarm(result), { status: 'ok', value: 1, output: [], sandbox: LOCAL_SANDBOX });
});

test('timeout: the deadline keeps running while a binding is pending', async () => {
  let called = 0;
  const result = await runProgram('inspect("calling"); await never(); return 1', {
    timeoutMs: 1500,
    bindings: {
      never: () => {
        called++;
        return new Promise(() => {});
      },
    },
  });
  assert.equal(called, 1);
  assert.equal(withoutWarm(result), {
    status: 'failed',
    failure: { kind: 'timeout', message: 'execution timed out during execution (deadline 1500 ms elapsed)', timeoutMs: 1500 },
    output: [{ type: 'text', text: 'calling\n', stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test('timeout: timeoutMs null sets no deadline', async () => {
  const runtime = createTestRuntime({ timeoutMs: 100 });
  try {
    const spec = runtime.resolve({ program: 'await new Promise((resolve) => setTimeout(resolve, 300)); return "waited"', timeoutMs: null });
    assert.is(spec.timeoutMs, null);
    assert.equal(withoutWarm(await runtime.run(spec)), { status: 'ok', value: 'waited', output: [], sandbox: SANDBOX });
  } finally {
    await runtime.dispose();
  }
});

// ---------------------------------------------------------------- abort

test('abort: a signal aborted mid-run ends it as abort, keeping earlier output', async () => {
  const controller = new AbortController();
  const result = await runProgram(
    'inspect("started"); while (true) {}',
    {},
    {},
    { signal: controller.signal, onOutput: () => controller.abort() },
  );
  assert.equal(withoutWarm(result), {
    status: 'failed',
    failure: { kind: 'abort', message: 'execution aborted' },
    output: [{ type: 'text', text: 'started\n', stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test('abort: the abort reason is part of the message', async () => {
  const controller = new AbortController();
  const result = await runProgram(`inspect("started"); ${WAIT_FOREVER}`, {}, {}, {
    signal: controller.signal,
    onOutput: () => controller.abort(new Error('the user pressed stop')),
  });
  const reported = failureOf(result);
  assert.ok(reported.message.startsWith('execution aborted'), reported.message);
  assert.equal(reported, { kind: 'abort', message: 'execution aborted: the user pressed stop' });
});

test('abort: an already-aborted signal fails without starting a process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-abort-'));
  try {
    const marker = join(dir, 'started');
    const launch = { kind: 'node-script' as const, executable: join(fixtures, 'record-start.sh'), bootstrapPath: marker };
    // No spare either: a runtime that boots one ahead of its runs would start the launch itself.
    const result = await runProgram('return 1', {}, { launch, prestartCarrier: false }, { signal: AbortSignal.abort() });
    // No process was started, so nothing was watched: disk 'none'.
    assert.equal(result, { status: 'failed', failure: { kind: 'abort', message: 'execution aborted' }, output: [], sandbox: { ...LOCAL_SANDBOX, tasks: 'none', disk: 'none' }, warm: false });
    assert.not.ok(existsSync(marker), 'the launch executable was started');

    // The control: without the abort, the same launch is started (and fails, as it never speaks).
    const started = await runProgram('return 1', {}, { launch, prestartCarrier: false });
    assert.ok(existsSync(marker), 'the record-start fixture did not record its start');
    assert.equal(failureOf(started).kind, 'worker-exit');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------- worker-exit

test('worker-exit: process.exit(7) reports exit code 7', async () => {
  const result = await runProgram('inspect("leaving"); process.exit(7)');
  assert.equal(withoutWarm(result), {
    status: 'failed',
    failure: { kind: 'worker-exit', message: 'the carrier exited with code 7 before the program finished', exitCode: 7, signal: null, stderrTail: '' },
    output: [{ type: 'text', text: 'leaving\n', stream: 'stdout' }],
    sandbox: SANDBOX,
  });
});

test('worker-exit: a carrier killed by SIGKILL reports the signal', async () => {
  const result = await runProgram("process.kill(process.pid, 'SIGKILL'); " + WAIT_FOREVER);
  assert.equal(failureOf(result), {
    kind: 'worker-exit',
    message: 'the carrier was killed by SIGKILL before the program finished',
    exitCode: null,
    signal: 'SIGKILL',
    stderrTail: '',
  });
});

test('worker-exit: the stderr tail keeps what was written to fd 2 before process.abort()', async () => {
  const result = await runProgram("(await import('node:fs')).writeSync(2, 'boom: last words\\n'); process.abort();");
  const reported = failureOf(result);
  assert.is(reported.kind, 'worker-exit');
  assert.is(reported.message, 'the carrier was killed by SIGABRT before the program finished');
  assert.is(reported.exitCode, null);
  assert.is(reported.signal, 'SIGABRT');
  assert.ok(reported.stderrTail?.includes('boom: last words\n'), JSON.stringify(reported.stderrTail));
});

test('worker-exit: reaching the heap limit names it, and the host keeps working', async () => {
  const runtime = createTestRuntime({ timeoutMs: 30_000, maxOldGenerationSizeMb: 64 });
  try {
    const result = await runtime.run(runtime.resolve({ program: 'const a = []; for (;;) a.push(new Array(1e5).fill(1));' }));
    const reported = failureOf(result);
    assert.is(reported.kind, 'worker-exit');
    assert.match(reported.message, /heap limit \(maxOldGenerationSizeMb\)/);
    assert.match(reported.stderrTail ?? '', /heap out of memory|Reached heap limit/);
    assert.ok(reported.exitCode !== 0, `exit code ${reported.exitCode}`);

    const after = await runtime.run(runtime.resolve({ program: 'inspect("still here"); return [1, 2n ** 70n]' }));
    assert.equal(withoutWarm(after), { status: 'ok', value: [1, 2n ** 70n], output: [{ type: 'text', text: 'still here\n', stream: 'stdout' }], sandbox: SANDBOX });
  } finally {
    await runtime.dispose();
  }
});

test('worker-exit: a carrier that closes its control channel but keeps running is not waited for', async () => {
  // The interval keeps it running: with nothing pending it would be a stall (stall.test.ts).
  const result = await runProgram(`inspect('closing'); (await import('node:fs')).closeSync(3); setInterval(() => {}, 1000); ${WAIT_FOREVER}`, { timeoutMs: 20_000 });
  const reported = failureOf(result);
  assert.is(reported.kind, 'worker-exit');
  assert.is(reported.message, 'the carrier closed its control channel before the program finished');
  // The observed exit status is the host's kill that followed.
  assert.is(reported.signal, 'SIGKILL');
  assert.equal(result.output, [{ type: 'text', text: 'closing\n', stream: 'stdout' }]);
});

test('worker-exit: a carrier that closes its control channel and exits reports its exit', async () => {
  const result = await runProgram("(await import('node:fs')).closeSync(3); process.exit(5);", { timeoutMs: 20_000 });
  assert.equal(failureOf(result), { kind: 'worker-exit', message: 'the carrier exited with code 5 before the program finished', exitCode: 5, signal: null, stderrTail: '' });
});

test('worker-exit: a missing launch executable is named in the failure', async () => {
  const missing = join(repoRoot, 'test/fixtures/launch/no-such-node');
  const result = await runProgram('return 1', {}, { launch: { kind: 'node-script', executable: missing } });
  const reported = failureOf(result);
  assert.is(reported.kind, 'worker-exit');
  assert.ok(reported.message.includes(missing), reported.message);
  assert.match(reported.message, /ENOENT/);
});

// ---------------------------------------------------------------- protocol

// A run without a CPU budget sends no `started` notice: a program's own bytes are frame 0.
const FORGED = (frame: number) => `forged control message: frame ${frame} does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)`;

test('protocol: garbage on the control channel', async () => {
  const result = await runProgram(`(await import('node:fs')).writeSync(3, 'garbage\\n'); ${WAIT_FOREVER}`);
  assert.equal(withoutWarm(result), { status: 'failed', failure: { kind: 'protocol', message: FORGED(0) }, output: [], sandbox: SANDBOX });
});

test('protocol: a frame longer than maxMessageBytes and its envelope', async () => {
  const result = await runProgram(`(await import('node:fs')).writeSync(3, 'x'.repeat(4096 + 65536 + 1)); ${WAIT_FOREVER}`, {}, { maxMessageBytes: 4096 });
  const reported = failureOf(result);
  assert.is(reported.kind, 'protocol');
  // The count is what the line held when it went over: at least one byte past the limit, more when
  // the pipe delivered a bigger chunk or a frame of the carrier's own was cut into by the write.
  const match = /^a control message \((\d+) bytes and more\) was longer than maxMessageBytes \(4096 bytes\) and its 65536-byte envelope$/.exec(reported.message);
  assert.ok(match, reported.message);
  const seen = Number(match[1]);
  assert.ok(seen > 4096 + 65536, `${seen} bytes reported`);
});

test('protocol: a well-formed frame calling an unknown method is forged', async () => {
  const frame = JSON.stringify({ t: 'q', i: 'forged-1', m: 'shell', a: ['rm -rf /'] });
  const result = await runProgram(`(await import('node:fs')).writeSync(3, ${JSON.stringify(`${frame}\n`)}); ${WAIT_FOREVER}`);
  assert.equal(failureOf(result), { kind: 'protocol', message: FORGED(0) });
});

test('protocol: a handshake with another revision names both revisions', async () => {
  const result = await runProgram('inspect("never runs"); return 1', {}, {
    launch: { kind: 'node-script', executable: node, bootstrapPath: join(fixtures, 'wrong-revision.mjs') },
  });
  const reported = failureOf(result);
  assert.is(reported.kind, 'protocol');
  assert.ok(reported.message.includes('revision 999'), reported.message);
  assert.ok(reported.message.includes(`host revision ${PROTOCOL_REVISION}`), reported.message);
  assert.equal(result.output, []);
});

test.run();

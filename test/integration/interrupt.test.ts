// A deadline or an abort of a retained run interrupts it and keeps the environment, whatever the
// program was doing: a synchronous loop before or after an `await`, a loop in a timer callback,
// Atomics.wait, a wait on a timer or an interval that outlives the stop (carrier/run/interrupt.ts).
// What V8 cannot interrupt (a read of a FIFO nobody writes) falls back to the kill after
// stopGraceMs, and the failure says so. Where the carrier takes no interrupts (a relay's, or
// node-permission's, which refuses the inspector) the kill is the only way, as before.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Runtime, RuntimeConfig } from '../../host/index.ts';
import { launchUnderTest, runtimesPerTest } from '../helpers/runtime.ts';
import { failureOf, valueOf } from '../helpers/assert.ts';

const runtimeWith = runtimesPerTest(test);
const launch = launchUnderTest();
// A relay has no interrupt pipe, and a carrier on a Node before 26 takes no interrupts (carrier/boot/start.ts).
const carrierNode = launch?.kind === 'node-script' ? execFileSync(launch.executable, ['--version'], { encoding: 'utf8' }).trim() : process.version;
const interruptible = launch?.kind !== 'ssh' && launch?.kind !== 'command' && Number(carrierNode.slice(1).split('.')[0]) >= 26;

const MODES: [string, RuntimeConfig][] = [
  ['persistent-in-memory', { executionMode: 'persistent-in-memory' }],
  ['vm-script retained', { executionMode: 'vm-script', scriptPersistence: true }],
];

const STUCK: [string, string][] = [
  ['a synchronous loop', 'while (true) {}'],
  ['a loop after an await', 'await null; while (true) {}'],
  ['a loop after a timer', 'await new Promise((resolve) => setTimeout(resolve, 10)); while (true) {}'],
  ['a loop in a timer callback', 'await new Promise(() => setTimeout(() => { while (true) {} }, 10))'],
  ['Atomics.wait on a buffer nobody notifies', 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)'],
  ['a wait on a long timer', 'await new Promise((resolve) => setTimeout(resolve, 600_000))'],
  ['an interval and a promise that never settles', 'setInterval(() => {}, 1000); await new Promise(() => {})'],
];

function runner(runtime: Runtime, owner: object) {
  return (program: string, extra: Record<string, unknown> = {}, options = {}) => runtime.run(runtime.resolve({ program, stateOwner: owner, ...extra }), options);
}

for (const [mode, config] of MODES) {
  for (const [what, program] of STUCK) {
    test(`${mode}: a deadline interrupts ${what} and keeps the environment`, async () => {
      if (!interruptible) return;
      const run = runner(runtimeWith({ ...config, stopGraceMs: 60_000 }), {});
      await run('var kept = 41');
      const stopped = failureOf(await run(program, { timeoutMs: 300 }));
      assert.equal([stopped.kind, stopped.state, stopped.message], ['timeout', 'preserved', 'execution timed out during execution (deadline 300 ms elapsed)']);
      const next = await run('kept + 1');
      assert.is(valueOf(next), 42);
      assert.equal(next.environment, { fresh: false });
    });
  }

  test(`${mode}: the interrupt of a run that ended on its revoke does not end the run right after it`, async () => {
    if (!interruptible) return;
    const runtime = runtimeWith({ ...config, stopGraceMs: 60_000 });
    const owner = {};
    const run = runner(runtime, owner);
    await run('var kept = 41');
    // A run waiting on a binding ends on the revoke itself, well before the interrupt's wait is
    // over; the next run starts at once and is busy when that wait ends.
    const controller = new AbortController();
    const waiting = run('await hang()', { bindings: { hang: () => new Promise(() => {}) } }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    assert.is(failureOf(await waiting).kind, 'abort');
    const next = await run('const until = Date.now() + 400; while (Date.now() < until) {} kept + 1');
    assert.is(valueOf(next), 42);
    assert.equal(next.environment, { fresh: false });
  });

  test(`${mode}: an abort interrupts a synchronous loop and keeps the environment`, async () => {
    if (!interruptible) return;
    const run = runner(runtimeWith({ ...config, stopGraceMs: 60_000 }), {});
    await run('var kept = 41');
    const controller = new AbortController();
    const running = run('inspect("spinning"); while (true) {}', {}, { signal: controller.signal, onOutput: () => controller.abort(new Error('stop')) });
    const stopped = failureOf(await running);
    assert.equal([stopped.kind, stopped.state], ['abort', 'preserved']);
    const next = await run('kept + 1');
    assert.is(valueOf(next), 42);
    assert.equal(next.environment, { fresh: false });
  });

  test(`${mode}: a read of a FIFO nobody writes cannot be interrupted: the process is ended and the failure says why`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ptc-interrupt-'));
    try {
      const fifo = join(dir, 'fifo');
      execFileSync('mkfifo', [fifo]);
      const run = runner(runtimeWith({ ...config, stopGraceMs: 500 }), {});
      await run('var kept = 41');
      const stopped = failureOf(await run(`(await import('node:fs')).readFileSync(${JSON.stringify(fifo)})`, { timeoutMs: 300 }));
      assert.equal([stopped.kind, stopped.state], ['timeout', 'cleared']);
      assert.is(
        stopped.message,
        'execution timed out during execution (deadline 300 ms elapsed); it did not stop within stopGraceMs (500 ms), so its process was ended: a blocking call (a read that never returns) cannot be interrupted, and under node-permission, on a remote carrier or on a Node before 26 no synchronous code can',
      );
      const next = await run('typeof kept');
      assert.is(valueOf(next), 'undefined');
      assert.equal(next.environment, { fresh: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('under bwrap: a deadline interrupts a synchronous loop and keeps the environment', async () => {
  if (!interruptible) return;
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory', stopGraceMs: 60_000, policy: { mode: 'read-only' }, sandbox: { backend: 'bwrap' } }), {});
  await run('var kept = 41');
  const stopped = failureOf(await run('await null; while (true) {}', { timeoutMs: 300 }));
  assert.equal([stopped.kind, stopped.state], ['timeout', 'preserved']);
  const next = await run('kept + 1');
  assert.is(valueOf(next), 42);
  assert.is(next.sandbox.backend, 'bwrap');
});

test('under node-permission the carrier takes no interrupts (the model refuses the inspector): the loop ends with its process', async () => {
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory', stopGraceMs: 500, policy: { mode: 'read-only' }, sandbox: { backend: 'node-permission' } }), {});
  await run('var kept = 41');
  const stopped = failureOf(await run('while (true) {}', { timeoutMs: 300 }));
  assert.equal([stopped.kind, stopped.state], ['timeout', 'cleared']);
  assert.match(stopped.message, /so its process was ended: .* under node-permission, on a remote carrier or on a Node before 26 no synchronous code can$/);
  const next = await run('typeof kept');
  assert.is(valueOf(next), 'undefined');
  assert.is(next.sandbox.backend, 'node-permission');
});

test('per-call: a synchronous loop still ends with its process', async () => {
  const runtime = runtimeWith({ stopGraceMs: 60_000 });
  const result = await runtime.run(runtime.resolve({ program: 'while (true) {}', timeoutMs: 300 }));
  assert.equal([failureOf(result).kind, failureOf(result).state], ['timeout', undefined]);
});

test.run();

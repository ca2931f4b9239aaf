// Retained environments do not pile up (host/execution/owners.ts): idleTimeoutMs releases an
// owner's environment after that much idle time, maxRetainedEnvironments releases the least
// recently used idle one when another owner needs one, a busy one is never released, and the
// released owner's next run starts fresh with `environment.replaced` saying why. Each released
// carrier's process is gone.
// launch: source only (test/run.ts runs it once): which environment goes, and when, is the host's
// (host/execution/owners.ts), the same whatever started the carrier; ending a released carrier is
// the host's release, which retained.test.ts runs per launch (release() starts fresh).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, Runtime, RuntimeConfig } from '../../host/index.ts';
import { createTestRuntime, processAlive, runtimesPerTest, waitUntil } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

const IDLE = (ms: number) => `the previous environment was idle for ${ms} ms (idleTimeoutMs), so it was released`;
const EVICTED = (most: number) => `the previous environment was the least recently used one past maxRetainedEnvironments (${most}), so it was released`;

const runtimeWith = runtimesPerTest(test, { executionMode: 'persistent-in-memory', timeoutMs: 20_000 });

function runner(runtime: Runtime) {
  return (owner: object, program: string, bindings?: Record<string, (...args: never[]) => Promise<unknown>>): Promise<RunResult> =>
    runtime.run(runtime.resolve({ program, stateOwner: owner, ...(bindings ? { bindings } : {}) }));
}

/** A retained carrier's pid, recorded in its environment as `pid`. */
const PID = 'var pid = process.pid; pid';

// The ssh launch's carriers run on the far side, whose pids these /proc checks cannot see.
const localCarriers = process.env.PTC_TEST_LAUNCH !== 'ssh';

test('idleTimeoutMs: an idle environment is released, its process ends, and the next run says why', async () => {
  const runtime = runtimeWith({ idleTimeoutMs: 300 });
  const run = runner(runtime);
  const owner = {};
  const pid = valueOf(await run(owner, PID)) as number;
  if (localCarriers) assert.ok(await waitUntil(() => !processAlive(pid), 15_000), `carrier ${pid} still runs after its idle release`);
  else await new Promise((resolve) => setTimeout(resolve, 1_000));
  const next = await run(owner, 'typeof pid');
  assert.is(valueOf(next), 'undefined');
  assert.equal(next.environment, { fresh: true, replaced: IDLE(300) });
  // The fresh environment is retained as usual: the reason is reported once.
  const again = await run(owner, 'var kept = 1; kept');
  assert.equal(again.environment, { fresh: false });
});

test('idleTimeoutMs: the clock starts when a run ends, so a run longer than the timeout keeps its environment', async () => {
  const runtime = runtimeWith({ idleTimeoutMs: 1_000 });
  const run = runner(runtime);
  const owner = {};
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => {
    finish = resolve;
  });
  assert.is(valueOf(await run(owner, 'var kept = 41; kept')), 41);
  const long = run(owner, 'await hold(); kept', { hold: () => gate.then(() => null) });
  await new Promise((resolve) => setTimeout(resolve, 1_800));
  finish();
  assert.is(valueOf(await long), 41);
  const after = await run(owner, 'kept + 1');
  assert.is(valueOf(after), 42);
  assert.equal(after.environment, { fresh: false });
});

test('maxRetainedEnvironments: a new owner past the limit releases the least recently used idle one', async () => {
  const runtime = runtimeWith({ maxRetainedEnvironments: 2 });
  const run = runner(runtime);
  const [a, b, c] = [{}, {}, {}];
  const pidA = valueOf(await run(a, PID)) as number;
  const pidB = valueOf(await run(b, PID)) as number;
  assert.is(valueOf(await run(a, 'pid')), pidA); // a is now the most recently used
  const pidC = valueOf(await run(c, PID)) as number;
  // b was released before c's environment started.
  if (localCarriers) assert.ok(await waitUntil(() => !processAlive(pidB), 15_000), `evicted carrier ${pidB} still runs`);
  if (localCarriers) assert.ok(processAlive(pidA) && processAlive(pidC), 'a retained carrier ended');
  const keptA = await run(a, 'pid');
  assert.is(valueOf(keptA), pidA);
  assert.equal(keptA.environment, { fresh: false });
  const freshB = await run(b, 'typeof pid');
  assert.is(valueOf(freshB), 'undefined');
  assert.equal(freshB.environment, { fresh: true, replaced: EVICTED(2) });
  // b's new environment in turn released c, now the least recently used.
  const freshC = await run(c, 'typeof pid');
  assert.equal([valueOf(freshC), freshC.environment], ['undefined', { fresh: true, replaced: EVICTED(2) }]);
  if (localCarriers) assert.ok(await waitUntil(() => !processAlive(pidC), 15_000), `evicted carrier ${pidC} still runs`);
});

test('maxRetainedEnvironments: a busy environment is never released; the excess goes when runs end', async () => {
  const runtime = runtimeWith({ maxRetainedEnvironments: 1 });
  const run = runner(runtime);
  const [a, b] = [{}, {}];
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => {
    finish = resolve;
  });
  assert.is(valueOf(await run(a, 'var who = "a"; who')), 'a');
  const busyA = run(a, 'await hold(); who', { hold: () => gate.then(() => null) });
  // a is busy: b's environment starts anyway, over the limit for now.
  const firstB = await run(b, 'var who = "b"; who');
  assert.equal([valueOf(firstB), firstB.environment], ['b', { fresh: true }]);
  finish();
  const endedA = await busyA;
  assert.is(valueOf(endedA), 'a');
  assert.equal(endedA.environment, { fresh: false });
  // When b's run ended, a was busy and b was the only idle one, so b went; a stays.
  const afterA = await run(a, 'who');
  assert.equal([valueOf(afterA), afterA.environment], ['a', { fresh: false }]);
  const afterB = await run(b, 'typeof who');
  assert.equal([valueOf(afterB), afterB.environment], ['undefined', { fresh: true, replaced: EVICTED(1) }]);
});

test('config: idleTimeoutMs and maxRetainedEnvironments are validated and quoted', () => {
  for (const [config, message] of [
    [{ idleTimeoutMs: 0 }, 'ptc config: idleTimeoutMs must be a positive integer of at most 2147483647 ms (Node\'s timer limit), got 0'],
    [{ idleTimeoutMs: '5s' }, 'ptc config: idleTimeoutMs must be a positive integer of at most 2147483647 ms (Node\'s timer limit), got \'5s\''],
    [{ idleTimeoutMs: 2 ** 31 }, 'ptc config: idleTimeoutMs must be a positive integer of at most 2147483647 ms (Node\'s timer limit), got 2147483648'],
    [{ maxRetainedEnvironments: 0 }, 'ptc config: maxRetainedEnvironments must be a positive integer, got 0'],
    [{ maxRetainedEnvironments: 1.5 }, 'ptc config: maxRetainedEnvironments must be a positive integer, got 1.5'],
  ] as const) {
    assert.throws(() => createTestRuntime(config as RuntimeConfig), (error: Error) => error instanceof RangeError && error.message === message, message);
  }
  const runtime = createTestRuntime({ idleTimeoutMs: 1000, maxRetainedEnvironments: 3, prestartCarrier: false });
  assert.equal([runtime.config.idleTimeoutMs, runtime.config.maxRetainedEnvironments], [1000, 3]);
  return runtime.dispose();
});

test.run();

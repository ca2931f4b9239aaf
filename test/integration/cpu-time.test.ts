// cpuTimeMs through real carriers: the CPU time of the carrier and every process it started, for
// one run, sampled by the host. A hot loop is stopped as a timeout that names the budget, also
// behind a pending binding call and in a child process; waiting is free; retained runs count
// from their own start, and a CPU timeout ends the environment. Through the ssh launch the relay
// measures and kills on the far side, with the same expectations; so through `podman exec -i` into
// a container (launch: podman), where a child's pid is the container's, looked up there.
// launch: podman (test/run.ts runs this suite again through the container of test/helpers/podman.sh)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, RuntimeConfig, Runtime } from '../../host/index.ts';
import { carrierSideProcesses, reportLocation, runtimesPerTest, waitUntil, withoutWarm, createTestRuntime, reportLimits } from '../helpers/runtime.ts';
import { failureOf, valueOf } from '../helpers/assert.ts';

/** Time for the kernel to finish a death the host has already caused; not a speed assertion. */
const SETTLE_MS = 2_000;
import { createRuntime } from '../../host/index.ts';

// The wall deadline is far beyond every budget here, so a timeout can only be the CPU's.
const runtimeWith = runtimesPerTest(test, { timeoutMs: 60_000 });

/** Spins until this process has used `ms` of CPU time since the statement began. */
const burn = (ms: number): string => `{ const s = process.cpuUsage(); for (;;) { const u = process.cpuUsage(s); if ((u.user + u.system) / 1000 >= ${ms}) break; } }`;
/** Ten seconds of wall-clock hot loop: far past every budget below, and it ends, so a missing budget fails the test instead of hanging it. */
const HOT_LOOP = '{ const end = Date.now() + 10_000; while (Date.now() < end) {} }';

/** A CPU timeout, whole: kind, message naming budget and use, the numbers, no wall deadline. */
function assertCpuTimeout(result: RunResult, budget: number): void {
  const failed = failureOf(result);
  assert.is(failed.kind, 'timeout');
  assert.match(failed.message, new RegExp(`^the program used [\\d,]+ ms of CPU time, over its cpuTimeMs budget of ${budget.toLocaleString('en-US')} ms$`));
  assert.is(failed.cpuTimeMs, budget);
  assert.ok(failed.cpuUsedMs! > budget, `used ${failed.cpuUsedMs}`);
  // Stopped close to the budget: one sample (at most 100 ms of wall time) per core past it, with
  // room for a host that the machine's load keeps from its timer for a while.
  assert.ok(failed.cpuUsedMs! < budget + 1_500, `used ${failed.cpuUsedMs}`);
  assert.is(failed.timeoutMs, undefined);
  assert.is(result.sandbox.memory, 'none');
}

test('per-call: a hot loop fails as timeout naming the CPU budget and what was used', async () => {
  const runtime = runtimeWith({ cpuTimeMs: 300 });
  assertCpuTimeout(await runtime.run(runtime.resolve({ program: `${HOT_LOOP} return 'finished'` })), 300);
});

test('per-call: a hot loop behind a pending binding call is stopped too', async () => {
  let release!: () => void;
  const pending = new Promise<void>((resolve) => (release = resolve));
  const runtime = runtimeWith({ cpuTimeMs: 300 });
  try {
    const result = await runtime.run(runtime.resolve({ program: `const call = wait(); ${HOT_LOOP} await call; return 'finished'`, bindings: { wait: () => pending } }));
    assertCpuTimeout(result, 300);
  } finally {
    release();
  }
});

test('per-call: time spent awaiting a slow binding or a timer is not counted', async () => {
  const runtime = runtimeWith({ cpuTimeMs: 200 });
  const slow = () => new Promise((resolve) => setTimeout(() => resolve('late'), 1_500));
  const result = await runtime.run(runtime.resolve({
    program: "const a = await slow(); await new Promise((resolve) => setTimeout(resolve, 1_000)); return a",
    bindings: { slow },
  }));
  assert.equal(withoutWarm(result), { status: 'ok', value: 'late', output: [], sandbox: { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: 'none', disk: 'watchdog', ...reportLimits(true) } });
});

test('per-call: CPU burnt by a child process counts, and the child is killed with the carrier', async () => {
  const runtime = runtimeWith({ cpuTimeMs: 500 });
  const result = await runtime.run(runtime.resolve({
    program: `
      const { spawn } = await import('node:child_process');
      const child = spawn('node', ['-e', 'for (;;);'], { stdio: 'ignore' });
      await new Promise((resolve, reject) => { child.once('spawn', resolve); child.once('error', reject); });
      inspect(child.pid);
      // The carrier itself only waits; a child that ran for 10 s would end the run normally.
      setTimeout(() => child.kill(), 10_000);
      await new Promise((resolve) => child.once('exit', resolve));
      return 'child ended'`,
  }));
  assertCpuTimeout(result, 500);
  const first = result.output[0];
  assert.ok(first?.type === 'text');
  const child = Number(first.text);
  const gone = await waitUntil(() => !carrierSideProcesses().some((entry) => entry.pid === child), SETTLE_MS);
  assert.ok(gone, `the CPU-burning child ${child} survived`);
});

test('a request sets its own budget, or none with null', async () => {
  const runtime = runtimeWith({ cpuTimeMs: 300 });
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: `${burn(600)} return 'spent 600 ms'`, cpuTimeMs: null }))), 'spent 600 ms');
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: `${burn(600)} return 'spent 600 ms'`, cpuTimeMs: 2_000 }))), 'spent 600 ms');
  assertCpuTimeout(await runtime.run(runtime.resolve({ program: `${burn(600)} return 'spent 600 ms'` })), 300);
  const none = runtimeWith();
  assert.is(valueOf(await none.run(none.resolve({ program: `${burn(600)} return 'no budget'` }))), 'no budget');
});

test('a budget spent in one burst fails, whether a sample or the last look when the run ends catches it', async () => {
  // 150 ms of CPU against a budget of 100: the run may end before the sampler looks again.
  const runtime = runtimeWith({ cpuTimeMs: 100 });
  for (let round = 0; round < 3; round++) assertCpuTimeout(await runtime.run(runtime.resolve({ program: `${burn(150)} return 'done'` })), 100);
});

// ---------------------------------------------------------------- retained modes

const RETAINED: Array<[string, RuntimeConfig]> = [
  ['vm-script with scriptPersistence', { executionMode: 'vm-script', scriptPersistence: true }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }],
];

for (const [name, config] of RETAINED) {
  test(`${name}: each run counts from its own start; a CPU timeout ends the environment`, async () => {
    const runtime = runtimeWith({ ...config, cpuTimeMs: 400 });
    const owner = {};
    const run = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner }));
    // 250 ms a run: two runs together are over 400, one alone is not.
    assert.is(valueOf(await run(`var kept = 'state'; ${burn(250)} 'first'`)), 'first');
    const second = await run(`${burn(250)} kept`);
    assert.is(valueOf(second), 'state');
    assert.equal(second.environment, { fresh: false });
    const stopped = await run(`${HOT_LOOP} 'finished'`);
    assertCpuTimeout(stopped, 400);
    // The tree was killed at once: a hot loop cannot take a cooperative stop.
    assert.is(failureOf(stopped).state, 'cleared');
    assert.equal(stopped.environment, { fresh: false });
    const after = await run('typeof kept');
    assert.is(valueOf(after), 'undefined');
    assert.equal(after.environment, { fresh: true });
  });
}

for (const [name, config] of RETAINED) {
  test(`${name}: the environment's set-up on a first run is not the program's: a trivial program fits 100 ms`, async () => {
    const runtime = runtimeWith({ ...config, cpuTimeMs: 100 });
    for (let round = 0; round < 4; round++) {
      assert.is(valueOf(await runtime.run(runtime.resolve({ program: "'trivial'", stateOwner: {} }))), 'trivial');
    }
  });
}

test('vm-script without persistence: the budget applies to each run', async () => {
  const runtime = runtimeWith({ executionMode: 'vm-script', cpuTimeMs: 300 });
  assertCpuTimeout(await runtime.run(runtime.resolve({ program: `${HOT_LOOP} 'finished'` })), 300);
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: "'next run'" }))), 'next run');
});

// ---------------------------------------------------------------- bad input

test('cpuTimeMs must be a positive integer or null, in the config and in a request', async () => {
  assert.throws(() => createRuntime({ cpuTimeMs: 0 }), (error: Error) => error instanceof RangeError && error.message === 'ptc config: cpuTimeMs must be a positive integer or null for none, got 0');
  assert.throws(() => createRuntime({ cpuTimeMs: '100' as never }), /ptc config: cpuTimeMs must be a positive integer or null for none, got '100'$/);
  const runtime = runtimeWith();
  assert.throws(() => runtime.resolve({ program: '1', cpuTimeMs: 1.5 }), (error: Error) => error instanceof RangeError && error.message === 'ptc request: cpuTimeMs must be a positive integer or null for none, got 1.5');
  const refused = await runtime.run({ ...runtime.resolve({ program: '1' }), cpuTimeMs: -1 }).then(() => undefined, (error: Error) => error);
  assert.ok(refused instanceof RangeError && refused.message === 'ptc run(): spec: cpuTimeMs must be a positive integer or null for none, got -1', String(refused));
});

test('a remote launch takes cpuTimeMs, in the config and in a request: its relay measures the tree there', async () => {
  const launch: RuntimeConfig['launch'] = { kind: 'command', command: ['docker', 'exec', '-i', 'box'], bootstrapPath: '/opt/bootstrap.mjs' };
  const runtime = createRuntime({ launch, cpuTimeMs: 1_000, prestartCarrier: false });
  try {
    assert.is(runtime.resolve({ program: '1', cpuTimeMs: 500 }).cpuTimeMs, 500);
  } finally {
    await runtime.dispose();
  }
});

test.run();

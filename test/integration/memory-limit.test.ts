// maxMemoryMb through real carriers: the resident memory of the whole process tree, native
// allocations and child processes included, which the V8 heap limit does not see. Over the limit
// is worker-exit naming it; every result says what enforced it (sandbox.memory). On this kind of
// machine that is a cgroup where the host can make one, else the /proc watchdog; the expectation
// follows the same detection. Through the ssh launch the relay enforces it on the far side, which
// here is this machine again, so the same detection holds there. Through `podman exec -i` into a
// container (launch: podman) the detection reads the container's files, and a program's pids are
// the container's, looked up there.
// launch: podman (test/run.ts runs this suite again through the container of test/helpers/podman.sh)
// runs alone (test/run.ts gives it the machine): where no cgroup can be made, the watchdog samples
// the tree's memory on a timer, and a second suite's load must not make it late.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, RuntimeConfig } from '../../host/index.ts';
import { createRuntime } from '../../host/index.ts';
import { findCgroupBase, cgroupKeeps, findCgroups } from '../../supervision/resources/cgroup.ts';
import { carrierSideCgroupFiles, carrierSideProcesses, reportLocation, runtimesPerTest, waitUntil, withoutWarm, createTestRuntime, reportLimits } from '../helpers/runtime.ts';
import { failureOf, valueOf } from '../helpers/assert.ts';

/** Time for the kernel to finish a death the host has already caused; not a speed assertion. */
const SETTLE_MS = 2_000;

const runtimeWith = runtimesPerTest(test, { timeoutMs: 60_000 });

const LIMIT = 200;
/** What the carrier's side offers (this machine, or the container), found the way the host or relay finds it. */
const MECHANISM = cgroupKeeps(findCgroups(carrierSideCgroupFiles())).memory ? 'cgroup' : 'watchdog';

/** Grows native memory (filled Buffers, outside the V8 heap) to 640 MiB, then returns: far past the limit, and it ends. */
const NATIVE_GROWTH = `const kept = []; for (let i = 0; i < 40; i++) { kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); await new Promise((resolve) => setTimeout(resolve, 10)); }`;

function assertOverLimit(result: RunResult): void {
  const failed = failureOf(result);
  assert.is(failed.kind, 'worker-exit');
  assert.is(failed.maxMemoryMb, LIMIT);
  // cgroup v1 has no group kill: its OOM killer may kill only a child, which the program can
  // outlive to the end of the run, where the host's last look finds the kill and ends the run
  // before the carrier's own death is seen (signal null then, as for the disk limit).
  if (failed.signal !== null || MECHANISM === 'watchdog') assert.is(failed.signal, 'SIGKILL');
  assert.is(failed.exitCode, null);
  if (MECHANISM === 'watchdog') {
    assert.match(failed.message, new RegExp(`^the carrier's process tree used \\d+ MiB of resident memory, over its maxMemoryMb limit of ${LIMIT} MiB, and was killed$`));
    assert.ok(Number(/used (\d+) MiB/.exec(failed.message)![1]) > LIMIT, failed.message);
  } else {
    assert.is(failed.message, `the carrier's process tree reached its maxMemoryMb limit of ${LIMIT} MiB and the kernel killed it (cgroup memory limit)`);
  }
  assert.is(result.sandbox.memory, MECHANISM);
}

test('per-call: native memory growth past maxMemoryMb is worker-exit naming the limit', async () => {
  // The heap limit is far above: only the tree's resident memory can stop this program.
  const runtime = runtimeWith({ maxMemoryMb: LIMIT, maxOldGenerationSizeMb: 2048 });
  assertOverLimit(await runtime.run(runtime.resolve({ program: `${NATIVE_GROWTH} return kept.length` })));
});

test('per-call: memory of a child process counts, and the child is killed with the carrier', async () => {
  const runtime = runtimeWith({ maxMemoryMb: LIMIT });
  const result = await runtime.run(runtime.resolve({
    program: `
      const { spawn } = await import('node:child_process');
      const grow = 'const kept = []; const t = setInterval(() => { kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); if (kept.length === 40) clearInterval(t); }, 10)';
      const child = spawn('node', ['-e', grow], { stdio: 'ignore' });
      await new Promise((resolve, reject) => { child.once('spawn', resolve); child.once('error', reject); });
      inspect(child.pid);
      await new Promise((resolve) => child.once('exit', resolve));
      return 'child ended'`,
  }));
  assertOverLimit(result);
  const first = result.output[0];
  assert.ok(first?.type === 'text', JSON.stringify(result.output));
  const child = Number(first.text);
  const gone = await waitUntil(() => !carrierSideProcesses().some((entry) => entry.pid === child), SETTLE_MS);
  assert.ok(gone, `the growing child ${child} survived`);
});

test('sandbox.memory is on every result: the mechanism with maxMemoryMb, none without', async () => {
  const limited = runtimeWith({ maxMemoryMb: LIMIT });
  assert.equal(withoutWarm(await limited.run(limited.resolve({ program: 'return 1' }))), {
    status: 'ok', value: 1, output: [], sandbox: { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: MECHANISM, disk: 'watchdog', ...reportLimits() },
  });
  const thrown = await limited.run(limited.resolve({ program: "throw new Error('boom')" }));
  assert.is(failureOf(thrown).kind, 'exception');
  assert.is(thrown.sandbox.memory, MECHANISM);
  const free = runtimeWith();
  assert.is((await free.run(free.resolve({ program: `${NATIVE_GROWTH} return kept.length` }))).sandbox.memory, 'none');
});

const RETAINED: Array<[string, RuntimeConfig]> = [
  ['vm-script with scriptPersistence', { executionMode: 'vm-script', scriptPersistence: true }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }],
];

for (const [name, config] of RETAINED) {
  test(`${name}: memory kept across runs counts; over the limit the environment is cleared and the next run is fresh`, async () => {
    const runtime = runtimeWith({ ...config, maxMemoryMb: LIMIT, maxOldGenerationSizeMb: 2048 });
    const owner = {};
    const run = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner }));
    assert.is(valueOf(await run("globalThis.kept = [Buffer.alloc(32 * 1024 * 1024, 1)]; 'first'")), 'first');
    // Each run adds less than the limit; what the environment keeps makes the total go over.
    let over: RunResult | undefined;
    for (let round = 0; round < 10 && over === undefined; round++) {
      const result = await run("for (let i = 0; i < 4; i++) { kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); await new Promise((resolve) => setTimeout(resolve, 60)); } kept.length");
      if (result.status === 'failed') over = result;
    }
    assert.ok(over !== undefined, 'ten runs of 64 MiB each never went over 200 MiB');
    assertOverLimit(over);
    assert.is(failureOf(over).state, 'cleared');
    const after = await run('typeof kept');
    assert.is(valueOf(after), 'undefined');
    assert.equal(after.environment, { fresh: true });
    assert.is(after.sandbox.memory, MECHANISM);
  });
}

test('scoped REPL: memory a timer grows between runs ends the idle environment, and the next run says why', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory', maxMemoryMb: LIMIT, maxOldGenerationSizeMb: 2048 });
  const owner = {};
  const run = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner }));
  // The run returns at once; its timer keeps growing native memory after it (to 640 MiB, then stops).
  const carrier = valueOf(await run("const kept = []; const grow = setInterval(() => { kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); if (kept.length === 40) clearInterval(grow); }, 20); process.pid")) as number;
  const gone = await waitUntil(() => !carrierSideProcesses().some((entry) => entry.pid === carrier), 30_000);
  assert.ok(gone, `the idle carrier ${carrier} grew past the limit and was not killed`);
  const next = await run('typeof kept');
  assert.is(valueOf(next), 'undefined');
  assert.is(next.environment?.fresh, true);
  const replaced = next.environment?.replaced ?? '';
  if (MECHANISM === 'watchdog') {
    assert.match(replaced, new RegExp(`^the previous environment was lost: the carrier's process tree used \\d+ MiB of resident memory, over its maxMemoryMb limit of ${LIMIT} MiB, and was killed while idle$`));
  } else {
    assert.is(replaced, `the previous environment was lost: the carrier's process tree reached its maxMemoryMb limit of ${LIMIT} MiB and the kernel killed it (cgroup memory limit) while idle`);
  }
});

test('vm-script without persistence: each run gets the limit', async () => {
  const runtime = runtimeWith({ executionMode: 'vm-script', maxMemoryMb: LIMIT, maxOldGenerationSizeMb: 2048 });
  assertOverLimit(await runtime.run(runtime.resolve({ program: `${NATIVE_GROWTH} kept.length` })));
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: "'next run'" }))), 'next run');
});

test('maxMemoryMb must be an integer of at least 64; a remote launch takes it', async () => {
  assert.throws(() => createRuntime({ maxMemoryMb: 32 }), (error: Error) => error instanceof RangeError && error.message === 'ptc config: maxMemoryMb must be at least 64 (a carrier needs that much to start), got 32');
  assert.throws(() => createRuntime({ maxMemoryMb: 100.5 }), /ptc config: maxMemoryMb must be a positive integer or null for none, got 100\.5$/);
  await createRuntime({ maxMemoryMb: 256, launch: { kind: 'ssh', destination: 'box' }, prestartCarrier: false }).dispose();
  assert.throws(() => runtimeWith({ maxMemoryMb: 256 }).resolve({ program: '1', maxMemoryMb: 256 } as never), /ptc request: unknown field "maxMemoryMb"/);
});

test.run();

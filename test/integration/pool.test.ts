// The warm pool of booted carriers a runtime keeps ahead of its runs: its replacement is spawned
// after a run's result, one spawn per event-loop turn, as many boots at once as cores, and not while
// another run awaits its result unless the pool holds no booted carrier; a per-call carrier's kill
// waits for no run to be in flight; it is sized by configuration and by the
// demand it saw; runtimes with the same carrier shape share it; dispose() drains it; and each result
// says whether its run took a booted carrier (`warm`).
// launch: source only (the pool is the host's; the carriers must be this host's children, as the
// program sees its pid, and the launch does not change what is pooled).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRuntime } from '../../host/index.ts';
import { childrenOf, createTestRuntime, processAlive, waitUntil } from '../helpers/runtime.ts';

type TestRuntime = ReturnType<typeof createTestRuntime>;

const run = async (runtime: TestRuntime, request: Record<string, unknown> = {}): Promise<{ pid: number; warm: boolean }> => {
  const program = request.stateOwner === undefined ? 'return process.pid' : 'process.pid';
  const result = await runtime.run(runtime.resolve({ program, ...request }));
  assert.is(result.status, 'ok', JSON.stringify(result));
  return { pid: (result as { value: number }).value, warm: result.warm };
};
const liveChildren = (): number[] => childrenOf(process.pid).filter((child) => child.state !== 'Z').map((child) => child.pid);
const children = (): string => JSON.stringify(childrenOf(process.pid));

for (const [mode, request, config] of [
  ['per-call', {}, {}],
  ['retained', { stateOwner: {} }, { executionMode: 'persistent-in-memory' as const }],
] as const) {
  test(`${mode}: the replacement is spawned after the run's result, and the next run gets it`, async () => {
    const runtime = createTestRuntime({ timeoutMs: 20_000, ...config });
    try {
      await runtime.warmUp();
      const [pooled] = liveChildren();
      assert.is(liveChildren().length, 1, children());
      const first = await run(runtime, request);
      assert.equal(first, { pid: pooled, warm: true });
      // Right after the result: the taken carrier (ending, for per-call) and no replacement yet.
      assert.equal(liveChildren().filter((pid) => pid !== first.pid), [], children());
      await new Promise((resolve) => setImmediate(resolve));
      const replacement = liveChildren().filter((pid) => pid !== first.pid);
      assert.is(replacement.length, 1, children());
      // Another run (for per-call, a new one; for retained, a second owner's first) gets the replacement.
      assert.is((await run(runtime, mode === 'retained' ? { stateOwner: {} } : {})).pid, replacement[0]);
      if (mode === 'retained') assert.equal(await run(runtime, request), { pid: first.pid, warm: true });
    } finally {
      await runtime.dispose();
    }
  });
}

test('a burst of 20 back-to-back runs takes 20 booted carriers from a pool sized for it, each run its own', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000, pool: { min: 20, max: 20 } });
  try {
    await runtime.warmUp();
    assert.is(liveChildren().length, 20, children());
    const runs = [];
    for (let index = 0; index < 20; index++) runs.push(await run(runtime));
    assert.equal(runs.map((entry) => entry.warm), Array(20).fill(true));
    assert.is(new Set(runs.map((entry) => entry.pid)).size, 20);
  } finally {
    await runtime.dispose();
  }
  assert.ok(await waitUntil(() => liveChildren().length === 0, 10_000), `dispose() left ${children()}`);
});

test('the pool grows to the demand it saw, within its ceiling: after three runs at once, the next three are warm', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000, pool: { min: 1, max: 3 } });
  try {
    await runtime.warmUp();
    assert.is(liveChildren().length, 1, children());
    // Five at once: one finds the booted carrier, the others boot their own.
    const first = await Promise.all(Array.from({ length: 5 }, () => run(runtime)));
    assert.is(first.filter((entry) => entry.warm).length, 1, JSON.stringify(first));
    await runtime.warmUp();
    // Five runs were taken, the ceiling is three.
    assert.is(liveChildren().length, 3, children());
    const next = await Promise.all(Array.from({ length: 3 }, () => run(runtime)));
    assert.equal(next.map((entry) => entry.warm), [true, true, true]);
  } finally {
    await runtime.dispose();
  }
});

test('refills spawn at most one carrier per turn of the event loop', async () => {
  const runtime = createTestRuntime({ pool: { min: 6, max: 6 } });
  try {
    let last = liveChildren().length;
    let most = 0;
    while (liveChildren().length < 6) {
      await new Promise((resolve) => setImmediate(resolve));
      const now = liveChildren().length;
      most = Math.max(most, now - last);
      last = now;
    }
    assert.is(most, 1);
    await runtime.warmUp();
  } finally {
    await runtime.dispose();
  }
});

test('a refill waits while another run awaits its result and the pool still holds booted carriers, and spawns once none does', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000, pool: { min: 4, max: 4 } });
  let release!: () => void;
  let called!: () => void;
  const calledOnce = new Promise<void>((resolve) => (called = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  try {
    await runtime.warmUp();
    const pooled = liveChildren();
    assert.is(pooled.length, 4, children());
    const holding = runtime.run(runtime.resolve({ program: 'await hold(); return process.pid', bindings: { hold: () => (called(), held) } }));
    await calledOnce;
    // A second booted carrier serves this run; two more are still booted for the next ones.
    const quick = await run(runtime);
    assert.is(quick.warm, true);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(liveChildren().filter((pid) => !pooled.includes(pid)), [], children());
    release();
    const first = await holding;
    assert.equal([first.status, first.warm], ['ok', true]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.is(liveChildren().filter((pid) => !pooled.includes(pid)).length, 1, children());
  } finally {
    release();
    await runtime.dispose();
  }
});

test('a refill spawns while another run awaits its result once the pool holds no booted carrier', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000, pool: { min: 1, max: 1 } });
  let release!: () => void;
  let called!: () => void;
  const calledOnce = new Promise<void>((resolve) => (called = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  try {
    await runtime.warmUp();
    const [pooled] = liveChildren();
    const holding = runtime.run(runtime.resolve({ program: 'await hold(); return process.pid', bindings: { hold: () => (called(), held) } }));
    await calledOnce;
    // The pool is empty: this run boots its own carrier, and its result asks for a refill, which
    // does not wait for the held run: the next run would otherwise wait for a whole boot.
    const quick = await run(runtime);
    assert.is(quick.warm, false);
    await new Promise((resolve) => setImmediate(resolve));
    assert.is(liveChildren().filter((pid) => pid !== pooled && pid !== quick.pid).length, 1, children());
    release();
    assert.is((await holding).status, 'ok');
  } finally {
    release();
    await runtime.dispose();
  }
});

test('the pool boots as many carriers at once as the machine has cores: the next boot does not wait for a handshake', async () => {
  // A "carrier" that never says hello: every boot stays under way, so each spawn past the first
  // shows that the pool did not wait for the boot before it.
  const silent = join(mkdtempSync(join('/var/tmp', 'ptc-pool-silent-')), 'silent.sh');
  writeFileSync(silent, '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
  const runtime = createTestRuntime({ launch: { kind: 'embedded', executable: silent }, pool: { min: 4, max: 4 } });
  const expected = Math.min(4, availableParallelism());
  try {
    assert.ok(await waitUntil(() => liveChildren().length >= expected, 10_000), children());
    // None has booted, so no more than that many are under way.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.is(liveChildren().length, expected, children());
  } finally {
    await runtime.dispose();
    rmSync(dirname(silent), { recursive: true, force: true });
  }
  assert.ok(await waitUntil(() => liveChildren().length === 0, 10_000), `dispose() left ${children()}`);
});

test("a per-call run's carrier is killed only once no run awaits its result: the next run's window does not hold its teardown", async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000, pool: { min: 2, max: 2 } });
  try {
    await runtime.warmUp();
    const first = await run(runtime);
    // Begun as soon as the first has its result, as a caller's next run is.
    let aliveDuringNext: boolean | undefined;
    const next = await runtime.run(runtime.resolve({ program: 'await look(); return process.pid', bindings: { look: () => void (aliveDuringNext = processAlive(first.pid)) } }));
    assert.is(next.status, 'ok', JSON.stringify(next));
    assert.is(aliveDuringNext, true, 'the first carrier was killed while the next run was in flight');
    // Once no run is in flight, both go.
    const nextPid = (next as { value: number }).value;
    assert.ok(await waitUntil(() => !processAlive(first.pid) && !processAlive(nextPid), 10_000), children());
  } finally {
    await runtime.dispose();
  }
});

test("dispose() kills a per-call carrier whose kill waits for a run in flight, without waiting for that run", async () => {
  const waiting = createTestRuntime({ timeoutMs: 20_000 });
  const other = createTestRuntime({ timeoutMs: 20_000, pool: { min: 0, max: 0 }, prestartCarrier: false });
  let release!: () => void;
  let called!: () => void;
  const calledOnce = new Promise<void>((resolve) => (called = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  try {
    const holding = other.run(other.resolve({ program: 'await hold(); return 1', bindings: { hold: () => (called(), held) } }));
    await calledOnce;
    const done = await run(waiting);
    // A run of another runtime is in flight: this carrier's kill waits, until dispose() asks for it.
    assert.ok(processAlive(done.pid), children());
    await waiting.dispose();
    assert.ok(!processAlive(done.pid), `dispose() left ${done.pid}: ${children()}`);
    release();
    assert.is((await holding).status, 'ok');
  } finally {
    release();
    await Promise.all([waiting.dispose(), other.dispose()]);
  }
});

test('runtimes whose carriers would be the same share one pool; it drains when the last is disposed', async () => {
  const one = createTestRuntime({ pool: { min: 2 } });
  const two = createTestRuntime({ pool: { min: 2 } });
  try {
    await Promise.all([one.warmUp(), two.warmUp()]);
    const pooled = liveChildren();
    assert.is(pooled.length, 2, children());
    const taken = await run(two);
    assert.ok(pooled.includes(taken.pid) && taken.warm, JSON.stringify({ pooled, taken }));
    await one.dispose();
    // The other runtime still holds the pool.
    await two.warmUp();
    assert.is(liveChildren().filter((pid) => pid !== taken.pid).length, 2, children());
  } finally {
    await Promise.all([one.dispose(), two.dispose()]);
  }
  assert.ok(await waitUntil(() => liveChildren().length === 0, 10_000), `dispose() left ${children()}`);
});

test('disposing one of the runtimes that share a pool leaves alone the carrier another took from it, mid-run', async () => {
  const one = createTestRuntime({ timeoutMs: 20_000, pool: { min: 1, max: 1 } });
  const two = createTestRuntime({ timeoutMs: 20_000, pool: { min: 1, max: 1 } });
  let release!: () => void;
  let called!: () => void;
  const calledOnce = new Promise<void>((resolve) => (called = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  try {
    await Promise.all([one.warmUp(), two.warmUp()]);
    const [pooled, ...others] = liveChildren();
    assert.ok(pooled !== undefined && others.length === 0, children());
    const holding = two.run(two.resolve({ program: 'await hold(); return process.pid', bindings: { hold: () => (called(), held) } }));
    await calledOnce;
    await one.dispose();
    assert.ok(liveChildren().includes(pooled), `the taken carrier ${pooled} was ended: ${children()}`);
    release();
    const result = await holding;
    assert.equal([result.status, (result as { value?: number }).value, result.warm], ['ok', pooled, true], JSON.stringify(result));
  } finally {
    release();
    await Promise.all([one.dispose(), two.dispose()]);
  }
  assert.ok(await waitUntil(() => liveChildren().length === 0, 10_000), `dispose() left ${children()}`);
});

test('without a pool every run boots its own carrier and says so', async () => {
  const runtime = createTestRuntime({ prestartCarrier: false });
  const retained = createTestRuntime({ prestartCarrier: false, executionMode: 'persistent-in-memory' });
  try {
    await Promise.all([runtime.warmUp(), retained.warmUp()]);
    assert.equal(liveChildren(), [], children());
    assert.is((await run(runtime)).warm, false);
    // An owner's first run boots its environment; the next one waits for nothing.
    const owner = {};
    assert.is((await run(retained, { stateOwner: owner })).warm, false);
    assert.is((await run(retained, { stateOwner: owner })).warm, true);
  } finally {
    await Promise.all([runtime.dispose(), retained.dispose()]);
  }
});

test("a pooled carrier's disk count starts while it idles: a warm run's write past maxDiskMb fails, one under it does not", async () => {
  // The count a pooled carrier starts from is taken at its handshake (off the run's path); a run
  // that takes it must still be measured from no later than its program's first write.
  const workspace = mkdtempSync(join('/var/tmp', 'ptc-pool-disk-'));
  const runtime = createTestRuntime({ timeoutMs: 20_000, maxDiskMb: 8, policy: { mode: 'full-access', workspaceRoot: workspace } });
  const write = (mib: number) => `(await import('node:fs')).writeFileSync('f', Buffer.alloc(${mib} << 20)); return 'wrote';`;
  try {
    for (let round = 0; round < 2; round++) {
      await runtime.warmUp();
      const under = await runtime.run(runtime.resolve({ program: write(4), cwd: workspace }));
      assert.is(under.status, 'ok', JSON.stringify(under));
      assert.is(under.warm, true);
      await runtime.warmUp();
      const over = await runtime.run(runtime.resolve({ program: write(16), cwd: workspace }));
      assert.is(over.status, 'failed', JSON.stringify(over));
      assert.is(over.warm, true);
      assert.is((over as { failure: { maxDiskMb?: number } }).failure.maxDiskMb, 8, JSON.stringify(over));
    }
  } finally {
    await runtime.dispose();
    rmSync(workspace, { recursive: true, force: true });
  }
});

test("a pooled carrier's rehearsal leaves nothing its first run can see: globals, cwd, output, stack, denials", async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    await runtime.warmUp();
    // The rehearsal runs in the turn after the handshake; by now it is long over.
    await new Promise((resolve) => setTimeout(resolve, 100));
    {
      const spec = runtime.resolve({
        program: `return { names: Object.getOwnPropertyNames(globalThis), cwd: process.cwd(), stack: new Error('here').stack, exitListeners: process.listenerCount('exit') }`,
      });
      const result = await runtime.run(spec);
      assert.is(result.status, 'ok', JSON.stringify(result));
      if (result.status !== 'ok') return;
      assert.is(result.warm, true);
      assert.equal(result.output, []);
      assert.is(result.sandbox.denied, false);
      const seen = result.value as { names: string[]; cwd: string; stack: string; exitListeners: number };
      assert.is(seen.cwd, spec.cwd);
      assert.not.match(seen.stack, /rehearsal/);
      // The same Node's own globals, plus exactly the four ptc defines.
      const own = JSON.parse(execFileSync(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(Object.getOwnPropertyNames(globalThis)))'], { encoding: 'utf8' })) as string[];
      assert.equal(seen.names.filter((name) => !own.includes(name)).sort(), ['BindingError', 'Image', 'inspect', 'yieldControl']);
      // A cold carrier's first run (no spare: the request may come before or after its rehearsal) sees the same.
      const cold = createTestRuntime({ timeoutMs: 20_000, prestartCarrier: false });
      try {
        const coldResult = await cold.run(cold.resolve({ program: `return { names: Object.getOwnPropertyNames(globalThis), exitListeners: process.listenerCount('exit') }` }));
        assert.is(coldResult.status, 'ok', JSON.stringify(coldResult));
        assert.equal((coldResult as { value: unknown }).value, { names: seen.names, exitListeners: seen.exitListeners });
      } finally {
        await cold.dispose();
      }
    }
  } finally {
    await runtime.dispose();
  }
});

test('pool bounds are checked', () => {
  const refused = (pool: unknown, message: string) =>
    assert.throws(() => createRuntime({ pool } as never), (error: Error) => error.message === message, message);
  refused({ min: 3, max: 2 }, 'ptc config: pool.min (3) must not exceed pool.max (2)');
  refused({ min: -1 }, 'ptc config: pool.min must be an integer from 0 to 64, got -1');
  refused({ max: 1.5 }, 'ptc config: pool.max must be an integer from 0 to 64, got 1.5');
  refused({ max: 65 }, 'ptc config: pool.max must be an integer from 0 to 64, got 65');
  refused({ size: 2 }, 'ptc config: unknown field "pool.size" (value 2)');
  refused(4, 'ptc config: pool must be an object { min, max }, got 4');
});

test.run();

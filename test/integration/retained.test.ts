// Retained execution through real carriers: vm-script with and without scriptPersistence, the
// scoped REPL and Node's REPL per stateOwner, owner lifecycle, initializers, idle behaviour and
// cooperative stops that keep (or clear) the environment.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, Runtime, Bindings } from '../../host/index.ts';
import { runtimesPerTest } from '../helpers/runtime.ts';
import { failureOf, valueOf } from '../helpers/assert.ts';

const runtimeWith = runtimesPerTest(test, { timeoutMs: 20_000 });

function runner(runtime: Runtime, owner?: object, bindings?: Bindings) {
  return (program: string, extra: Record<string, unknown> = {}, options = {}) =>
    runtime.run(runtime.resolve({ program, ...(owner ? { stateOwner: owner } : {}), ...(bindings ? { bindings } : {}), ...extra }), options);
}

const text = (result: RunResult): string => result.output.map((entry) => (entry.type === 'text' ? entry.text : `[${entry.type}]`)).join('');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- vm-script

test('vm-script: the final expression is the awaited result; each call is fresh without persistence', async () => {
  const runtime = runtimeWith({ executionMode: 'vm-script' });
  assert.is(runtime.programFormat, 'vm-script');
  const run = runner(runtime, {});
  assert.is(valueOf(await run('var kept = 41; Promise.resolve(kept + 1)')), 42);
  assert.is(valueOf(await run('typeof kept')), 'undefined');
});

test('vm-script: top-level return and static import are rejected with clear errors', async () => {
  const run = runner(runtimeWith({ executionMode: 'vm-script' }));
  const returned = failureOf(await run('return 1'));
  assert.is(returned.kind, 'exception');
  assert.match(returned.message, /return/);
  const imported = failureOf(await run('import fs from "node:fs";\nfs'));
  assert.is(imported.kind, 'exception');
  assert.match(imported.message, /import/);
});

test('vm-script + scriptPersistence: declarations, await-initialized values and identities survive per owner', async () => {
  const runtime = runtimeWith({ executionMode: 'vm-script', scriptPersistence: true });
  const owner = {};
  const run = runner(runtime, owner);
  const first = await run('const box = await Promise.resolve({ n: 1 });\nfunction get() { return box }\nlet count = 1;\ncount');
  assert.is(valueOf(first), 1);
  assert.equal(first.environment, { fresh: true });
  const second = await run('box.n++; count++; [get() === box, box.n, count]');
  assert.equal(valueOf(second), [true, 2, 2]);
  assert.equal(second.environment, { fresh: false });
  // Without an owner the same runtime uses a temporary environment.
  assert.is(valueOf(await runner(runtime)('typeof box')), 'undefined');
});

// ---------------------------------------------------------------- persistent-in-memory

test('scoped REPL: names persist and can be redeclared with any keyword', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  assert.is(runtime.programFormat, 'scoped-repl');
  assert.match(runtime.executionInstructions, /Use inspect\(\.\.\.values\) to display output\. Do not use console\./);
  const run = runner(runtime, {});
  assert.is(valueOf(await run('const x: number = 1;\nx + 1')), 2);
  assert.is(valueOf(await run('let x = 10;\nx')), 10);
  assert.is(valueOf(await run('var total = 0; for (const n of [1, 2, 3]) total += n; total')), 6);
  assert.is(valueOf(await run('x + total')), 16);
});

test('Node REPL (replScoped: false): REPL declaration rules and ordinary _', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory', replScoped: false });
  assert.is(runtime.programFormat, 'repl');
  const run = runner(runtime, {});
  assert.is(valueOf(await run('let y = 1; y')), 1);
  const redeclared = failureOf(await run('let y = 2'));
  assert.is(redeclared.kind, 'exception');
  assert.is(redeclared.name, 'SyntaxError');
  assert.match(redeclared.message, /already been declared/);
  assert.is(valueOf(await run('_ = 5; undeclared = 7; 1 + 1')), 2);
  assert.equal(valueOf(await run('[_, undeclared, y]')), [5, 7, 1]);
});

// ---------------------------------------------------------------- owners and lifecycle

// Node's lazy globals (web streams, File, FormData, ...) load their modules when first read; a
// retained context must not read them all when it is created (idle RSS), yet behave the same.
for (const [label, config] of [['vm-script + scriptPersistence', { executionMode: 'vm-script', scriptPersistence: true }], ['scoped REPL', { executionMode: 'persistent-in-memory' }]] as const) {
  test(`${label}: Node's lazy globals load on first use and then behave as copied`, async () => {
    const run = runner(runtimeWith(config), {});
    const loaded = '[process.moduleLoadList.includes("NativeModule internal/webstreams/readablestream"), process.moduleLoadList.includes("NativeModule internal/file")]';
    assert.equal(valueOf(await run(loaded)), [false, false]);
    assert.equal(valueOf(await run('[new File(["abc"], "a.txt").size, typeof TransformStream, new TextEncoderStream().encoding]')), [3, 'function', 'utf-8']);
    assert.equal(valueOf(await run(loaded)), [true, true]);
    // After its first read a global is the carrier's own value, and as enumerable as there.
    const same = `const main = process.getBuiltinModule('node:vm').runInThisContext('globalThis');
      const [mine, theirs] = [globalThis, main].map((g) => Object.getOwnPropertyDescriptor(g, 'File'));
      [mine.enumerable === theirs.enumerable, File === main.File, Object.keys(globalThis).includes('File')]`;
    assert.equal(valueOf(await run(same)), [true, true, false]);
    // An assignment before the first read shadows the name in this context only.
    assert.equal(valueOf(await run('FormData = 7; [FormData, Object.keys(globalThis).includes("FormData")]')), [7, false]);
    assert.equal(valueOf(await run('[FormData, process.getBuiltinModule("node:vm").runInThisContext("typeof FormData")]')), [7, 'function']);
  });
}

test('owners: one run at a time per owner, distinct owners concurrently, release starts fresh', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const a = {};
  const b = {};
  await runner(runtime, a)('var who = "a"');
  await runner(runtime, b)('var who = "b"');
  const slow = runner(runtime, a)('await new Promise((resolve) => setTimeout(resolve, 300)); who');
  const refused = await runner(runtime, a)('who').then(
    () => undefined,
    (error: Error) => error.message,
  );
  assert.match(refused ?? 'the run was admitted', /already has a run in progress/);
  const [slowResult, other] = await Promise.all([slow, runner(runtime, b)('who')]);
  assert.is(valueOf(slowResult), 'a');
  assert.is(valueOf(other), 'b');
  await runtime.release(a);
  const after = await runner(runtime, a)('typeof who');
  assert.is(valueOf(after), 'undefined');
  assert.equal(after.environment, { fresh: true });
});

test('owners: release() called right after run() waits for that run, which keeps the variables it had', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const owner = {};
  const run = runner(runtime, owner);
  await run('var kept = "before"');
  // No await between the two calls: the run is still being admitted when release() is called.
  const inFlight = run('await new Promise((resolve) => setTimeout(resolve, 100)); kept');
  const released = runtime.release(owner);
  const result = await inFlight;
  assert.is(valueOf(result), 'before');
  assert.equal(result.environment, { fresh: false });
  await released;
  const after = await run('typeof kept');
  assert.is(valueOf(after), 'undefined');
  assert.equal(after.environment, { fresh: true });
});

test('owners: a function is an owner too, and release() takes it like any object', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const agent = function agent() {};
  const run = runner(runtime, agent);
  await run('var kept = 41');
  assert.is(valueOf(await run('kept + 1')), 42);
  await runtime.release(agent);
  const after = await run('typeof kept');
  assert.is(valueOf(after), 'undefined');
  assert.equal(after.environment, { fresh: true });
});

test('owners: the working directory is reset for each evaluation', async () => {
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory' }), {});
  await run('process.chdir("/tmp")', { cwd: '/' });
  assert.is(valueOf(await run('process.cwd()', { cwd: '/usr' })), '/usr');
});

test('initializer: runs once per new environment, output included, before the program', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  runtime.registerEnvironmentInitializer('inspect("initializing"); var greet = (name: string) => `hi ${name}`;');
  const owner = {};
  const first = await runner(runtime, owner)('inspect("program"); greet("a")');
  assert.is(valueOf(first), 'hi a');
  assert.is(text(first), 'initializing\nprogram\n');
  const second = await runner(runtime, owner)('greet("b")');
  assert.is(valueOf(second), 'hi b');
  assert.is(text(second), '');
  await runtime.release(owner);
  assert.is(text(await runner(runtime, owner)('1')), 'initializing\n');
  // Owner-less runs get a new environment, so they initialize too.
  assert.is(valueOf(await runner(runtime)('greet("c")')), 'hi c');
  assert.throws(() => runtime.registerEnvironmentInitializer('1'), /before the first run/);
});

test('initializer: unregistering stops it for new environments and waits for the runs initializing with it', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const events: string[] = [];
  let reached!: () => void;
  const inGate = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const bindings = { gate: async () => {
    reached();
    await gate;
    events.push('initializer went on');
  } };
  const unregister = runtime.registerEnvironmentInitializer('await gate(); inspect("initialized"); var ready = true;');
  const owner = {};
  const first = runner(runtime, owner, bindings)('ready');
  await inGate;
  const unregistered = unregister().then(() => events.push('unregistered'));
  // Had unregistration not waited for the run initializing with it, it would have settled by now.
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(events, []);
  open();
  await unregistered;
  assert.equal(events, ['initializer went on', 'unregistered']);
  const result = await first;
  assert.is(valueOf(result), true);
  assert.is(text(result), 'initialized\n');
  // The environment it initialized keeps what it made; new ones start without it.
  assert.is(valueOf(await runner(runtime, owner, bindings)('ready')), true);
  const other = await runner(runtime, {}, bindings)('typeof ready');
  assert.is(valueOf(other), 'undefined');
  assert.is(text(other), '');
  assert.is(valueOf(await runner(runtime, undefined, bindings)('typeof ready')), 'undefined');
  await unregister();
  assert.throws(() => runtime.registerEnvironmentInitializer('1'), /before the first run/);
});

test('initializer: a replaced registration is not unregistered by the old one\'s function', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const unregisterOld = runtime.registerEnvironmentInitializer('var from = "old"');
  runtime.registerEnvironmentInitializer('var from = "new"');
  await unregisterOld();
  assert.is(valueOf(await runner(runtime, {})('from')), 'new');
});

test('initializer: a failure ends the environment before the program runs; other modes refuse it', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  runtime.registerEnvironmentInitializer('throw new Error("no database")');
  const result = failureOf(await runner(runtime, {})('inspect("never")'));
  assert.is(result.kind, 'exception');
  assert.match(result.message, /initializer failed: no database/);
  assert.throws(() => runtimeWith({ executionMode: 'vm-script', scriptPersistence: true }).registerEnvironmentInitializer('1'), /persistent-in-memory/);
});

test('callbacks from a completed evaluation can neither call bindings nor print', async () => {
  const calls: string[] = [];
  const bindings = { ping: async (from: string) => calls.push(from) };
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory' }), {}, bindings);
  // The late callback reports through a global: in the scoped REPL its own copy of a top-level
  // name is not the one a later call sees.
  await run('globalThis.lateCode = "none"; setTimeout(() => { inspect("late output"); ping("late").catch((e) => { globalThis.lateCode = e.code }) }, 200); 1');
  const second = await run('await new Promise((resolve) => setTimeout(resolve, 500)); await ping("now"); globalThis.lateCode');
  assert.is(valueOf(second), 'PTC_EVALUATION_ENDED');
  assert.not.match(text(second), /late output/);
  assert.equal(calls, ['now']);
});

test('idle: a process that dies between runs is reported at the next run and replaced', async () => {
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory' }), {});
  await run('var before = 1; setTimeout(() => process.exit(9), 100); 0');
  await sleep(600);
  const next = await run('typeof before');
  assert.is(valueOf(next), 'undefined');
  assert.is(next.environment?.fresh, true);
  assert.match(next.environment?.replaced ?? '', /exited with code 9/);
});

// Issue 33 §5: the host hears of an idle death when it happens, with the owner it concerns (the
// reference writes idle failures to the host logger); what ptc ends itself is not reported.
test('idle: a process that dies between runs is told to onDiagnostic at once, with its owner; ptc\'s own endings are not', async () => {
  const heard: Array<{ type: string; owner: object; message: string }> = [];
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory', onDiagnostic: (diagnostic) => heard.push(diagnostic) });
  const owner = {};
  const run = runner(runtime, owner);
  await run('setTimeout(() => process.exit(9), 100); 0');
  for (let waited = 0; heard.length === 0 && waited < 10_000; waited += 50) await sleep(50);
  assert.is(heard.length, 1);
  assert.is(heard[0]!.type, 'environment-lost');
  assert.is(heard[0]!.owner, owner);
  assert.match(heard[0]!.message, /exited with code 9 .*while idle/);
  // A released environment, a one-time run's carrier and a run that fails its environment are ptc's own doing.
  const other = {};
  await runner(runtime, other)('1');
  await runtime.release(other);
  await run('2', { oneTime: true });
  const killed = await run('process.exit(4)');
  assert.is(failureOf(killed).kind, 'worker-exit');
  await sleep(300);
  assert.is(heard.length, 1, JSON.stringify(heard));
  // A logger that throws changes nothing for the host.
  const throwing = runtimeWith({ executionMode: 'persistent-in-memory', onDiagnostic: () => { throw new Error('logger down'); } });
  const again = runner(throwing, {});
  await again('setTimeout(() => process.exit(3), 100); 0');
  await sleep(600);
  const next = await again('1');
  assert.match(next.environment?.replaced ?? '', /exited with code 3/);
  assert.throws(() => runtimeWith({ onDiagnostic: 'stderr' as unknown as () => void }), (error: Error) => error.message === "ptc config: onDiagnostic must be a function of a diagnostic, got 'stderr'");
});

test('idle: stdout written between runs is discarded, stderr is kept for diagnostics', async () => {
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory' }), {});
  await run('const { spawn } = await import("node:child_process"); spawn("sh", ["-c", "sleep 0.2; echo idle-out; echo idle-err >&2"], { stdio: "inherit" }); 0');
  await sleep(700);
  const quiet = await run('1');
  assert.is(text(quiet), '');
  const exit = failureOf(await run('process.exit(4)'));
  assert.is(exit.kind, 'worker-exit');
  assert.is(exit.exitCode, 4);
  assert.match(exit.stderrTail ?? '', /idle-err/);
  assert.not.match(exit.stderrTail ?? '', /idle-out/);
});

// ---------------------------------------------------------------- stopping retained work

test('timeout: a cooperative stop keeps the environment; catch and finally run; later output is dropped', async () => {
  const bindings = { hang: () => new Promise(() => {}) };
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory' }), {}, bindings);
  await run('var v = 1; var cleaned = false; var caught = "none"');
  const stopped = await run('v = 2; inspect("before"); try { await hang() } catch (e) { caught = e.code } finally { cleaned = true; inspect("after") }', { timeoutMs: 400 });
  const reason = failureOf(stopped);
  assert.is(reason.kind, 'timeout');
  assert.is(reason.state, 'preserved');
  assert.match(reason.message, /execution timed out during execution \(deadline 400 ms elapsed\)/);
  assert.is(text(stopped), 'before\n');
  assert.equal(valueOf(await run('[v, cleaned, caught]')), [2, true, 'PTC_REVOKED']);
});

test('abort: a cooperative stop keeps the environment', async () => {
  const bindings = { hang: () => new Promise(() => {}) };
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory' }), {}, bindings);
  await run('var kept = "yes"');
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const reason = failureOf(await run('await hang()', {}, { signal: controller.signal }));
  assert.is(reason.kind, 'abort');
  assert.is(reason.state, 'preserved');
  assert.is(valueOf(await run('kept')), 'yes');
});

// Synchronous loops, runs that a timer or an interval keeps waiting after the stop, and blocking
// calls: test/integration/interrupt.test.ts.

test('failures that end the environment report it cleared; exceptions keep earlier mutations', async () => {
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory', maxOutputBytes: 1000 }), {});
  await run('var a = 1');
  const thrown = failureOf(await run('a = 2; throw new Error("oops")'));
  assert.is(thrown.kind, 'exception');
  assert.is(thrown.state, undefined);
  assert.is(valueOf(await run('a')), 2);
  const overflow = failureOf(await run('inspect("x".repeat(2000))'));
  assert.is(overflow.kind, 'output-limit');
  assert.is(overflow.state, 'cleared');
  assert.is(valueOf(await run('typeof a')), 'undefined');
});

test.run();

// What an idle carrier has loaded: modules that only some programs or configurations need are
// loaded when they are needed, since each one stays in the RSS of every retained carrier. Counted
// with process.moduleLoadList from inside a retained carrier after its first run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTestRuntime, runProgram } from '../helpers/runtime.ts';

const LOADED = `process.moduleLoadList.filter((entry) => entry.startsWith('NativeModule ')).map((entry) => entry.slice(13))`;

/** The built-in modules a retained carrier has loaded after running `program` (default: nothing else). */
async function loadedModules(program = '0', config: Parameters<typeof createTestRuntime>[0] = {}): Promise<string[]> {
  const runtime = createTestRuntime({ executionMode: 'persistent-in-memory', timeoutMs: 20_000, ...config });
  try {
    const owner = {};
    const first = await runtime.run(runtime.resolve({ program, stateOwner: owner }));
    assert.is(first.status, 'ok', JSON.stringify(first));
    const listed = await runtime.run(runtime.resolve({ program: LOADED, stateOwner: owner }));
    assert.is(listed.status, 'ok', JSON.stringify(listed));
    return (listed as { value: string[] }).value;
  } finally {
    await runtime.dispose();
  }
}

// dist/bootstrap.mjs is one ES module: esbuild hoists every bundled module's imports of built-ins
// to its top, so a carrier started from it (node-script, and ssh on the far side) loads them all
// at start. (process.getBuiltinModule would defer them, but the bootstrap runs on Node 20.12,
// which lacks it.)
const bundledAsOneModule = process.env.PTC_TEST_LAUNCH === 'node-script' || process.env.PTC_TEST_LAUNCH === 'ssh';

// (Skipped there, not passed.)
(bundledAsOneModule ? test.skip : test)('a carrier without a network allowlist loads neither the forwarder nor TLS', async () => {
  const loaded = await loadedModules();
  for (const name of ['tls', 'internal/tls/wrap']) assert.not.ok(loaded.includes(name), `${name} is loaded: ${loaded.join(' ')}`);
});

// The interrupt watch's worker (carrier/run/interrupt.ts) starts with a retained carrier's first
// run, and node:worker_threads loads only then (test/integration/interrupt.test.ts shows the watch
// still works). Only the binary's carrier is CommonJS: a carrier that runs as ES modules (from
// source, dist/bootstrap.mjs, the package's) loads it at start anyway, as Node's ES module facade
// of node:util, which the carrier imports, reads every export of util, one of which loads it.
(process.env.PTC_TEST_LAUNCH === 'embedded' ? test : test.skip)('the binary\'s per-call carrier does not load node:worker_threads', async () => {
  const result = await runProgram(`return process.moduleLoadList.includes('NativeModule worker_threads')`);
  assert.equal(result.status === 'ok' && result.value, false, JSON.stringify(result));
});

test('a program that imports TLS itself gets it', async () => {
  const loaded = await loadedModules(`typeof (await import('node:tls')).connect`);
  assert.ok(loaded.includes('tls'), loaded.join(' '));
});

test('an idle retained carrier collects the garbage its runs left, and no program sees the collector', async () => {
  const runtime = createTestRuntime({ executionMode: 'persistent-in-memory', timeoutMs: 20_000 });
  try {
    const owner = {};
    const run = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner }));
    // Nothing else allocates in an idle carrier, so without the idle collection the target lives on.
    const first = await run(`globalThis.kept = new WeakRef({ payload: 'x'.repeat(1000) }); typeof kept.deref()`);
    assert.equal(first.status === 'ok' && first.value, 'object', JSON.stringify(first));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const later = await run(`[typeof kept.deref(), typeof gc, typeof globalThis.gc]`);
    assert.equal(later.status === 'ok' && later.value, ['undefined', 'undefined', 'undefined'], JSON.stringify(later));
  } finally {
    await runtime.dispose();
  }
});

test('a per-call program has no collector either', async () => {
  const result = await runProgram(`return [typeof gc, typeof globalThis.gc, (await import('node:vm')).runInNewContext('typeof gc')]`);
  assert.equal(result.status === 'ok' && result.value, ['undefined', 'undefined', 'undefined'], JSON.stringify(result));
});

test.run();

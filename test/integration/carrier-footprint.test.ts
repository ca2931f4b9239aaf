// What an idle carrier has loaded: modules that only some programs or configurations need are
// loaded when they are needed, since each one stays in the RSS of every retained carrier. Counted
// with process.moduleLoadList from inside a retained carrier after its first run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTestRuntime } from '../helpers/runtime.ts';

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
// to its top, so a node-script carrier loads them all at start.
const bundledAsOneModule = process.env.PTC_TEST_LAUNCH === 'node-script';

// (Skipped there, not passed.)
(bundledAsOneModule ? test.skip : test)('a carrier without a network allowlist loads neither the forwarder nor TLS', async () => {
  const loaded = await loadedModules();
  for (const name of ['tls', 'internal/tls/wrap']) assert.not.ok(loaded.includes(name), `${name} is loaded: ${loaded.join(' ')}`);
});

test('a program that imports TLS itself gets it', async () => {
  const loaded = await loadedModules(`typeof (await import('node:tls')).connect`);
  assert.ok(loaded.includes('tls'), loaded.join(' '));
});

test.run();

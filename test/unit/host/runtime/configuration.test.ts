// resolvePersistentExecution and the program format each configuration reports.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRuntime, resolvePersistentExecution, type RuntimeConfig } from '../../../../host/index.ts';

test('resolvePersistentExecution keeps Script and scoped REPL syntax and moves the rest to the scoped REPL', () => {
  const table: Array<[Parameters<typeof resolvePersistentExecution>[0], ReturnType<typeof resolvePersistentExecution>]> = [
    ['vm-script', { executionMode: 'vm-script', scriptPersistence: true, replScoped: false }],
    ['scoped-repl', { executionMode: 'persistent-in-memory', scriptPersistence: false, replScoped: true }],
    ['async-function', { executionMode: 'persistent-in-memory', scriptPersistence: false, replScoped: true }],
    ['repl', { executionMode: 'persistent-in-memory', scriptPersistence: false, replScoped: true }],
  ];
  for (const [format, expected] of table) {
    const settings = resolvePersistentExecution(format);
    assert.equal(settings, expected, format);
    // The three settings together always make a valid configuration that retains state.
    const runtime = createRuntime({ ...settings, prestartCarrier: false });
    assert.ok(runtime.retainsState, format);
  }
  assert.throws(() => resolvePersistentExecution('python' as never), /unknown program format "python"/);
});

test('each configuration reports its program format, retention and guidance', () => {
  const table: Array<[RuntimeConfig, string, boolean, RegExp]> = [
    [{}, 'async-function', false, /body of an async function/],
    [{ executionMode: 'vm-script' }, 'vm-script', false, /final expression is the result/],
    [{ executionMode: 'vm-script', scriptPersistence: true }, 'vm-script', true, /persist between your programs/],
    [{ executionMode: 'persistent-in-memory' }, 'scoped-repl', true, /redeclare any earlier name/],
    [{ executionMode: 'persistent-in-memory', replScoped: false }, 'repl', true, /Redeclaring an existing let/],
  ];
  for (const [config, format, retains, guidance] of table) {
    const runtime = createRuntime({ ...config, prestartCarrier: false });
    assert.is(runtime.programFormat, format);
    assert.is(runtime.retainsState, retains);
    assert.match(runtime.executionInstructions, guidance);
    assert.match(runtime.executionInstructions, /Use inspect\(\.\.\.values\) to display output\. Do not use console\./);
  }
});

test.run();

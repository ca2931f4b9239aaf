// What the library gives an interactive front end (`ptc repl`) through real carriers:
// runtime.complete() lists a retained environment's names without running program code, and
// display.underscore keeps `_` and `_error` as Node's interactive REPL does, in every retained format.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Runtime, RuntimeConfig } from '../../host/index.ts';
import { runtimesPerTest } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

const runtimeWith = runtimesPerTest(test);

const FORMATS: [string, RuntimeConfig][] = [
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }],
  ['vm-script retained', { executionMode: 'vm-script', scriptPersistence: true }],
];

function runner(runtime: Runtime, owner: object, display?: object) {
  return (program: string, options = {}) => runtime.run(runtime.resolve({ program, stateOwner: owner, ...(display ? { display } : {}) }), options);
}

const SETUP = [
  'var foo = { alpha: 1, beta: { gamma: 2 } }',
  'var trap = new Proxy({}, { ownKeys() { globalThis.trapped = true; return [] }, getPrototypeOf() { globalThis.trapped = true; return null } })',
  'var held = { get danger() { globalThis.got = true; return { x: 1 } } }',
  '1',
].join('\n');

for (const [format, config] of FORMATS) {
  test(`${format}: complete() lists globals, bindings and properties of retained objects, and runs no program code`, async () => {
    const runtime = runtimeWith(config);
    const owner = {};
    const run = runner(runtime, owner);
    assert.equal(await runtime.complete(owner, []), [], 'no environment yet');
    await run(SETUP);
    const top = await runtime.complete(owner, []);
    for (const name of ['foo', 'trap', 'held', 'Array', 'inspect']) assert.ok(top.includes(name), `${name} in ${top.length} names`);
    assert.equal(top, [...top].sort());
    const properties = await runtime.complete(owner, ['foo']);
    assert.ok(properties.includes('alpha') && properties.includes('beta') && properties.includes('hasOwnProperty'));
    assert.ok((await runtime.complete(owner, ['foo', 'beta'])).includes('gamma'));
    // A Proxy is not asked, a getter is not called: nothing completes through them.
    assert.equal(await runtime.complete(owner, ['trap']), []);
    assert.equal(await runtime.complete(owner, ['held', 'danger']), []);
    assert.equal(await runtime.complete(owner, ['nothing']), []);
    assert.equal(valueOf(await run('[typeof trapped, typeof got]')), ['undefined', 'undefined']);
  });

  test(`${format}: display.underscore keeps _ and _error, and assigning _ turns it off with Node's notice`, async () => {
    const runtime = runtimeWith(config);
    const run = runner(runtime, {}, { colors: false, underscore: true });
    const shown = async (program: string) => {
      const result = await run(program);
      return result.status === 'ok' ? [result.output.map((entry) => (entry.type === 'text' ? entry.text : '')).join(''), result.display] : ['failed', result.failure.message];
    };
    assert.equal(await shown('40 + 2'), ['', '42']);
    assert.equal(await shown('_ + 1'), ['', '43']);
    assert.equal(await shown('throw new RangeError("too far")'), ['failed', 'too far']);
    assert.equal(await shown('_error.message'), ['', "'too far'"]);
    assert.equal(await shown('_ = 5'), ['Expression assignment to _ now disabled.\n', '5']);
    assert.equal(await shown('10'), ['', '10']);
    assert.equal(await shown('_'), ['', '5']);
  });
}

test('complete() answers nothing while the owner has a run in progress', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const owner = {};
  const run = runner(runtime, owner);
  await run('var foo = { alpha: 1 }');
  const controller = new AbortController();
  // A binding that never answers: the abort rejects it, so the run ends and the environment stays.
  const bindings = { hang: () => new Promise(() => {}) };
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const busy = runtime.run(runtime.resolve({ program: 'inspect("busy"); await hang()', bindings, stateOwner: owner }), { signal: controller.signal, onOutput: () => started() });
  await running;
  assert.equal(await runtime.complete(owner, ['foo']), []);
  controller.abort(new Error('done'));
  await busy;
  assert.ok((await runtime.complete(owner, ['foo'])).includes('alpha'));
});

test('complete() refuses what is not an owner or a path', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  const refusal = (call: () => Promise<unknown>) => call().then(() => 'resolved', (error: Error) => error.message);
  assert.is(await refusal(() => runtime.complete('owner' as unknown as object, [])), "ptc complete(): owner must be an object, got 'owner'");
  assert.is(await refusal(() => runtime.complete({}, 'foo' as unknown as string[])), "ptc complete(): path must be an array of names, got 'foo'");
});

test.run();

// The `display` request option: the completion comes back as Node's REPL shows it (util.inspect
// text) for an interactive front end, while runs without it keep the lossless JSON contract.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTestRuntime, withoutWarm } from '../helpers/runtime.ts';

test('with display, a retained run returns its completion as REPL text, whatever its type', async () => {
  const runtime = createTestRuntime({ executionMode: 'persistent-in-memory', timeoutMs: 20_000 });
  const owner = {};
  // null: a run without the option.
  const show = async (program: string, display: { colors?: boolean } | null = {}) =>
    runtime.run(runtime.resolve({ program, stateOwner: owner, ...(display ? { display } : {}) }));
  try {
    const map = await show('const m = new Map([[1, { a: [1, 2] }]]);\ninspect("made");\nm');
    assert.equal(withoutWarm(map), { status: 'ok', display: 'Map(1) { 1 => { a: [ 1, 2 ] } }', output: [{ type: 'text', text: 'made\n', stream: 'stdout' }], sandbox: map.sandbox, environment: { fresh: true } });
    const cases: [string, string][] = [
      ['new Date(0)', '1970-01-01T00:00:00.000Z'],
      ['Promise.resolve(5)', 'Promise { 5 }'],
      ['new Promise(() => {})', 'Promise { <pending> }'],
      ['Promise.resolve({ a: "x".repeat(80) })', `Promise {\n  {\n    a: '${'x'.repeat(80)}'\n  }\n}`],
      ['const failed = Promise.reject(new RangeError("no"));\nfailed.catch(() => {});\nfailed', 'Promise {\n  <rejected> RangeError: no'],
      ["'text'", "'text'"],
      ['12345678901234567890n', '12345678901234567890n'],
      ['-0', '-0'],
    ];
    for (const [program, expected] of cases) {
      const result = await show(program);
      const display = result.status === 'ok' ? result.display ?? '' : JSON.stringify(result);
      // A rejection's stack follows its first lines.
      assert.is(expected.endsWith(': no') ? display.split('\n').slice(0, 2).join('\n') : display, expected, program);
      assert.not.ok('value' in result, program);
    }
    assert.is((await show("'red'", { colors: true }) as { display?: string }).display, "\u001b[32m'red'\u001b[39m");
    assert.not.ok('display' in (await show('undefined')), 'undefined shows nothing, as in a REPL');
    // A custom inspect method that throws is the program's exception.
    const thrown = await show('({ [Symbol.for("nodejs.util.inspect.custom")]() { throw new RangeError("cannot show") } })');
    assert.is(thrown.status, 'failed');
    assert.equal(thrown.status === 'failed' && [thrown.failure.kind, thrown.failure.name, thrown.failure.message], ['exception', 'RangeError', 'cannot show']);
    // Without display the lossless contract stands.
    const lossy = await show('m', null);
    assert.equal(lossy.status === 'failed' && [lossy.failure.kind, lossy.failure.path], ['invalid-output', 'value']);
  } finally {
    await runtime.dispose();
  }
});

test('display text shares the output budget', async () => {
  const runtime = createTestRuntime({ executionMode: 'persistent-in-memory', timeoutMs: 20_000, maxOutputBytes: 64 });
  try {
    const result = await runtime.run(runtime.resolve({ program: "'x'.repeat(100)", stateOwner: {}, display: {} }));
    assert.is(result.status, 'failed');
    assert.is(result.status === 'failed' && result.failure.kind, 'output-limit');
  } finally {
    await runtime.dispose();
  }
});

test('a display option that is not { colors?: boolean, underscore?: boolean } is a TypeError naming it', async () => {
  const runtime = createTestRuntime();
  try {
    for (const bad of [true, { colors: 'yes' }, { colour: true }, { underscore: 1 }]) {
      assert.throws(() => runtime.resolve({ program: '1', display: bad as never }), (error: Error) =>
        error instanceof TypeError && error.message.startsWith('ptc request: display must be an object with optional booleans colors and underscore, got '));
    }
  } finally {
    await runtime.dispose();
  }
});

test.run();

// The lossless rule at its edges, through real carriers: values that a JSON round trip would change
// (extra array properties, Array subclasses, forged prototypes, non-enumerable and accessor
// properties, symbol keys, holes, proxies) are invalid-output as completions and a TypeError in the
// program as binding arguments, in every evaluator; values nested 10,000 deep cross both ways.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, RuntimeConfig, SandboxReport } from '../../host/index.ts';
import { createTestRuntime, reportLocation, withoutWarm, reportLimits } from '../helpers/runtime.ts';

const SANDBOX = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } as SandboxReport;

/** [what, an expression (no declarations, so it runs in every format), path below the root, problem]. */
const LOSSY: Array<[string, string, string, string]> = [
  ['an array with an extra property', "(() => { const a = [1, 2]; a.note = 'x'; return { a }; })()", '.a.note', 'is a property of an array besides its elements, which JSON drops'],
  ['an Array subclass', '(() => { class List extends Array {} return { list: List.of(1) }; })()', '.list', 'is a List, an array with another prototype than Array.prototype, which JSON does not keep'],
  ['an inherited member', '({ o: Object.create({ inherited: 1 }) })', '.o', 'is an object whose prototype is not Object.prototype, which is not plain JSON data'],
  ['a spoofed null prototype', '({ o: Object.setPrototypeOf({ a: 1 }, Object.create(null)) })', '.o', 'is an object whose prototype is not Object.prototype, which is not plain JSON data'],
  ['an array posing as an array prototype', '[Object.setPrototypeOf([1], Object.setPrototypeOf([], Object.prototype))]', '[0]', 'is an object whose prototype is not Object.prototype, an array with another prototype than Array.prototype, which JSON does not keep'],
  ['a Date given Object.prototype', '({ d: Object.setPrototypeOf(new Date(0), Object.prototype) })', '.d', 'is an object with internal state (a Date, Map, Set, buffer, error or boxed primitive under Object.prototype), which JSON drops'],
  ['a non-enumerable property', "({ o: Object.defineProperty({ a: 1 }, 'hidden', { value: 2 }) })", '.o.hidden', 'is a non-enumerable property, which JSON drops'],
  ['a getter', '({ o: { get now() { return 1; } } })', '.o.now', 'is an accessor property (a getter or setter), which is not plain data'],
  ['an element getter', '[Object.defineProperty([0], 0, { get: () => 1, enumerable: true })]', '[0][0]', 'is an accessor property (a getter or setter), which is not plain data'],
  ['a symbol key', "({ o: { [Symbol('tag')]: 1 } })", '.o', 'has a symbol key tag, which JSON drops'],
  ['a symbol key without a description', '({ o: { [Symbol()]: 1 } })', '.o', 'has a symbol key Symbol(), which JSON drops'],
  ['a symbol key on an array', "[Object.assign([1], { [Symbol('tag')]: 1 })]", '[0]', 'is an array with a symbol key tag, which JSON drops'],
  ['a hole', '({ list: [1, , 3] })', '.list[1]', 'is a hole in a sparse array'],
  ['a Proxy', '({ p: new Proxy({}, {}) })', '.p', 'is a Proxy, which is not plain data'],
];

const FORMATS: Array<[string, RuntimeConfig]> = [
  ['per-call', {}],
  ['vm-script', { executionMode: 'vm-script', scriptPersistence: true }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ['Node REPL', { executionMode: 'persistent-in-memory', replScoped: false }],
];

/** A program whose result is `expression`: returned in per-call, the final expression otherwise. */
function program(config: RuntimeConfig, expression: string): string {
  return config.executionMode === undefined ? `return ${expression};` : `${expression}\n`;
}

/** The result without the environment field that retained runs add. */
function plain(result: RunResult): Record<string, unknown> {
  const { environment: _environment, ...rest } = result as RunResult & { environment?: unknown };
  return rest;
}

for (const [format, config] of FORMATS) {
  test(`${format}: lossy completions are invalid-output naming the path`, async () => {
    const runtime = createTestRuntime({ ...config, timeoutMs: 20_000 });
    const owner = {};
    try {
      for (const [what, expression, below, problem] of LOSSY) {
        const result = await runtime.run(runtime.resolve({ program: program(config, expression), stateOwner: owner }));
        const path = `value${below}`;
        assert.equal(withoutWarm(plain(result)), {
          status: 'failed',
          failure: { kind: 'invalid-output', message: `the completion value is not lossless JSON: ${path} ${problem}`, path },
          output: [],
          sandbox: SANDBOX,
        }, what);
      }
      // The realm's own plain data still passes, after every refusal.
      const fine = await runtime.run(runtime.resolve({ program: program(config, '({ a: [1, { b: null }], n: 12345678901234567890n })'), stateOwner: owner }));
      assert.equal(withoutWarm(plain(fine)), { status: 'ok', value: { a: [1, { b: null }], n: 12345678901234567890n }, output: [], sandbox: SANDBOX });
    } finally {
      await runtime.dispose();
    }
  });

  test(`${format}: lossy binding arguments throw a TypeError in the program, naming the path; the host is not called`, async () => {
    let calls = 0;
    const runtime = createTestRuntime({ ...config, timeoutMs: 20_000 });
    const owner = {};
    const bindings = { echo: async (value: unknown) => (calls++, value) };
    try {
      for (const [what, expression, below, problem] of LOSSY) {
        const caught = `await echo(${expression}).then(() => 'sent', (e) => [e.name, e.message])`;
        const result = await runtime.run(runtime.resolve({ program: program(config, caught), bindings, stateOwner: owner }));
        assert.equal(withoutWarm(plain(result)), { status: 'ok', value: ['TypeError', `echo: arguments[0]${below} ${problem}`], output: [], sandbox: SANDBOX }, what);
      }
      assert.is(calls, 0);
    } finally {
      await runtime.dispose();
    }
  });
}

/** Depth of a value nested through `[x]` and `{ k: x }`, counted without recursion. */
function depthOf(value: unknown): number {
  let depth = 0;
  for (let at = value; typeof at === 'object' && at !== null; depth++) at = Array.isArray(at) ? at[0] : (at as { k: unknown }).k;
  return depth;
}

// No bigint inside: decoding one that deep is the host decoder's concern, tested with it.
const NEST = 'let v = "leaf"; for (let i = 0; i < DEPTH; i++) v = i % 2 ? [v] : { k: v };';
const DEPTH = 10_000;

test('a completion nested 10,000 deep arrives whole', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const result = await runtime.run(runtime.resolve({ program: `${NEST.replace('DEPTH', String(DEPTH))}\nreturn v;` }));
    assert.is(result.status, 'ok', result.status === 'failed' ? result.failure.message : '');
    if (result.status !== 'ok') return;
    assert.is(depthOf(result.value), DEPTH);
    let innermost: unknown = result.value;
    while (typeof innermost === 'object' && innermost !== null) innermost = Array.isArray(innermost) ? innermost[0] : (innermost as { k: unknown }).k;
    assert.is(innermost, 'leaf');
  } finally {
    await runtime.dispose();
  }
});

test('binding arguments and results nested 10,000 deep cross both ways', async () => {
  let received = 0;
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const bindings = { echo: async (value: unknown) => ((received = depthOf(value)), value) };
    const count = 'let d = 0; for (let x = back; typeof x === "object" && x !== null; d++) x = Array.isArray(x) ? x[0] : x.k;';
    const source = `${NEST.replace('DEPTH', String(DEPTH))}\nconst back = await echo(v);\n${count}\nreturn d;`;
    const result = await runtime.run(runtime.resolve({ program: source, bindings }));
    assert.equal(withoutWarm(result), { status: 'ok', value: DEPTH, output: [], sandbox: SANDBOX });
    assert.is(received, DEPTH);
  } finally {
    await runtime.dispose();
  }
});

test.run();

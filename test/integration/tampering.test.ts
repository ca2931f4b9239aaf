// Nothing a program does to the intrinsics changes the shape of its result. Each row tampers with
// something the runtime could rely on (a prototype method, a global, a stream, a timer) on the
// program's first line, then calls a binding, prints, loads and shows an Image and returns; or
// throws. In every evaluator the result must be exactly the untampered program's, and a later run
// in the same runtime must still succeed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolve as resolvePath } from 'node:path';
import type { RunResult, RuntimeConfig } from '../../host/index.ts';
import { createTestRuntime, reportLocation, withoutWarm, reportLimits } from '../helpers/runtime.ts';

const PNG = resolvePath(new URL('../fixtures/images/rgb-300x7.png', import.meta.url).pathname);
const fail = (what: string) => `() => { throw new Error('tampered: ${what}'); }`;
/** Replaces each named member of `target` with a function that throws. */
const breakAll = (target: string, names: string[]) =>
  names.map((name) => `${target}[${name.startsWith('Symbol.') ? name : `'${name}'`}] = ${fail(`${target}.${name}`)};`).join(' ');
const junkGlobals = (names: string[]) => names.map((name) => `globalThis.${name} = 'junk';`).join(' ');

/** [name, one line of source that tampers]. */
export const TAMPERINGS: Array<[string, string]> = [
  ['Array.prototype[Symbol.iterator]', `Array.prototype[Symbol.iterator] = function* () { yield 'junk'; };`],
  ['Array.prototype.constructor', `Array.prototype.constructor = ${fail('Array.prototype.constructor')};`],
  ['Symbol.asyncIterator and Symbol.iterator on Object.prototype', `Object.prototype[Symbol.asyncIterator] = ${fail('Symbol.asyncIterator')}; Object.prototype[Symbol.iterator] = ${fail('Object.prototype[Symbol.iterator]')};`],
  ['Array.prototype.join', `Array.prototype.join = () => 'junk';`],
  ['Array.prototype.push', breakAll('Array.prototype', ['push'])],
  // Not pop: Node's own async_hooks call execution_async_resources.pop(), so replacing it breaks Node itself.
  ['Array.prototype methods', breakAll('Array.prototype', ['map', 'filter', 'forEach', 'slice', 'splice', 'concat', 'includes', 'indexOf', 'some', 'every', 'reduce', 'find', 'shift', 'unshift', 'reverse', 'sort', 'fill', 'at', 'keys', 'values', 'entries'])],
  // Setters for the fields of the carrier's messages, and for the fields of property descriptors,
  // which a descriptor written as an ordinary object literal would inherit.
  ['Object.prototype setters', `for (const key of ['value', 'get', 'set', 'writable', 'enumerable', 'configurable', 'type', 'text', 'status', 'path', 'message', 'name', 'stack', 'location', 'i', 't', 'm', 'a', 'r', 'e', 'o', 'images', 'attachmentId', 'binding', 'code', 'denied']) Object.defineProperty(Object.prototype, key, { __proto__: null, set: ${fail('setter')}, configurable: true });`],
  // Index setters, which an assignment past the end of any array meets.
  ['Object.prototype index setters', `for (const key of ['0', '1']) Object.defineProperty(Object.prototype, key, { __proto__: null, set: ${fail('index setter')}, configurable: true });`],
  ['Object.prototype.__proto__ setter', `Object.defineProperty(Object.prototype, '__proto__', { __proto__: null, set: ${fail('__proto__ setter')}, get: ${fail('__proto__ getter')}, configurable: true });`],
  ['Object.prototype[Symbol.toStringTag]', `Object.defineProperty(Object.prototype, Symbol.toStringTag, { get: ${fail('toStringTag')}, configurable: true });`],
  ['Object.prototype.toJSON', `Object.prototype.toJSON = () => 'junk';`],
  // The program's own values (marked `mine`) stay ordinary: an async function that returns a
  // thenable adopts it, as JavaScript says. Every other object becomes a thenable that lies.
  ['Object.prototype.then', `Object.defineProperty(Object.prototype, 'then', { __proto__: null, configurable: true, get() { return Object.hasOwn(this, 'mine') ? undefined : (resolve) => resolve('junk'); } });`],
  ['Object.prototype methods', breakAll('Object.prototype', ['hasOwnProperty', 'toString', 'valueOf', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString'])],
  ['Function.prototype.apply, call and bind', breakAll('Function.prototype', ['apply', 'call', 'bind', 'toString'])],
  ['Set.prototype methods', breakAll('Set.prototype', ['add', 'has', 'delete', 'clear', 'forEach', 'values', 'keys', 'entries', 'Symbol.iterator'])],
  ['Map.prototype methods', breakAll('Map.prototype', ['get', 'set', 'has', 'delete', 'clear', 'forEach', 'values', 'keys', 'entries', 'Symbol.iterator'])],
  ['WeakMap and WeakSet prototype methods', `${breakAll('WeakMap.prototype', ['get', 'set', 'has', 'delete'])} ${breakAll('WeakSet.prototype', ['add', 'has', 'delete'])}`],
  ['String.prototype methods', breakAll('String.prototype', ['split', 'replace', 'replaceAll', 'slice', 'substring', 'includes', 'startsWith', 'endsWith', 'indexOf', 'lastIndexOf', 'trim', 'trimEnd', 'padStart', 'repeat', 'concat', 'charCodeAt', 'toString', 'match', 'Symbol.iterator'])],
  ['String.prototype symbol hooks', breakAll('String.prototype', ['Symbol.split', 'Symbol.replace', 'Symbol.match', 'Symbol.search'])],
  ['RegExp.prototype methods', breakAll('RegExp.prototype', ['exec', 'test', 'Symbol.split', 'Symbol.replace', 'Symbol.match'])],
  ['Promise.prototype methods', `Promise.prototype.then = function () { return 'junk'; }; ${breakAll('Promise.prototype', ['catch', 'finally'])} ${breakAll('Promise', ['resolve', 'reject', 'all', 'race', 'withResolvers'])}`],
  ['Symbol.hasInstance', ['Error', 'TypeError', 'Array', 'Object', 'Promise', 'Function'].map((name) => `Object.defineProperty(${name}, Symbol.hasInstance, { value: ${fail(`${name}[Symbol.hasInstance]`)}, configurable: true });`).join(' ')],
  ['Error.prepareStackTrace', `Error.prepareStackTrace = ${fail('prepareStackTrace')};`],
  ['Error.captureStackTrace', `Error.captureStackTrace = ${fail('captureStackTrace')};`],
  ['Reflect.*', `for (const key of Reflect.ownKeys(Reflect)) if (typeof Reflect[key] === 'function') Reflect[key] = ${fail('Reflect')};`],
  ['Object.defineProperty and friends', breakAll('Object', ['defineProperty', 'defineProperties', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'setPrototypeOf', 'create', 'freeze', 'keys', 'entries', 'assign', 'hasOwn', 'getOwnPropertyNames'])],
  ['JSON.*', breakAll('JSON', ['stringify', 'parse'])],
  ['process.stdout.write', `process.stdout.write = ${fail('stdout.write')}; process.stderr.write = ${fail('stderr.write')};`],
  ['queueMicrotask, setImmediate and setTimeout', `globalThis.queueMicrotask = ${fail('queueMicrotask')}; globalThis.setImmediate = ${fail('setImmediate')}; globalThis.setTimeout = ${fail('setTimeout')};`],
  ['Buffer', `globalThis.Buffer = 'junk';`],
  ['globalThis.Promise', `globalThis.Promise = 'junk';`],
  ['the global constructors', junkGlobals(['Object', 'Array', 'Function', 'String', 'Number', 'Symbol', 'Error', 'TypeError', 'Map', 'Set', 'WeakMap', 'WeakSet', 'JSON', 'Reflect', 'Proxy', 'RegExp', 'Math', 'BigInt'])],
];

const BODY = [
  "const v = await echo({ n: 5, list: [1, 'x'], mine: true });",
  "inspect('v', 42, 12345678901234567890n);",
  `const img = await Image.fromFile(${JSON.stringify(PNG)});`,
  'inspect(img);',
];
const RESULT = '{ v, big: 12345678901234567890n, mine: true }';
const THROW = "throw new RangeError('boom');";

const FORMATS: Array<[string, RuntimeConfig]> = [
  ['per-call', {}],
  ['vm-script', { executionMode: 'vm-script' }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ['Node REPL', { executionMode: 'persistent-in-memory', replScoped: false }],
];

function programs(config: RuntimeConfig, firstLine: string): { ordinary: string; throwing: string } {
  const last = config.executionMode === undefined ? `return ${RESULT};` : `(${RESULT})`;
  return { ordinary: [firstLine, ...BODY, last].join('\n'), throwing: [firstLine, THROW].join('\n') };
}

/** Attachment ids are issued per run; everything else must match exactly. */
function normalized(result: RunResult): unknown {
  return { ...withoutWarm(result), output: result.output.map((entry) => (entry.type === 'image' ? { ...entry, attachmentId: '<id>' } : entry)) };
}

const bindings = { echo: async (value: unknown) => value };

/** Rows that still fail, and the code that fails them. */
const PENDING: Record<string, string> = {
  // Node's own: processTicksAndRejections calls pushAsyncContext for every nextTick, which assigns
  // execution_async_resources[n] past the array's end; no carrier code runs in between.
  'per-call: Object.prototype index setters': "Node's pushAsyncContext assigns past the end of an internal array",
  // Node's REPL awaits the program realm's promise with a main-realm await, which looks up its then.
  'Node REPL: Promise.prototype methods': "node:repl awaits the program's promise through the program realm's then",
  'Node REPL: Object.prototype.then': "node:repl boxes a top-level-await completion in a program-realm object, which that then adopts",
  // The node-script launch runs the bootstrap on the machine's Node 20, whose native callback entry
  // (callbackTrampoline in internal/async_hooks) calls cb.apply; nothing in the carrier can avoid it.
  // The ssh launch runs the same Node 20 on the far side of the loopback sshd.
  ...(process.env.PTC_TEST_LAUNCH === 'node-script' || process.env.PTC_TEST_LAUNCH === 'ssh'
    ? {
        'per-call: Function.prototype.apply, call and bind': "Node 20's callbackTrampoline calls cb.apply",
        // Hangs on Node 20 before the control channel's rewrite too (89c10ae); the cause is not yet found.
        'per-call: String.prototype symbol hooks': 'hangs on Node 20 (all four hooks replaced together; Symbol.split alone passes)',
      }
    : {}),
};

const runtimes: Array<{ dispose(): Promise<void> }> = [];

for (const [format, config] of FORMATS) {
  const runtime = createTestRuntime({ ...config, timeoutMs: 10_000 });
  runtimes.push(runtime);
  const run = async (program: string) => normalized(await runtime.run(runtime.resolve({ program, bindings })));
  let baseline: Promise<{ ordinary: unknown; throwing: unknown }> | undefined;
  const untampered = programs(config, '// untampered');
  const expected = () => (baseline ??= (async () => ({ ordinary: await run(untampered.ordinary), throwing: await run(untampered.throwing) }))());

  test(`${format}: the untampered program succeeds and its throw is an exception`, async () => {
    const { ordinary, throwing } = await expected();
    assert.is((ordinary as RunResult).status, 'ok');
    assert.is((throwing as RunResult).status, 'failed');
    assert.is((throwing as { failure: { kind: string } }).failure.kind, 'exception');
  });

  for (const [name, tamper] of TAMPERINGS) {
    const pending = PENDING[`${format}: ${name}`];
    (pending === undefined ? test : test.skip)(`${format}: ${name}${pending === undefined ? '' : ` (pending: ${pending})`}`, async () => {
      const { ordinary, throwing } = await expected();
      const tampered = programs(config, tamper);
      assert.equal(await run(tampered.ordinary), ordinary, 'binding call, inspect, Image and return');
      assert.equal(await run(tampered.throwing), throwing, 'throw');
      assert.equal(await run(untampered.ordinary), ordinary, 'a later run');
    });
  }
}

// The retained formats run programs in a realm of their own, but every object the carrier lends
// them leads back to its realm: `inspect`'s constructor is the carrier's Function, which compiles
// code there. The same tamperings applied to the carrier's realm from inside a retained
// environment must leave that run and the owner's next run intact.
const RETAINED: Array<[string, RuntimeConfig]> = [
  ['vm-script', { executionMode: 'vm-script', scriptPersistence: true }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ['Node REPL', { executionMode: 'persistent-in-memory', replScoped: false }],
];
const LATER = "inspect('later', 1);\n(await echo({ later: true, mine: true }))";

/**
 * The tampered run itself keeps its shape in these rows; the owner's next run does not, because
 * node:repl compiles it (its top-level-await processing) with the carrier realm's built-ins as the
 * program left them, in the same call that runs it. vm-script and the scoped REPL compile inside
 * withPristineBuiltins (intrinsics.ts) instead.
 */
const COMPILE = 'node:repl compiles the next run with the tampered built-ins';
const COMPILE_PENDING: Record<string, string> = {};
for (const [format, names] of [
  ['Node REPL', [
    'Array.prototype.push', 'Function.prototype.apply, call and bind', 'Set.prototype methods', 'String.prototype methods', 'String.prototype symbol hooks',
    'Symbol.hasInstance', 'Object.prototype setters', 'RegExp.prototype methods', 'Object.defineProperty and friends', 'globalThis.Promise', 'the global constructors',
  ]],
] as const) {
  for (const name of names) COMPILE_PENDING[`${format}: ${name}`] = COMPILE;
}
// The tampered run itself hangs or changes shape in these: the retained evaluators' own paths
// (not the control channel, which the per-call rows prove) still meet the carrier realm's then.
COMPILE_PENDING['vm-script: Promise.prototype methods'] = "the tampered run hangs in the vm-script evaluator's path (the carrier realm's then)";
COMPILE_PENDING['scoped REPL: Promise.prototype methods'] = "the tampered run hangs in the scoped REPL evaluator's path (the carrier realm's then)";
COMPILE_PENDING['Node REPL: Promise.prototype methods'] = "node:repl awaits the program's promise through the carrier realm's then";
COMPILE_PENDING['Node REPL: Object.prototype.then'] = "node:repl boxes a top-level-await completion in an object, which that then adopts";

for (const [format, config] of RETAINED) {
  const runtime = createTestRuntime({ ...config, timeoutMs: 10_000 });
  runtimes.push(runtime);
  const run = async (program: string, stateOwner: object) => normalized(await runtime.run(runtime.resolve({ program, bindings, stateOwner })));
  let baseline: Promise<{ ordinary: unknown; later: unknown }> | undefined;
  const expected = () => (baseline ??= (async () => {
    const owner = {};
    return { ordinary: await run(programs(config, '// untampered').ordinary, owner), later: await run(LATER, owner) };
  })());

  for (const [name, tamper] of TAMPERINGS) {
    const pending = PENDING[`per-call: ${name}`] ?? COMPILE_PENDING[`${format}: ${name}`];
    const title = `${format}, the carrier's realm reached from the program: ${name}`;
    (pending === undefined ? test : test.skip)(`${title}${pending === undefined ? '' : ` (pending: ${pending})`}`, async () => {
      const { ordinary, later } = await expected();
      const owner = {};
      const inCarrierRealm = `Object.getPrototypeOf(inspect).constructor(${JSON.stringify(tamper)})();`;
      assert.equal(await run(programs(config, inCarrierRealm).ordinary, owner), ordinary, 'binding call, inspect, Image and return');
      assert.equal(await run(LATER, owner), later, "the owner's next run");
    });
  }
}

test('per-call: a program that replaces Promise.prototype.constructor and then still completes', async () => {
  // Awaiting the program's own promise would look up its constructor and then its `then`; a program
  // that awaits nothing itself must still complete, whatever it did to them.
  const [runtime] = runtimes as Array<ReturnType<typeof createTestRuntime>>;
  const program = "Object.defineProperty(Promise.prototype, 'constructor', { value: function Forged() {} }); Promise.prototype.then = () => 'junk';\ninspect('printed');\nreturn { done: true };";
  const result = await runtime!.run(runtime!.resolve({ program }));
  assert.equal(withoutWarm(result), {
    status: 'ok',
    value: { done: true },
    output: [{ type: 'text', text: 'printed\n', stream: 'stdout' }],
    sandbox: { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() },
  });
});

test.after(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()));
});

test.run();
